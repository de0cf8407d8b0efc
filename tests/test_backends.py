"""Phase 1 through the agent CLIs: fake ``codex`` / ``claude`` executables on PATH, real subprocesses, real SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.adapters.llm.backends import claude_cli, codex_cli
from memtui.adapters.llm.backends.choose import choose_provider, forget_probe
from memtui.adapters.selfcalls import MARKER, SKIP_REASON
from memtui.cli import main
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.run import run_phase1
from memtui.state.outputs import get_stage1_output
from tests.support import fake_agents
from tests.support.waiting import wait_until
from tests.test_phase1_run import job, runs, seed

PROVIDERS = ["codex", "claude"]


@pytest.fixture
def fake_clis(tmp_path, monkeypatch):
    """``codex`` and ``claude`` stand-ins first on PATH; every invocation is logged."""
    bin_dir = tmp_path / "bin"
    fake_agents.install(bin_dir)
    monkeypatch.setenv("PATH", fake_agents.path_with(bin_dir))
    log = tmp_path / "agent-calls.jsonl"
    monkeypatch.setenv("FAKE_AGENT_LOG", str(log))
    forget_probe()
    yield log
    forget_probe()


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def home(isolated_env, frozen_clock):
    ctx = open_context()
    yield ctx, isolated_env["CODEX_HOME"]
    ctx.close()


def ctx_for(provider: str, **overrides):
    return open_context({"provider": provider, **overrides})


# --- the argument lists memtui passes ---------------------------------------------------------------------------


def test_codex_exec_gets_exactly_the_documented_flags(home, fake_clis, isolated_env):
    (t,) = seed(home)
    s = run_phase1(ctx_for("codex"))
    assert (s.claimed, s.succeeded, s.failed) == (1, 1, 0), s
    login, exec_call = calls(fake_clis)
    assert login["argv"] == ["codex", "login", "status"]
    argv = exec_call["argv"]
    work = str(isolated_env["MEMTUI_HOME"] / "work")
    schema, out = argv[argv.index("--output-schema") + 1], argv[argv.index("-o") + 1]
    assert Path(schema).parent == Path(out).parent and Path(schema).parent.parent == Path(work)
    assert argv == [
        "codex", "exec", "-c", "notify=[]", "--sandbox", "read-only", "--skip-git-repo-check", "--json",
        "--color", "never", "-C", work, "--output-schema", schema, "-o", out, "-",
    ]  # fmt: skip
    private = str(isolated_env["MEMTUI_HOME"] / "codex-home")
    assert login["codex_home"] == exec_call["codex_home"] == private  # memtui's own CODEX_HOME, for both
    assert not list(Path(private).glob("sessions/**/*.jsonl"))  # the call's session was read for its model, then gone
    assert exec_call["cwd"] == work
    assert exec_call["stdin"].startswith(MARKER)  # the prompt goes on stdin, marked as memtui's own
    assert "The checkout tests fail on CI" in exec_call["stdin"]
    assert not Path(schema).parent.exists()  # the temporary schema and output files are gone
    assert get_stage1_output(home[0].conn, t)["rollout_slug"] == "fix-checkout-test"
    assert runs(home[0].conn, t)[0]["model"] == "codex:gpt-5.5"  # what codex says it used (its session's turn)


def test_codex_calls_carry_none_of_the_users_instructions_or_memory(home, fake_clis, isolated_env, monkeypatch):
    """Item 5: the user's global AGENTS.md (memtui's exported block) and Codex's memory summary stay out of
    memtui's own calls, while the user's provider and login come along."""
    user = isolated_env["CODEX_HOME"]
    (user / "AGENTS.md").write_text("USER-AGENTS-MD exported memory block\n")
    (user / "memories").mkdir()
    (user / "memories" / "memory_summary.md").write_text("USER-MEMORY-SUMMARY\n")
    (user / "auth.json").write_text('{"OPENAI_API_KEY": null}')
    (user / "config.toml").write_text(
        'model = "gpt-5.4"\nmodel_provider = "corp"\nnotify = ["notify-send"]\n[features]\nmemories = true\n'
        '[mcp_servers.docs]\ncommand = "docs-mcp"\n'
        '[model_providers.corp]\nname = "corp"\nbase_url = "https://llm.corp.example/v1"\nenv_key = "CORP_KEY"\n'
    )
    seed(home)
    assert run_phase1(ctx_for("codex")).succeeded == 1
    exec_call = calls(fake_clis)[-1]
    assert exec_call["instructions"] == ""  # the fake loads what the real codex would: nothing of the user's
    private = Path(exec_call["codex_home"])
    config = (private / "config.toml").read_text()
    assert 'model_provider = "corp"' in config and "llm.corp.example" in config and 'env_key = "CORP_KEY"' in config
    assert "notify" not in config and "mcp_servers" not in config and "memories = false" in config
    assert (private / "auth.json").is_symlink() and (private / "auth.json").resolve() == (user / "auth.json")
    assert not (private / "AGENTS.md").exists() and not (private / "memories").exists()


def test_codex_with_an_api_key_provider_counts_as_logged_in(home, fake_clis, isolated_env, monkeypatch):
    """Item 9: ``codex login status`` says "Not logged in" for a provider that takes its key from ``env_key``,
    but ``codex exec`` works with it: memtui runs when the key is set and refuses, clearly, when it is not."""
    monkeypatch.setenv("FAKE_CODEX_LOGIN_STATUS", "logged_out")
    (isolated_env["CODEX_HOME"] / "config.toml").write_text(
        'model_provider = "corp"\n[model_providers.corp]\nname = "corp"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'env_key = "CORP_KEY"\n'
    )
    ok, said = codex_cli.login_status()
    assert ok is False and "Not logged in" in said  # no key in $CORP_KEY: nothing would work
    monkeypatch.setenv("CORP_KEY", "sk-corp")
    ok, said = codex_cli.login_status()
    assert ok is True and "$CORP_KEY" in said
    seed(home)
    assert run_phase1(ctx_for("codex")).succeeded == 1


def test_the_recorded_model_is_the_one_codex_used(home, fake_clis, monkeypatch):
    """Item 9: no model asked for, codex picks its own; the run says which (not memtui's configured default)."""
    monkeypatch.setenv("FAKE_CODEX_DEFAULT_MODEL", "gpt-6-codex")
    (t,) = seed(home)
    assert run_phase1(ctx_for("codex")).succeeded == 1
    assert runs(home[0].conn, t)[0]["model"] == "codex:gpt-6-codex"


def test_codex_calls_do_not_fire_the_users_notify_program(home, fake_clis, isolated_env, tmp_path):
    fired = tmp_path / "notified.txt"
    script = tmp_path / "notify.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {fired}\n')
    script.chmod(0o755)
    (isolated_env["CODEX_HOME"] / "config.toml").write_text(f'notify = ["{script}"]\n')
    seed(home)
    assert run_phase1(ctx_for("codex")).succeeded == 1
    assert not fired.exists()  # the user's program runs for the user's turns, not memtui's


def test_claude_without_the_quiet_flags_gets_the_full_deny_list(home, fake_clis, monkeypatch):
    from memtui.adapters.llm.backends import capabilities

    monkeypatch.setenv("FAKE_CLAUDE_OLD", "1")
    capabilities.forget()
    seed(home)
    assert run_phase1(ctx_for("claude")).succeeded == 1
    argv = calls(fake_clis)[-1]["argv"]
    assert "--tools" not in argv and argv[argv.index("--disallowedTools") + 1] == claude_cli.ALL_TOOLS
    for tool in ("Agent", "Monitor", "ToolSearch", "TaskOutput", "AskUserQuestion"):
        assert tool in claude_cli.ALL_TOOLS.split(",")
    capabilities.forget()


def test_config_says_which_cli_flags_are_used_and_why(home, fake_clis):
    from memtui.adapters.llm.backends import capabilities

    capabilities.forget()
    codex_line, claude_line = capabilities.describe("codex"), capabilities.describe("claude")
    assert codex_line.startswith("codex 0.200.0 at ") and "-c notify=[]" in codex_line
    assert "private CODEX_HOME" in codex_line
    assert claude_line.startswith("claude 2.1.300 at ")
    for flag in (
        '--tools ""',
        "--safe-mode",
        '--setting-sources ""',
        "--strict-mcp-config",
        "--no-session-persistence",
    ):
        assert flag in claude_line


def test_codex_gets_the_model_only_when_the_user_chose_one(home, fake_clis):
    seed(home)
    run_phase1(ctx_for("codex", extract_model="gpt-5.4-codex"))
    argv = calls(fake_clis)[-1]["argv"]
    assert argv[-3:] == ["-m", "gpt-5.4-codex", "-"]


def test_claude_p_gets_exactly_the_documented_flags(home, fake_clis, isolated_env):
    (t,) = seed(home)
    s = run_phase1(ctx_for("claude", extract_model="claude-haiku-5"))
    assert (s.claimed, s.succeeded, s.failed) == (1, 1, 0), s
    auth, call = calls(fake_clis)
    assert auth["argv"] == ["claude", "auth", "status"]
    schema = json.loads(call["argv"][5])
    settings = call["argv"][call["argv"].index("--settings") + 1]
    assert call["argv"] == [
        "claude", "-p", "--output-format", "json", "--json-schema", call["argv"][5],
        "--tools", "", "--safe-mode", "--setting-sources", "", "--settings", settings,
        "--strict-mcp-config", "--no-session-persistence", "--model", "claude-haiku-5",
    ]  # fmt: skip
    assert json.loads(settings) == {"disableAllHooks": True, "autoMemoryEnabled": False}
    assert schema["additionalProperties"] is False and set(schema["required"]) == {
        "rollout_summary",
        "rollout_slug",
        "raw_memory",
    }
    assert call["cwd"] == str(isolated_env["MEMTUI_HOME"] / "work")
    assert call["stdin"].startswith(MARKER)
    assert get_stage1_output(home[0].conn, t)["raw_memory"].startswith("---\ndescription: tests need TZ=UTC")


def test_claude_calls_load_none_of_the_users_setup_and_record_the_model_used(home, fake_clis, isolated_env, tmp_path):
    """Item 10: the user's CLAUDE.md (memtui's exported block) stays out and their SessionEnd hook does not run; the
    user's auth settings come along; the run is labelled with the model that did the work (``modelUsage``)."""
    claude_dir = isolated_env["CLAUDE_CONFIG_DIR"]
    ran = tmp_path / "session-end-ran"
    (claude_dir / "CLAUDE.md").write_text("USER-CLAUDE-MD exported memory block\n")
    hook = {"hooks": [{"type": "command", "command": f"touch {ran}"}]}
    user = {"hooks": {"SessionEnd": [hook]}, "env": {"ANTHROPIC_BASE_URL": "https://gw.corp.example"}, "model": "opus"}
    (claude_dir / "settings.json").write_text(json.dumps(user))
    (t,) = seed(home)
    assert run_phase1(ctx_for("claude")).succeeded == 1
    call = calls(fake_clis)[-1]
    assert call["instructions"] == "" and not ran.exists()
    settings = json.loads(call["argv"][call["argv"].index("--settings") + 1])
    assert settings == {
        "env": {"ANTHROPIC_BASE_URL": "https://gw.corp.example"},
        "model": "opus",
        "disableAllHooks": True,
        "autoMemoryEnabled": False,
    }
    assert runs(home[0].conn, t)[0]["model"] == "claude:opus"  # the fake runs the settings' model


# --- failures, classified -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "mode, kind, stops",
    [
        ("not_logged_in", "not_logged_in", True),
        ("usage_limit", "rate_limited", True),
        ("garbage", "invalid_output", False),
        ("schema_mismatch", "invalid_output", False),
    ],
)
@pytest.mark.slow
def test_failures_are_classified_backed_off_and_stop_the_run_when_nothing_can_succeed(
    home, fake_clis, monkeypatch, provider, mode, kind, stops
):
    ids = seed(home, 3)
    monkeypatch.setenv("FAKE_AGENT_MODE", mode)
    s = run_phase1(ctx_for(provider, concurrency=1))
    conn = home[0].conn
    failed = [t for t in ids if job(conn, t) is not None]
    assert s.failed == len(failed) and s.succeeded == 0
    for t in failed:
        row = job(conn, t)
        assert row["status"] == "error" and row["last_error"].startswith(kind + ":"), row["last_error"]
        assert row["retry_at"] > row["finished_at"]  # backoff: the lease is released and a retry is scheduled
        assert runs(conn, t)[0]["outcome"] == "failed"
    if stops:
        assert s.claimed == 1 and s.skipped.get("backend_unavailable") == 2 and s.halted.startswith(kind)
    else:
        assert s.claimed == 3 and s.halted is None
    if mode == "schema_mismatch":
        assert "unexpected field 'confidence'" in job(conn, failed[0])["last_error"]


