"""Set-up that works the first time, with the real agents: ``memtui hooks install`` picks the hook the installed
codex has (read from its npm layout) and the hooks fire; ``memtui mcp install`` registers memtui's server so the real
agents list its tools, run them without a permission prompt, and get the approved memory of the right home back."""

from __future__ import annotations

import json
import shlex
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.hooks import codex_probe
from memtui.hooks.install import codex_trust, hook_argv, log_path, settings_path
from memtui.hooks.mcp_register import READ_ONLY_TOOLS, claude_rule
from tests.conformance.conftest import ClaudeAgent, CodexAgent
from tests.conftest import approve_root
from tests.support.agent_apis import Request, namespaced_tool, text, tool

PLANTED = "the zebra-striped deploy needs the --blue flag (planted memory 7c1f)"


def _wait_for(predicate: Callable[[], bool], what: str, limit: float = 240.0) -> None:
    """Poll for an event; the limit only stops a broken run from hanging the suite."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _ingested(thread: str) -> Callable[[], bool]:
    db = resolve_paths().state_db

    def check() -> bool:
        if not db.exists():
            return False
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) FROM threads WHERE id = ?", (thread,)).fetchone()[0] == 1
        except sqlite3.Error:
            return False
        finally:
            conn.close()

    return check


def _worker_done() -> bool:
    log = log_path(resolve_paths())
    return log.exists() and ("phase1:" in log.read_text() or "error:" in log.read_text())


def _plant_memory() -> Path:
    paths = resolve_paths().ensure()
    (paths.memory_root / "MEMORY.md").write_text(f"# Task Group: deploys\napplies_to: global\n- {PLANTED}\n")
    (paths.memory_root / "memory_summary.md").write_text("v1\n## What's in Memory\n- deploy flags\n")
    approve_root(paths.memory_root)
    return paths.memory_root


def test_claude_session_end_hook_ingests_the_session_after_claude_p(
    claude: ClaudeAgent, agent_path: Path, project: Path
) -> None:
    assert main(["hooks", "install", "--claude"]) == 0
    claude.api.script(text("noted"))
    run = claude.print("Always run the linter before committing.", project)
    assert run.returncode == 0, run.stderr
    session = json.loads(run.stdout)["session_id"]
    _wait_for(_ingested(session), f"claude session {session} to be ingested by the SessionEnd hook")
    _wait_for(_worker_done, "the hook's worker to finish")


def test_codex_hook_kind_comes_from_the_real_npm_layout_and_a_trusted_session_end_hook_fires(
    codex: CodexAgent, agent_path: Path, project: Path
) -> None:
    program = codex_probe.find_codex()
    assert program is not None and program.native is not None
    assert program.launcher.name == "codex.js"  # npm's launcher, resolved to the platform package's program
    assert "vendor" in program.native.parts and program.native.read_bytes()[:4] == b"\x7fELF"
    assert main(["hooks", "install", "--codex"]) == 0
    paths = resolve_paths()
    assert settings_path(paths, "codex").name == "hooks.json"
    assert "notify" not in (paths.codex_home / "config.toml").read_text()

    # Codex runs a hook only once a person trusted it: until then `hooks status` says so, and exec skips it.
    trust = codex_trust(paths)
    assert trust is not None and trust.status == "untrusted", trust
    # Trust it as Codex's TUI records it ([hooks.state."<key>"] trusted_hash in config.toml), then run a session.
    with (paths.codex_home / "config.toml").open("a") as fh:
        fh.write(f'\n[hooks.state."{trust.key}"]\ntrusted_hash = "{trust.current_hash}"\n')
    after = codex_trust(paths)
    assert after is not None and after.status == "trusted"
    codex.api.script(text("noted"))
    run = codex.exec("Always run the linter before committing.", project)
    assert run.returncode == 0, run.stderr
    [session] = codex.sessions()
    thread = json.loads(session.read_text().splitlines()[0])["payload"]["id"]
    _wait_for(_ingested(thread), f"codex thread {thread} to be ingested by the SessionEnd hook")
    _wait_for(_worker_done, "the hook's worker to finish")
    assert shlex.join(hook_argv(paths, "codex", session_end=True)) in (paths.codex_home / "hooks.json").read_text()


def _tool_names(request: Request) -> set[str]:
    """Every tool name a model request offers, a namespace tool's own tools as ``<namespace>__<tool>``."""
    names = set()
    for t in request.body.get("tools", []):
        name = str(t.get("name", ""))
        names.add(name)
        for inner in t.get("tools", []) if t.get("type") == "namespace" else []:
            names.add(f"{name}__{inner.get('name')}")
    return names


