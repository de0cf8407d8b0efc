"""``memtui mcp`` as agents meet it, through the MCP SDK's own client over stdio: annotations, a cite that counts
nothing twice, strict input schemas, and the project scope (``--project`` and the client's roots)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ListRootsResult, Root

from memtui.services.context import open_context
from memtui.state.db import immediate
from tests.conftest import approve_root
from tests.test_mcp_server import THREAD, _data, _usage
from tests.test_phase2_support import add_output

# Every test here starts `memtui mcp` as an agent does (a process importing the MCP SDK, about a second each):
# CI runs them; the day-to-day tier keeps tests/test_mcp_server.py's own stdio round trip.
pytestmark = pytest.mark.slow

OTHER = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5c"
MEMORY = (
    "# Task Group: shop\napplies_to: cwd=/work/shop; reuse_rule=x\n- the flamingo cache must be warmed\n\n"
    "# Task Group: bank\napplies_to: cwd=/work/bank; reuse_rule=y\n- the flamingo ledger is append-only\n\n"
    "# Task Group: everywhere\napplies_to: global\n- the user wants flamingo-free commit messages\n"
)


@pytest.fixture
def two_projects() -> Path:
    ctx = open_context()
    ctx.paths.ensure()
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text(MEMORY)
    (root / "memory_summary.md").write_text("v1\n## What's in Memory\n- flamingo notes of shop and bank\n")
    (root / "raw_memories.md").write_text("flamingo raw notes of every project\n")
    (root / "rollout_summaries").mkdir()
    (root / "rollout_summaries" / "bank.md").write_text("thread_id: x\ncwd: /work/bank\n\n# bank flamingo\n")
    (root / "rollout_summaries" / "shop.md").write_text("thread_id: y\ncwd: /work/shop\n\n# shop flamingo\n")
    approve_root(root)  # agents read the approved baseline only
    with immediate(ctx.conn):
        add_output(ctx.conn, THREAD, 100, cwd="/work/shop", raw="shop flamingo raw", summary="# shop flamingo")
        add_output(ctx.conn, OTHER, 100, cwd="/work/bank", raw="bank flamingo raw", summary="# bank flamingo")
    ctx.close()
    return root


def _params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "memtui", "mcp", *extra], env=dict(os.environ))


async def test_every_tool_is_annotated_read_only_and_idempotent(two_projects):
    async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert {t.name for t in tools} == {"memory_search", "memory_read", "memory_cite"}
        for t in tools:
            a = t.annotations
            assert a is not None, t.name
            assert (a.read_only_hint, a.idempotent_hint, a.destructive_hint) == (True, True, False), t.name


async def test_cite_three_times_counts_nothing_and_the_reply_counts_once(two_projects):
    block = (
        "<oai-mem-citation>\n<citation_entries>\nMEMORY.md:3-3|note=[cache]\n</citation_entries>\n"
        f"<rollout_ids>\n{THREAD}\n</rollout_ids>\n</oai-mem-citation>"
    )
    async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        results = [_data(await session.call_tool("memory_cite", {"citation": block})) for _ in range(3)]
    assert len({r["fingerprint"] for r in results}) == 1 and all(r["counted"] is False for r in results)
    assert _usage(THREAD) is None
    # The one counting path: the reply that carries the block, counted once however often it is ingested.
    from memtui.services.citations.parse import parse_citations
    from memtui.services.citations.usage import FoundCitation, record_rollout_citations

    ctx = open_context()
    try:
        found = [FoundCitation(key="t:1", kind="message", text=block, structured=None)]
        for _ in range(2):
            record_rollout_citations(ctx.conn, "reply-thread", found, memory_root=two_projects)
        assert parse_citations(block).citation is not None
    finally:
        ctx.close()
    assert _usage(THREAD) == 1


async def test_schemas_refuse_unknown_arguments_and_bad_numbers(two_projects):
    async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for t in (await session.list_tools()).tools:
            assert t.input_schema.get("additionalProperties") is False, t.name
        schema = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        assert schema["memory_read"]["properties"]["start_line"]["anyOf"][0]["minimum"] == 1
        bad_calls = [
            ("memory_read", {"path": "MEMORY.md", "start_line": -3}, "greater than or equal to 1"),
            ("memory_read", {"path": "MEMORY.md", "mode": "raw"}, "Extra inputs are not permitted"),
            ("memory_search", {"query": "flamingo", "limit": 0}, "greater than or equal to 1"),
            ("memory_search", {"query": "flamingo", "scope": "all"}, "Extra inputs are not permitted"),
            ("memory_cite", {"citation": ""}, "at least 1 character"),
        ]
        for name, args, why in bad_calls:
            result = await session.call_tool(name, args)
            assert result.is_error, (name, args)
            assert why in result.content[0].text, result.content[0].text


async def _scoped_checks(session: ClientSession) -> None:
    found = _data(await session.call_tool("memory_search", {"query": "flamingo", "limit": 50}))
    sources = {(h["kind"], h["source"], h["project"]) for h in found["hits"]}
    assert ("memory", "MEMORY.md", "/work/shop") in sources  # its own group
    assert any(s[1] == "MEMORY.md" and s[2] == "" for s in sources)  # the global group
    assert not any("bank" in s[2] for s in sources), sources
    assert not any(s[1] in ("memory_summary.md", "raw_memories.md") for s in sources), sources
    outside = await session.call_tool("memory_search", {"query": "flamingo", "project": "/work/bank"})
    assert outside.is_error and "scoped to" in outside.content[0].text

    for refused in ("raw_memories.md", "memory_summary.md", "rollout_summaries/bank.md"):
        result = await session.call_tool("memory_read", {"path": refused})
        assert result.is_error and "scoped to" in result.content[0].text, refused
    assert not (await session.call_tool("memory_read", {"path": "rollout_summaries/shop.md"})).is_error
    whole = _data(await session.call_tool("memory_read", {"path": "MEMORY.md"}))
    assert "flamingo cache" in whole["text"] and "commit messages" in whole["text"]
    assert "ledger" not in whole["text"] and whole["hidden_lines"] == 3
    assert whole["text"].splitlines()[2] == "- the flamingo cache must be warmed"  # line numbers stay true

    read_path = (await session.read_resource("memtui://read-path")).contents[0].text
    assert "flamingo cache" in read_path and "ledger" not in read_path
    summary = (await session.read_resource("memtui://memory_summary.md")).contents[0].text
    assert "shop and bank" not in summary and "scoped to" in summary


async def test_project_flag_scopes_every_tool_and_resource_as_export_does(two_projects):
    async with stdio_client(_params("--project", "/work/shop")) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await _scoped_checks(s)


async def test_client_roots_scope_the_server_without_the_flag(two_projects):
    async def roots(_ctx) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work/shop")])

    async with stdio_client(_params()) as (read, write), ClientSession(read, write, list_roots_callback=roots) as s:
        await s.initialize()
        await _scoped_checks(s)