def test_a_claude_answer_in_prose_says_so_not_that_claude_code_is_old(home, fake_clis, monkeypatch):
    """Issue 31.14: with no structured_output the message blamed an old Claude Code; the real 2.1.328 answers that
    way when the model replies in prose instead of calling its structured-output tool."""
    (t,) = seed(home)
    monkeypatch.setenv("FAKE_AGENT_MODE", "prose")
    assert run_phase1(ctx_for("claude", concurrency=1)).failed == 1
    error = job(home[0].conn, t)["last_error"]
    assert error.startswith("invalid_output:") and "without calling Claude Code's structured-output tool" in error
    assert '"The session fixed a flaky test."' in error and "--json-schema support" not in error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hanging_cli_is_killed_at_the_timeout(home, fake_clis, monkeypatch, provider):
    (t,) = seed(home)
    monkeypatch.setenv("FAKE_AGENT_MODE", "hang")  # the login probe still answers: only the call hangs
    s = run_phase1(ctx_for(provider, cli_timeout_seconds=0.6))
    assert s.failed == 1
    assert job(home[0].conn, t)["last_error"].startswith("timeout:")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_missing_cli_is_not_installed(home, tmp_path, monkeypatch, provider):
    (t,) = seed(home)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    forget_probe()
    s = run_phase1(ctx_for(provider))
    assert s.failed == 1 and s.halted is not None
    assert job(home[0].conn, t)["last_error"].startswith("not_installed:")


