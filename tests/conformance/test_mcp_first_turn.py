"""The real agents' FIRST model request already carries memtui's MCP tools, with the agents' default settings.

Neither agent waits long: ``codex exec`` (0.169) gives an optional MCP server a grace of about one second
(``mcp_optional_startup_grace_ms``; only ``required = true`` servers are waited for, up to ``startup_timeout_sec``)
and then sends its first request without the server's tools; ``claude -p`` (2.1.328) waits up to its MCP connection
timeout (30 s unless ``MCP_TIMEOUT``) and lists MCP tools as deferred tools (named in the first request, loaded by
ToolSearch). ``memtui mcp`` answers the handshake before the MCP SDK loads (``memtui/mcp/front.py``), so Codex's
grace is enough even on a loaded machine, where the SDK alone takes seconds to import.

The server is registered by writing each agent's own configuration, as a person (or ``memtui mcp install``) would.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from memtui.services.context import open_context
from tests.conformance.conftest import ClaudeAgent, CodexAgent
from tests.conftest import approve_root
from tests.support.agent_apis import text, tool

TOOLS = ("memory_search", "memory_read", "memory_cite")


@pytest.fixture
def memory() -> Path:
    """An approved memory root with one note, under the test's MEMTUI_HOME."""
    ctx = open_context()
    try:
        ctx.paths.ensure()
        root = ctx.paths.memory_root
        (root / "MEMORY.md").write_text(
            "# Task Group: shop\napplies_to: global\n- the flamingo cache must be warmed before the tests\n"
        )
        (root / "memory_summary.md").write_text("v1\n## What's in Memory\n- flamingo cache notes\n")
    finally:
        ctx.close()
    approve_root(root)
    return root


def _server() -> tuple[str, list[str], dict[str, str]]:
    """``memtui mcp`` as this checkout runs it: its interpreter, and the test's MEMTUI_HOME."""
    return sys.executable, ["-m", "memtui", "mcp"], {"MEMTUI_HOME": os.environ["MEMTUI_HOME"]}


def test_codex_exec_sends_memtui_s_tools_in_its_first_request(codex: CodexAgent, project: Path, memory: Path) -> None:
    command, args, env = _server()
    with (codex.home / "config.toml").open("a") as config:  # [mcp_servers.memtui] with Codex's defaults
        config.write(
            f"\n[mcp_servers.memtui]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
            f"\n[mcp_servers.memtui.env]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
        )
    codex.api.script(text("ok"))
    run = codex.exec("What do you remember about the flamingo cache?", project)
    assert run.returncode == 0, run.stderr
    first = codex.api.model_requests()[0].body
    found = [t for t in first["tools"] if t.get("type") == "namespace" and t.get("name") == "mcp__memtui"]
    assert found, "codex's first request has no memtui tools: the server missed Codex's start-up grace"
    [memtui] = found
    assert sorted(t["name"] for t in memtui["tools"]) == sorted(TOOLS)
    assert "memory_search" in memtui["description"]  # the server's instructions, from its initialize answer


def test_claude_print_sends_memtui_s_tools_in_its_first_request(
    claude: ClaudeAgent, project: Path, memory: Path
) -> None:
    command, args, env = _server()
    config = project.parent / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"memtui": {"command": command, "args": args, "env": env}}}))
    claude.api.script(tool("mcp__memtui__memory_search", query="flamingo cache"), text("warm it first"))
    run = claude.print(
        "What do you remember about the flamingo cache?",
        project,
        *("--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", "mcp__memtui__memory_search"),
    )
    assert run.returncode == 0, run.stderr
    turns = claude.api.model_requests()
    # Claude Code defers MCP tools: the first request names each one (ToolSearch loads its schema).
    for name in TOOLS:
        assert f"mcp__memtui__{name}" in turns[0].raw, name
    # The call goes to the SDK server behind the front, on the same connection: its hits reach the model.
    results = [
        c
        for m in turns[1].body["messages"]
        for c in (m["content"] if isinstance(m["content"], list) else [])
        if c.get("type") == "tool_result"
    ]
    assert len(turns) >= 2 and "MEMORY.md:3" in turns[1].raw, results
