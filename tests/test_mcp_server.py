"""``memtui mcp`` driven by the MCP SDK's own client over stdio: a real subprocess, real JSON-RPC."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memtui.mcp.server import PathRefused, confine
from memtui.services.context import open_context
from memtui.state.db import immediate
from tests.conftest import approve_root
from tests.test_phase2_support import add_output

THREAD = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def memory_home() -> Path:
    ctx = open_context()
    ctx.paths.ensure()
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text(
        "# Task Group: shop\napplies_to: cwd=/work/shop; reuse_rule=x\n- the flamingo cache must be warmed\n"
        "- run make warm first\n"
    )
    (root / "memory_summary.md").write_text("v1\n## What's in Memory\n- flamingo cache notes\n")
    with immediate(ctx.conn):
        add_output(ctx.conn, THREAD, 100, cwd="/work/shop")
    ctx.close()
    approve_root(root)
    (root.parent / "secret.txt").write_text("outside the memory root")
    (root / "escape").symlink_to(root.parent / "secret.txt")
    return root


def _params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "memtui", "mcp"], env=dict(os.environ))


def _data(result) -> dict:
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def _usage(thread_id: str) -> int | None:
    ctx = open_context()
    try:
        return ctx.conn.execute("SELECT usage_count FROM stage1_outputs WHERE thread_id=?", (thread_id,)).fetchone()[0]
    finally:
        ctx.close()


async def test_mcp_over_stdio(memory_home):
    async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        assert tools == {"memory_search", "memory_read", "memory_cite"}

        found = _data(await session.call_tool("memory_search", {"query": "flamingo cache"}))
        locations = [h["location"] for h in found["hits"]]
        assert "MEMORY.md:3" in locations and "memory_summary.md:3" in locations
        scoped = _data(await session.call_tool("memory_search", {"query": "flamingo", "project": "/work/other"}))
        assert all(h["project"] == "" for h in scoped["hits"])  # the shop group is not another project's to see

        part = _data(await session.call_tool("memory_read", {"path": "MEMORY.md", "start_line": 3, "end_line": 4}))
        assert part["text"] == "- the flamingo cache must be warmed\n- run make warm first"
        assert (part["start_line"], part["end_line"], part["total_lines"]) == (3, 4, 4)

        assert _usage(THREAD) is None
        block = (
            "<oai-mem-citation>\n<citation_entries>\nMEMORY.md:3-4|note=[cache warm-up]\n</citation_entries>\n"
            f"<rollout_ids>\n{THREAD}\n</rollout_ids>\n</oai-mem-citation>"
        )
        cited = _data(await session.call_tool("memory_cite", {"citation": block}))
        assert cited["ok"] and cited["counted"] is False and cited["check"]["rollout_ids"][0]["has_memory"]
        await session.call_tool("memory_cite", {"citation": block})
        assert _usage(THREAD) is None  # checking counts nothing: the reply carrying the block is the one count

        for bad in ("../secret.txt", "escape", "/etc/passwd", ".git/config", "rollout_summaries/../../secret.txt"):
            refused = await session.call_tool("memory_read", {"path": bad})
            assert refused.is_error, bad
            assert (
                "outside the memory root" in refused.content[0].text
                or "refused" in refused.content[0].text
                or (".git" in refused.content[0].text)
            )
        nothing = await session.call_tool("memory_cite", {"citation": "no citation here"})
        assert nothing.is_error

        resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert resources == {"memtui://read-path", "memtui://memory_summary.md"}
        read_path = await session.read_resource("memtui://read-path")
        text = read_path.contents[0].text
        assert "MEMORY_SUMMARY BEGINS" in text and "flamingo cache notes" in text and "<oai-mem-citation>" in text


def test_confine_resolves_before_checking(tmp_path):
    root = tmp_path / "memories"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.md").write_text("x")
    assert confine(root, "sub/../sub/a.md")[0] == "sub/a.md"
    (root / "out").symlink_to(tmp_path)
    for bad in ("../x", "out/memories/sub/a.md/../../../x", "~/x", "/abs", "", ".git/HEAD", "sub/../../memories2"):
        with pytest.raises(PathRefused):
            confine(root, bad)


CLAUDE_CAPABILITIES = {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}


def test_the_recorded_handshake_is_what_the_sdk_answers():
    """The front answers from handshake.json: it must be what the SDK server itself answers, at every handshake
    version (regenerate with `python -m memtui.mcp.describe --write`)."""
    from memtui.mcp.describe import describe, render
    from memtui.mcp.front import HANDSHAKE_FILE
    from memtui.mcp.server import build_server

    ctx = open_context()
    try:
        server = build_server(ctx)
        assert render(describe(server)) == HANDSHAKE_FILE.read_text(encoding="utf-8")
        # ... whatever the client declares (the front answers every client alike): Claude Code's and Codex's
        for capabilities in (CLAUDE_CAPABILITIES, {"experimental": {"codex/auth-change": {}}, "elicitation": {}}):
            assert render(describe(server, capabilities)) == HANDSHAKE_FILE.read_text(encoding="utf-8")
    finally:
        ctx.close()


# `memtui mcp` with the SDK's loading held back until RELEASE exists: what answers meanwhile is the front alone.
# The modules loaded when the front starts answering go to stderr as one JSON line.
HELD_BACK = """
import json, os, sys, time
import memtui.mcp.front as front
real = front.start
def start(*args, **kwargs):
    started = real(*args, **kwargs)
    print(json.dumps(sorted(sys.modules)), file=sys.stderr, flush=True)
    while not os.path.exists(os.environ["RELEASE"]):
        time.sleep(0.01)
    return started
