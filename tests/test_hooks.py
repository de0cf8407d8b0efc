"""Agent hooks on temporary homes: merge, idempotence, byte-for-byte uninstall, malformed files, a hook that
returns before its background work is done, and Codex notify chaining."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.hooks.install import install, log_path, settings_path, status, uninstall, worker_lock_path
from tests.fixtures.rollouts import write_codex_rollout
from tests.support.waiting import wait_until

CLAUDE_BEFORE = b"""{
  "model": "opus",
  "hooks": {
    "SessionEnd": [{"matcher": "clear", "hooks": [{"type": "command", "command": "echo bye"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}]
  }
}
"""
CODEX_BEFORE = (
    b'# my codex config\nmodel = "gpt-5.5"   # keep this comment\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
)


@pytest.fixture
def paths(isolated_env):
    return resolve_paths()


def test_install_twice_is_idempotent_and_uninstall_restores_byte_for_byte(paths, capsys):
    claude, codex = settings_path(paths, "claude"), settings_path(paths, "codex")
    claude.write_bytes(CLAUDE_BEFORE)
    codex.write_bytes(CODEX_BEFORE)
    os.chmod(claude, 0o644)
    assert main(["hooks", "install"]) == 0
    once_claude, once_codex = claude.read_bytes(), codex.read_bytes()
    data = json.loads(once_claude)
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "check.sh"
    session_end = data["hooks"]["SessionEnd"]
    assert session_end[0]["hooks"][0]["command"] == "echo bye"  # the user's own hook is kept
    ours = session_end[1]["hooks"][0]
    assert (
        ours["type"] == "command" and "-m memtui.hook_entry" in ours["command"] and "--from claude" in ours["command"]
    )
    toml = tomllib.loads(once_codex.decode())
    assert toml["model"] == "gpt-5.5" and toml["mcp_servers"]["docs"]["command"] == "docs-mcp"
    assert toml["notify"][1:3] == ["-m", "memtui.hook_entry"] and toml["notify"][-3:] == ["--from", "codex", "--"]
    assert "# keep this comment" in once_codex.decode()  # formatting kept (tomlkit)
    assert os.stat(claude).st_mode & 0o777 == 0o644  # the user's file keeps its mode

    assert main(["hooks", "install"]) == 0  # twice: nothing changes
    assert claude.read_bytes() == once_claude and codex.read_bytes() == once_codex
    assert "already installed" in capsys.readouterr().out
    assert all(s.installed for s in status(paths))

    assert main(["hooks", "uninstall"]) == 0
    assert claude.read_bytes() == CLAUDE_BEFORE and codex.read_bytes() == CODEX_BEFORE
    assert not any(s.installed for s in status(paths))


def test_uninstall_removes_a_created_file_and_keeps_later_edits(paths):
    claude, codex = settings_path(paths, "claude"), settings_path(paths, "codex")
    assert not claude.exists() and not codex.exists()
    install(paths, "claude")
    install(paths, "codex")
    assert uninstall(paths, "codex").outcome == "restored" and not codex.exists()
    data = json.loads(claude.read_text())  # the person adds a setting after the install
    data["theme"] = "dark"
    claude.write_text(json.dumps(data))
    result = uninstall(paths, "claude")
    assert result.outcome == "removed_entry"
    assert json.loads(claude.read_text()) == {"theme": "dark"}  # their edit stays, memtui's entry goes


def test_a_malformed_settings_file_is_reported_and_left_untouched(paths, capsys):
    claude, codex = settings_path(paths, "claude"), settings_path(paths, "codex")
    claude.write_bytes(b'{"hooks": {,}')
    codex.write_bytes(b"notify = [unclosed\n")
    assert main(["hooks", "install"]) == 2
    err = capsys.readouterr().err
    assert "is not valid JSON" in err and "is not valid TOML" in err and "left untouched" in err
    assert claude.read_bytes() == b'{"hooks": {,}' and codex.read_bytes() == b"notify = [unclosed\n"
    assert not (paths.home / "hooks" / "claude.orig").exists()


def test_the_hook_returns_before_its_background_work_is_done(paths, isolated_env):
    write_codex_rollout(isolated_env["CODEX_HOME"], mtime=1_700_000_000)
    install(paths, "claude")
    command = json.loads(settings_path(paths, "claude").read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    # Hold the state database's write lock: the worker cannot finish its ingest until we let go.
    paths.ensure()
    from memtui.state.db import connect

    connect(paths.state_db).close()  # create and migrate first
    blocker = sqlite3.connect(paths.state_db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        done = subprocess.run(
            shlex.split(command), input=b'{"hook_event_name": "SessionEnd", "reason": "other"}', capture_output=True
        )
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""  # quiet

        def worker_holds_lock() -> bool:
            """Read from /proc/locks: taking the lock to test it would turn a worker starting that instant away."""
            lock = worker_lock_path(paths)
            if not lock.exists():
                return False
            st = os.stat(lock)
            where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
            return any(
                f[1] == "FLOCK" and f[5] == where
                for f in (line.split() for line in Path("/proc/locks").read_text().splitlines())
                if len(f) > 5
            )

        wait_until(worker_holds_lock, "the worker to start")
        # The hook has returned, the worker is still running: its work is blocked on our lock.
        assert blocker.execute("SELECT COUNT(*) FROM threads").fetchone()[0] == 0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    wait_until(lambda: "phase1:" in (log_path(paths).read_text() if log_path(paths).exists() else ""), "the worker")
    conn = sqlite3.connect(paths.state_db)
    assert conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0] == 1  # the ingest happened after all
    assert conn.execute("SELECT COUNT(*) FROM phase2_runs").fetchone()[0] == 0  # Phase 2 is a person's decision
    conn.close()
    log = log_path(paths).read_text()
    assert "ingest: 1 new" in log and "error" not in log


def test_codex_notify_chains_to_the_existing_program(paths, tmp_path):
    received = tmp_path / "received.json"
    script = tmp_path / "old_notify.py"
    script.write_text(f"import sys, pathlib\npathlib.Path({str(received)!r}).write_text(sys.argv[-1])\n")
    codex = settings_path(paths, "codex")
    codex.write_text(f"notify = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]\n")
    result = install(paths, "codex")
    assert result.outcome == "installed" and "still runs" in result.detail
    notify = tomllib.loads(codex.read_text())["notify"]
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": "t", "cwd": "/work"})
    done = subprocess.run([*notify, payload], capture_output=True)  # what Codex does: argv + the JSON argument
    assert done.returncode == 0 and done.stdout == b""
    wait_until(received.exists, "the chained notify program")
    wait_until(lambda: received.read_text() == payload, "the payload")
    assert "chaining to" in next(s.detail for s in status(paths) if s.agent == "codex")
    assert uninstall(paths, "codex").outcome == "restored"
    assert tomllib.loads(codex.read_text())["notify"] == [sys.executable, str(script)]


def test_hooks_respect_claude_config_dir(paths, isolated_env, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere-claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(other))
    assert main(["hooks", "install", "--claude"]) == 0
    assert (other / "settings.json").is_file()
    assert not (isolated_env["CLAUDE_CONFIG_DIR"] / "settings.json").exists()
    assert not settings_path(resolve_paths(), "codex").exists()  # --claude only


def test_the_hook_command_imports_only_the_standard_library():
    """The agent waits for the hook: it must not pay for memtui's start-up (the OpenAI SDK alone takes seconds)."""
    from memtui.hooks.install import ENTRY_MODULE

    probe = (
        f"import sys, {ENTRY_MODULE}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('memtui', 'openai', 'pydantic', 'sqlite3', "
        "'tomlkit', 'textual', 'git')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    parts = ENTRY_MODULE.split(".")
    assert out.strip() == str(sorted(".".join(parts[:i]) for i in range(1, len(parts) + 1)))  # it and its packages


def test_a_session_memtui_itself_ran_starts_no_worker(paths):
    from memtui import hook_entry
    from memtui.adapters import selfcalls

    assert hook_entry.own_dirs(paths.home) == selfcalls.own_dirs(paths)
    work = selfcalls.work_dir(paths)
    payload = json.dumps({"type": "agent-turn-complete", "cwd": str(work)})
    assert hook_entry.is_memtui_session(paths.home, "codex", [payload])
    hook_entry.run_hook(paths.home, "codex", [payload])
    assert not (paths.home / "hooks" / "pending").exists()  # nothing asked of the worker
    elsewhere = json.dumps({"type": "agent-turn-complete", "cwd": "/work/shop"})
    assert not hook_entry.is_memtui_session(paths.home, "codex", [elsewhere])


GEMINI_BEFORE = '{\n  "model": {"name": "gemini-2.5-pro"},\n  "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "mine"}]}]}\n}\n'


def _gemini_settings() -> Path:
    from memtui.adapters.sources.gemini import gemini_dir

    return gemini_dir() / "settings.json"


def test_gemini_gets_a_session_end_hook_kept_apart_from_the_person_s_hooks(paths, capsys):
    settings = _gemini_settings()
    assert main(["hooks", "install"]) == 0  # no gemini on PATH, no ~/.gemini: skipped, nothing created
    assert "gemini: skipped" in capsys.readouterr().out and not settings.parent.exists()
    settings.parent.mkdir(parents=True)
    settings.write_text(GEMINI_BEFORE)
    assert main(["hooks", "install", "--gemini"]) == 0
    data = json.loads(settings.read_text())
    assert (
        data["model"] == {"name": "gemini-2.5-pro"} and data["hooks"]["BeforeAgent"][0]["hooks"][0]["command"] == "mine"
    )
    [entry] = data["hooks"]["SessionEnd"]
    assert entry["hooks"][0]["command"] == shlex.join(
        [sys.executable, "-m", "memtui.hook_entry", "--home", str(paths.home), "--from", "gemini"]
    )
    once = settings.read_bytes()
    assert main(["hooks", "install", "--gemini"]) == 0 and settings.read_bytes() == once  # idempotent
    (gemini,) = [s for s in status(paths) if s.agent == "gemini"]
    assert gemini.installed
    data["ui"] = {"theme": "GitHub"}  # the person's change since
    settings.write_text(json.dumps(data))
    assert uninstall(paths, "gemini").outcome == "removed_entry"
    after = json.loads(settings.read_text())
    assert "SessionEnd" not in after["hooks"] and after["ui"] == {"theme": "GitHub"}
    assert after["hooks"]["BeforeAgent"] == json.loads(GEMINI_BEFORE)["hooks"]["BeforeAgent"]


def test_gemini_settings_with_comments_are_refused_by_the_hooks_too(paths, capsys):
    settings = _gemini_settings()
    settings.parent.mkdir(parents=True)
    text = '{\n  // the theme I like\n  "ui": {"theme": "GitHub"}\n}\n'
    settings.write_text(text)
    assert main(["hooks", "install", "--gemini"]) == 2
    assert "has comments" in capsys.readouterr().err and settings.read_text() == text
    assert install(paths, "claude").outcome == "installed"  # the other agents are not held up