def test_after_mcp_install_codex_lists_memtui_tools_and_they_serve_this_home(
    codex: CodexAgent, agent_path: Path, project: Path
) -> None:
    _plant_memory()
    assert main(["mcp", "install", "--codex"]) == 0
    codex.env.pop("MEMTUI_HOME")  # an agent's environment rarely carries memtui's home
    codex.api.script(namespaced_tool("mcp__memtui", "memory_read", path="MEMORY.md"), text("done"))
    # Codex sends its first request without waiting for MCP servers (their tools join a later request once the
    # server has answered); `required = true` is its documented way to wait for a server's start-up.
    run = codex.exec("What do you remember about deploys?", project, "-c", "mcp_servers.memtui.required=true")
    assert run.returncode == 0, run.stderr
    first, *later = codex.api.model_requests()
    # Codex 0.169 offers an MCP server's tools as one namespace tool, mcp__<server>, holding them by their names.
    assert {f"mcp__memtui__{t}" for t in READ_ONLY_TOOLS} <= _tool_names(first)
    [output] = [i for i in later[0].body["input"] if i.get("type") == "function_call_output"]
    assert PLANTED in json.dumps(output), output  # the approved memory of MEMTUI_HOME, run without an approval
    assert not (project / ".codex").exists()


def test_after_mcp_install_claude_lists_memtui_tools_and_runs_them_without_a_denial(
    claude: ClaudeAgent, agent_path: Path, project: Path
) -> None:
    _plant_memory()
    assert main(["mcp", "install", "--claude"]) == 0
    claude.env.pop("MEMTUI_HOME")
    names = [claude_rule(t) for t in READ_ONLY_TOOLS]
    # Claude Code 2.1 does not wait for MCP servers: its first request says memtui is "still connecting" and
    # defers MCP tools behind ToolSearch, which waits for a connecting server and then loads the tools' schemas.
    claude.api.script(
        tool("ToolSearch", query="select:" + ",".join(names)),
        tool(claude_rule("memory_read"), path="MEMORY.md"),
        text("done"),
    )
    run = claude.print("What do you remember about deploys?", project)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result.get("permission_denials") == [], result  # allowed by the rule in settings.json, no --allowedTools
    turns = claude.api.model_requests()
    assert any(set(names) <= _tool_names(t) for t in turns), [sorted(_tool_names(t)) for t in turns]
    answered = [t for t in turns if "tool_result" in t.raw and PLANTED in t.raw]
    assert answered, "the tool result with the approved memory of MEMTUI_HOME never came back to the model"
    assert not (project / ".mcp.json").exists()  # nothing written into the project's shared file

    # Without memtui's rules (as after a bare `claude mcp add`), `claude -p` denies the same call.
    settings = resolve_paths().claude_dir / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": []}}))
    claude.api.script(
        tool("ToolSearch", query="select:" + ",".join(names)),
        tool(claude_rule("memory_read"), path="MEMORY.md"),
        text("x"),
    )
    denied = json.loads(claude.print("And now?", project).stdout)
    assert [d.get("tool_name") for d in denied["permission_denials"]] == [claude_rule("memory_read")], denied
    home = str(resolve_paths().home)
    assert not [p for p in project.rglob("*") if p.is_file() and ".git" not in p.parts and home in p.read_text()]
