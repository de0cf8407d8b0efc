"""The offline extractor: a deterministic digest, durable user statements only, no-op otherwise."""

from __future__ import annotations

import json

from memtui.adapters.rollouts.model import Transcript
from memtui.services.phase1.offline import OFFLINE_LABEL, build_offline_output, durable_statements


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


def test_summary_reports_failures_first_then_request_files_commands_and_answer_citing_items():
    out = build_offline_output(Transcript(ITEMS), "/home/ana/src/shop-api")
    s = out.rollout_summary
    assert s.startswith("# The checkout tests fail on CI; find out why.\n")
    assert OFFLINE_LABEL in s
    assert "Rollout context: cwd /home/ana/src/shop-api" in s
    # Evidence lines cite the memory items they come from ([item N], 1-based, as the model is asked to).
    assert s.index("## Failures and fixes") < s.index("## What the user asked")
    assert "- `pnpm test checkout` failed (exit 1) [item 3] [item 4]; no later run succeeded" in s
    assert "- The checkout tests fail on CI; find out why. [item 2]" in s
    assert "## Files written\n- `src/checkout.ts` [item 8]\n- `tests/tz.test.ts` [item 8]" in s
    assert "## Files only read\n- `package.json` [item 10]" in s
    assert "- `git status` — ok [item 5]" in s
    assert "## Final answer [item 12]\nThe failure is timezone-dependent" in s
    assert "environment_context" not in s
    assert out.rollout_slug == "the-checkout-tests-fail-on-ci-find-out-why"


def test_a_failed_command_is_paired_with_the_run_that_fixed_it():
    items = [
        user("Always run the tests with TZ=UTC."),
        call("exec_command", {"cmd": "pnpm test"}, "a"),
        output("a", "FAIL\nProcess exited with code 1"),
        call("exec_command", {"cmd": "ls"}, "b"),
        output("b", "Process exited with code 0"),
        call("exec_command", {"cmd": "TZ=UTC pnpm test"}, "c"),
        output("c", "ok\nProcess exited with code 0"),
    ]
    out = build_offline_output(Transcript(items), None)
    assert "- `pnpm test` failed (exit 1) [item 2] [item 3]; then `TZ=UTC pnpm test` ok [item 6]" in out.rollout_summary
    assert "- `pnpm test` failed -> `TZ=UTC pnpm test` worked [item 2]" in out.raw_memory


def test_files_written_are_told_from_files_only_read():
    items = [
        user("Never edit the lockfile by hand."),
        call("Read", {"file_path": "/r/a.py"}, "1"),
        call("Edit", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"}, "2"),
        call("Read", {"file_path": "/r/b.py"}, "3"),
        call("str_replace_based_edit_tool", {"command": "view", "path": "/r/c.py"}, "4"),
        call("str_replace_based_edit_tool", {"command": "create", "path": "/r/d.py"}, "5"),
        call("exec_command", {"cmd": "cat /r/e.py | head"}, "6"),
        call("exec_command", {"cmd": "sed -i s/a/b/ /r/f.py 2>&1 > /dev/null"}, "7"),
    ]
    s = build_offline_output(Transcript(items), None).rollout_summary
    written = s.split("## Files written\n")[1].split("\n\n")[0]
    only_read = s.split("## Files only read\n")[1].split("\n\n")[0]
    assert written.splitlines() == ["- `/r/a.py` [item 3]", "- `/r/d.py` [item 6]", "- `/r/f.py` [item 8]"]
    assert only_read.splitlines() == ["- `/r/b.py` [item 4]", "- `/r/c.py` [item 5]", "- `/r/e.py` [item 7]"]


def test_only_the_users_own_words_count_never_injected_text():
    items = [
        user("This session is being continued from a previous conversation. Always use yarn, never pnpm."),
        user("<command-name>/model</command-name>\n<command-message>model</command-message>"),
        user("[Request interrupted by user for tool use]"),
        user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        {"type": "message", "role": "context", "content": [{"type": "input_text", "text": "Never use npm."}]},
        assistant("You should always use npm, never yarn."),
    ]
    out = build_offline_output(Transcript(items), "/w")
    assert (out.rollout_summary, out.raw_memory) == ("", "")  # nothing the user said: a no-op
    out = build_offline_output(Transcript([*items, user("Use bun for scripts, not npm.")]), "/w")
    assert out.raw_memory.count("the user said") == 1 and '"Use bun for scripts, not npm." [item 7]' in out.raw_memory


def test_durable_statements_are_deduplicated():
    found = durable_statements(["Always use make.", "ALWAYS use make!", "Fix it. Always  use make."])
    assert [(s.text, s.item) for s in found] == [("Always use make.", 1)]


def test_no_durable_statement_is_a_noop():
    items = [user("What does this function do?"), assistant("It adds two numbers.")]
    out = build_offline_output(Transcript(items), "/w")
    assert (out.rollout_summary, out.raw_memory, out.rollout_slug) == ("", "", "")
    assert build_offline_output(Transcript([]), None).raw_memory == ""


def test_offline_output_is_deterministic():
    a = build_offline_output(Transcript(ITEMS), "/w")
    b = build_offline_output(Transcript(json.loads(json.dumps(ITEMS))), "/w")
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
    assert [s.text for s in found] == [
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
    s = build_offline_output(Transcript(items), None).rollout_summary
    assert "- `make` failed (exit 2) [item 2] [item 3]; no later run succeeded" in s


def test_offline_pipeline_on_an_ingested_claude_session(isolated_env, frozen_clock):
    from memtui.services.context import open_context
    from memtui.services.ingest import run_ingest
    from memtui.services.phase1.run import run_phase1
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
    assert "- `shellcheck deploy.sh` failed (exit 1)" in row["rollout_summary"]
    assert "## Files written\n- `/repo/deploy.sh`" in row["rollout_summary"]
    assert '"From now on, keep scripts POSIX sh."' in row["raw_memory"]
    # Deterministic: a forced re-extraction of the same rollout stores the same text.
    again = run_phase1(ctx, offline=True, thread_id=row["thread_id"])
    assert again.succeeded == 1
    row2 = ctx.conn.execute("SELECT * FROM stage1_outputs").fetchone()
    assert (row2["raw_memory"], row2["rollout_summary"]) == (row["raw_memory"], row["rollout_summary"])
    ctx.close()
