"""The offline extractor: a deterministic digest, durable user statements only, no-op otherwise."""

from __future__ import annotations

import json

from memtui.phase1.offline import OFFLINE_LABEL, build_offline_output, durable_statements


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(name: str, args: dict, call_id: str) -> dict:
    return {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": call_id}


def output(call_id: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


PATCH = (
    "*** Begin Patch\n*** Update File: src/checkout.ts\n@@\n-a\n+b\n*** Add File: tests/tz.test.ts\n+x\n*** End Patch"
)

ITEMS = [
    user("<environment_context>\n  <cwd>/home/ana/src/shop-api</cwd>\n</environment_context>"),
    user("The checkout tests fail on CI; find out why. Don't edit yet."),
    call("exec_command", {"cmd": "pnpm test checkout", "workdir": "/home/ana/src/shop-api"}, "c1"),
    output("c1", "FAIL src/checkout.test.ts\nProcess exited with code 1"),
    call("exec_command", {"cmd": "git status"}, "c2"),
    output("c2", "On branch main\nProcess exited with code 0"),
    user("No, use pnpm vitest directly. Always run tests with TZ=UTC in this repo. Remember that CI runs in UTC."),
    {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH, "call_id": "c3"},
    {"type": "custom_tool_call_output", "call_id": "c3", "output": "Success."},
    call("read_file", {"path": "package.json"}, "c4"),
    output("c4", "{}"),
    assistant("The failure is timezone-dependent: CI runs in UTC and the assertion used local time."),
]


def test_summary_reports_request_files_commands_failures_and_answer():
    out = build_offline_output(ITEMS, "/home/ana/src/shop-api")
    s = out.rollout_summary
    assert s.startswith("# The checkout tests fail on CI; find out why.\n")
    assert OFFLINE_LABEL in s
    assert "Rollout context: cwd /home/ana/src/shop-api" in s
    assert "- The checkout tests fail on CI; find out why." in s
    for f in ("src/checkout.ts", "tests/tz.test.ts", "package.json"):
        assert f"- `{f}`" in s
    assert "- `pnpm test checkout` — failed (exit 1)" in s
    assert "- `git status` — ok" in s
    assert "## Final answer\nThe failure is timezone-dependent" in s
    assert "environment_context" not in s
    assert out.rollout_slug == "the-checkout-tests-fail-on-ci-find-out-why"


def test_raw_memory_holds_only_explicit_durable_statements():
    raw = build_offline_output(ITEMS, "/home/ana/src/shop-api").raw_memory
    front, body = raw.split("---\n")[1], raw.split("---\n")[2]
    assert "cwd: /home/ana/src/shop-api" in front
    assert "task_group: shop-api" in front
    assert "task_outcome: uncertain" in front
    assert "keywords: " in front and "description: " in front and "task: " in front
    assert OFFLINE_LABEL in body
    assert '"No, use pnpm vitest directly."' in body
    assert '"Always run tests with TZ=UTC in this repo."' in body
    assert '"Remember that CI runs in UTC."' in body
    assert "Don't edit yet" not in body  # task-local, not durable
    assert "`pnpm test checkout` failed" in body


def test_no_durable_statement_is_a_noop():
    items = [user("What does this function do?"), assistant("It adds two numbers.")]
    out = build_offline_output(items, "/w")
    assert (out.rollout_summary, out.raw_memory, out.rollout_slug) == ("", "", "")
    assert build_offline_output([], None).raw_memory == ""


def test_offline_output_is_deterministic():
    a = build_offline_output(ITEMS, "/w")
    b = build_offline_output(json.loads(json.dumps(ITEMS)), "/w")
    assert a == b
    assert a.model_dump_json() == b.model_dump_json()


def test_durable_statement_detection():
    found = durable_statements(
        [
            "Please never force-push to main. Fix the bug.",
            "I prefer small commits.\nDo not touch the generated files.",
            "From now on, write tests first. Don't run it for now.",
            "no, use ruff instead of flake8",
        ]
    )
    assert found == [
        "Please never force-push to main.",
        "I prefer small commits.",
        "Do not touch the generated files.",
        "From now on, write tests first.",
        "no, use ruff instead of flake8",
    ]


def test_shell_output_wrapped_as_json_with_exit_code_counts_as_failure():
    items = [
        user("Always use make. Build it."),
        {"type": "local_shell_call", "call_id": "s1", "action": {"type": "exec", "command": ["bash", "-lc", "make"]}},
        output("s1", json.dumps({"output": "boom", "metadata": {"exit_code": 2}})),
    ]
    s = build_offline_output(items, None).rollout_summary
    assert "- `make` — failed (exit 2)" in s


def test_offline_pipeline_on_an_ingested_claude_session(isolated_env, frozen_clock):
    from memtui.context import open_context
    from memtui.ingest import run_ingest
    from memtui.phase1.run import run_phase1
    from tests.fixtures.rollouts import write_claude_session

    write_claude_session(
        isolated_env["CLAUDE_CONFIG_DIR"],
        mtime=frozen_clock - 7 * 3600,
        user_messages=["Add a --dry-run flag to deploy.sh. From now on, keep scripts POSIX sh."],
        tool_calls=[
            {"name": "Bash", "input": {"command": "shellcheck deploy.sh"}, "output": "exit code: 1\nSC2086"},
            {
                "name": "Edit",
                "input": {"file_path": "/repo/deploy.sh", "old_string": "a", "new_string": "b"},
                "output": "ok",
            },
        ],
    )
    ctx = open_context()
    run_ingest(ctx)
    first = run_phase1(ctx, offline=True)
    assert first.succeeded == 1
    row = ctx.conn.execute("SELECT * FROM stage1_outputs").fetchone()
    assert row["offline"] == 1
    assert "- `shellcheck deploy.sh` — failed (exit 1)" in row["rollout_summary"]
    assert "- `/repo/deploy.sh`" in row["rollout_summary"]
    assert '"From now on, keep scripts POSIX sh."' in row["raw_memory"]
    # Deterministic: a forced re-extraction of the same rollout stores the same text.
    again = run_phase1(ctx, offline=True, thread_id=row["thread_id"])
    assert again.succeeded == 1
    row2 = ctx.conn.execute("SELECT * FROM stage1_outputs").fetchone()
    assert (row2["raw_memory"], row2["rollout_summary"]) == (row["raw_memory"], row["rollout_summary"])
    ctx.close()