# --- no self-learning -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "provider, ignore_ephemeral", [("codex", False), ("codex", True), ("claude", False), ("claude", True)]
)
@pytest.mark.slow
def test_ingest_after_a_phase1_run_adds_no_thread(
    home, fake_clis, monkeypatch, isolated_env, provider, ignore_ephemeral
):
    """The fakes persist sessions like the real CLIs: codex without --ephemeral (or when it ignores it), claude
    without --no-session-persistence (``ignore_ephemeral`` plays a Claude Code too old for that flag)."""
    ctx, _ = home
    ids = seed(home, 2)
    if ignore_ephemeral:
        monkeypatch.setenv("FAKE_CODEX_IGNORE_EPHEMERAL", "1")
        monkeypatch.setenv("FAKE_CLAUDE_OLD", "1")
    s = run_phase1(ctx_for(provider))
    assert s.succeeded == 2
    own_root = isolated_env["CODEX_HOME" if provider == "codex" else "CLAUDE_CONFIG_DIR"]
    own_files = [p for p in own_root.rglob("*.jsonl") if not any(t in p.name for t in ids)]
    # codex writes its sessions in memtui's private CODEX_HOME (read for the model, then deleted), never the user's
    assert len(own_files) == (2 if ignore_ephemeral and provider == "claude" else 0)
    assert not list((isolated_env["MEMTUI_HOME"] / "codex-home").rglob("*.jsonl"))
    summary = run_ingest(ctx)
    threads = {r[0] for r in ctx.conn.execute("SELECT id FROM threads")}
    assert threads == set(ids)
    assert summary.skipped_by_reason.get(SKIP_REASON, 0) == len(own_files)


