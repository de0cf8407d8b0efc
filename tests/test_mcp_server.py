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