front.start = start
from memtui.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


class HeldBack:
    """A `memtui mcp` process driven line by line."""

    def __init__(self, release: Path, *args: str) -> None:
        import subprocess

        self.release = release
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HELD_BACK, "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "RELEASE": str(release)},
        )

    def modules_at_start(self) -> list[str]:
        assert self.proc.stderr is not None
        return json.loads(self.proc.stderr.readline())

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return json.loads(line)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=120)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code


def _request(n: int, method: str, params: dict | None = None) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": method, **({"params": params} if params is not None else {})}


def _init(version: str) -> dict:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def test_the_front_answers_the_handshake_before_the_sdk_loads_then_hands_over(memory_home, tmp_path):
    from memtui.mcp.front import load_handshake

    recorded = load_handshake()
    server = HeldBack(tmp_path / "release")
    try:
        server.modules_at_start()
        server.send(_request(1, "initialize", _init("1999-01-01")))  # unknown: the SDK counters with its newest
        init = server.answer()
        assert init["id"] == 1 and init["result"]["protocolVersion"] == recorded["latest_handshake"]
        assert init["result"]["serverInfo"]["name"] == "memtui"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send(_request(2, "tools/list"))
        listed = server.answer()
        assert listed == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": recorded["answers"][recorded["latest_handshake"]]["tools/list"],
        }
        assert {t["name"] for t in listed["result"]["tools"]} == {"memory_search", "memory_read", "memory_cite"}
        # A tool call waits for the SDK server, which takes over the same connection (already initialized).
        server.send(_request(3, "tools/call", {"name": "memory_read", "arguments": {"path": "MEMORY.md"}}))
        server.send(_request(4, "ping"))
        assert server.answer() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        (tmp_path / "release").touch()
        called = server.answer()
        assert called["id"] == 3 and not called["result"].get("isError"), called
        assert "flamingo cache" in called["result"]["structuredContent"]["text"]
        server.send(_request(5, "initialize", _init("2025-06-18")))  # the SDK's own answer to a second handshake
        assert server.answer()["id"] == 5
        server.send(_request(6, "tools/list"))
        assert server.answer()["result"] == listed["result"]
    finally:
        assert server.close() == 0


def test_a_stateless_client_is_answered_in_the_sdk_s_own_era(memory_home, tmp_path):
    """Claude Code opens with `server/discover` (the 2026 stateless protocol): the front answers it and the lists
    as the SDK does, and the SDK then serves the same era (it gets a copy of the discover first)."""
    from memtui.mcp.describe import envelope
    from memtui.mcp.front import load_handshake

    recorded = load_handshake()
    [version] = recorded["modern_versions"]
    params = envelope(version, CLAUDE_CAPABILITIES)
    server = HeldBack(tmp_path / "release")
    try:
        server.modules_at_start()
        server.send(_request("server-discover-probe-1", "server/discover", params))
        discovered = server.answer()
        assert discovered["result"] == recorded["answers"][version]["server/discover"]
        assert version in discovered["result"]["supportedVersions"]
        listen = {
            **params,
            "notifications": {k: True for k in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")},
        }
        server.send(_request("listen:0", "subscriptions/listen", listen))  # Claude Code waits for its acknowledgement
        ack = server.answer()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen:0"
        server.send(_request(1, "tools/list", params))
        listed = server.answer()["result"]
        assert {t["name"] for t in listed["tools"]} == {"memory_search", "memory_read", "memory_cite"}
        call = {**params, "name": "memory_read", "arguments": {"path": "MEMORY.md", "start_line": 3, "end_line": 3}}
        server.send(_request(2, "tools/call", call))
        (tmp_path / "release").touch()
        called = server.answer()
        assert (
            called["id"] == 2 and called["result"]["structuredContent"]["text"] == "- the flamingo cache must be warmed"
        )
        server.send(_request(3, "tools/list", params))
        assert server.answer()["result"] == listed  # now the SDK's own answer (and no second acknowledgement)
        server.send(_request(4, "initialize", _init("2025-06-18")))  # the SDK serves one era per connection
        assert "error" in server.answer()
    finally:
        assert server.close() == 0