def test_a_session_whose_first_prompt_carries_the_marker_is_skipped_wherever_it_ran(home, isolated_env):
    ctx, codex_home = home
    path = (
        codex_home
        / "sessions"
        / "2026"
        / "07"
        / "10"
        / "rollout-2026-07-10T05-00-00-019e0a1b-0000-7000-8000-000000000001.jsonl"
    )
    path.parent.mkdir(parents=True)
    meta = {"id": "019e0a1b-0000-7000-8000-000000000001", "cwd": "/home/ana/src/shop-api", "source": "cli"}
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"{MARKER}: x\n\nprompt"}]}
    path.write_text(
        json.dumps({"timestamp": "2026-07-10T05:00:00.000Z", "type": "session_meta", "payload": meta})
        + "\n"
        + json.dumps({"timestamp": "2026-07-10T05:00:01.000Z", "type": "response_item", "payload": user})
        + "\n"
    )
    summary = run_ingest(ctx)
    assert summary.new == 0 and summary.skipped_by_reason == {SKIP_REASON: 1}


# --- provider = auto --------------------------------------------------------------------------------------------------


def test_auto_prefers_a_key_then_a_logged_in_codex_then_claude_then_offline(fake_clis, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
    assert choose_provider(open_context().settings).name == "openai"
    monkeypatch.delenv("OPENAI_API_KEY")
    choice = choose_provider(open_context().settings)
    assert choice.name == "codex" and "logged in" in choice.reason
    monkeypatch.setenv("FAKE_AGENT_MODE", "not_logged_in")
    forget_probe()
    choice = choose_provider(open_context().settings)
    assert choice.name == "offline" and "codex on PATH but not logged in" in choice.reason
    monkeypatch.setenv("FAKE_AGENT_MODE", "success")
    (tmp_path / "bin" / "codex").unlink()
    forget_probe()
    choice = choose_provider(open_context().settings)
    assert choice.name == "claude" and "no codex on PATH" in choice.reason
    assert main(["config", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["provider"] == "claude" and "claude on PATH" in out["provider_reason"]
    assert main(["--set", "provider=codex", "config"]) == 0
    assert "provider (effective)" in (text := capsys.readouterr().out) and "codex: provider = 'codex' is set" in text


def test_auto_asks_the_codex_memtuis_calls_run_whether_it_is_logged_in(home, fake_clis, isolated_env):
    """``auto`` picks codex only if the codex memtui's own calls run (its private CODEX_HOME, the user's provider
    settings) is logged in: the question is asked there, never of the user's home alone."""
    choice = choose_provider(open_context().settings)
    assert choice.name == "codex"
    probes = [c for c in calls(fake_clis) if c["argv"][1:3] == ["login", "status"]]
    assert probes and all(c["codex_home"] == str(open_context().paths.home / "codex-home") for c in probes)


def test_codex_login_status_reads_exit_code(fake_clis, monkeypatch):
    assert codex_cli.login_status()[0] is True
    monkeypatch.setenv("FAKE_AGENT_MODE", "not_logged_in")
    ok, said = codex_cli.login_status()
    assert ok is False and "Not logged in" in said


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.slow
def test_a_killed_memtui_leaves_no_cli_running(home, fake_clis, monkeypatch, tmp_path, provider):
    """``kill -9`` of memtui mid-call: the hanging CLI dies with it (PR_SET_PDEATHSIG), nothing is orphaned."""
    import os
    import signal
    import subprocess
    import sys

    seed(home)
    monkeypatch.setenv("FAKE_AGENT_MODE", "hang")
    monkeypatch.setenv("MEMTUI_PROVIDER", provider)
    proc = subprocess.Popen([sys.executable, "-m", "memtui", "phase1", "--all"], stdout=subprocess.DEVNULL)
    script = f"{tmp_path / 'bin' / provider}\0"

    def fakes() -> list[int]:
        """Live processes running the stand-in (a zombie has an empty cmdline)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().decode(errors="replace")
            except OSError:
                continue
            if script in cmd:
                found.append(int(pid))
        return found

    wait_until(lambda: fakes() and calls_of(fake_clis), "the CLI to start", proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not fakes(), "the orphaned CLI to exit")  # a leaked one never does (it sleeps an hour)


def calls_of(log: Path) -> bool:
    """True once the hanging call (not the login probe) has been logged."""
    return any(c["argv"][:2] in (["codex", "exec"], ["claude", "-p"]) for c in calls(log))


def test_codex_events_a_transient_error_in_a_completed_turn_is_not_a_failure():
    lines = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "error", "message": "stream disconnected before completion; retrying 1/5"},
        {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "{}"}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    ev = codex_cli._events_summary(data)
    assert (ev.prompt_tokens, ev.completion_tokens, ev.failure, ev.thread_id) == (10, 2, None, "t")
    failed = data.replace(b'"turn.completed"', b'"turn.failed"')
    assert codex_cli._events_summary(failed).failure == "codex reported a failed turn"
    assert str(codex_cli._events_summary(b"\n".join(data.splitlines()[:2])).failure).startswith("stream disconnected")
