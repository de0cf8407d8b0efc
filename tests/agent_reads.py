"""Every read path that hands memory to an agent, driven as agents drive it (no tests here).

``agent_reads`` returns what each path served, by name: the ``memtui export`` commands (prompt, per project,
AGENTS.md / CLAUDE.md in both scopes), every file in the folder their prompt tells the agent to search, ``memtui
search``, and every tool and resource the MCP server lists. A tool or
resource this module does not know how to call fails loudly, so a new agent-facing path cannot join the server
without being checked against the approved baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

from memtui.cli import main
from memtui.mcp.server import build_server
from memtui.services.context import Context

PROJECT = "/work/proj"


def _cli(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(argv)
    return out.getvalue() + err.getvalue()


def _mcp_args(name: str, marker: str, files: list[str]) -> list[dict[str, Any]]:
    if name == "memory_search":
        return [{"query": marker}, {"query": marker, "project": PROJECT}]
    if name == "memory_read":
        return [{"path": rel} for rel in files]
    if name == "memory_cite":
        entries = "\n".join(f"{rel}:1-3|note=[x]" for rel in files)
        return [{"citation": f"<oai-mem-citation>\n<citation_entries>\n{entries}\n</citation_entries>\n"
                 "<rollout_ids>\n</rollout_ids>\n</oai-mem-citation>"}]  # fmt: skip
    raise AssertionError(f"the MCP server has a tool {name!r} that tests/agent_reads.py does not drive: add it")


def _text(result: Any) -> str:
    if isinstance(result, tuple | list):
        return "\n".join(_text(r) for r in result)
    for attr in ("structured_content", "content", "text"):
        value = getattr(result, attr, None)
        if value is not None and not isinstance(value, str | dict):
            return _text(value)
        if value is not None:
            # non-ASCII as sent: a hidden character must be counted, not read as an escape
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return str(result)


def _files_under(prompt: str) -> str:
    """Every file in the folder the read-path prompt tells the agent to search (``rg`` reads what is there)."""
    found = re.search(r"They live in `([^`]+)`", prompt)
    if found is None:
        return ""
    base = Path(found.group(1)).expanduser()
    assert base.is_dir(), f"the read path names {base}, which is not a folder"
    return "".join(p.read_text(errors="replace") for p in sorted(base.rglob("*")) if p.is_file())


def agent_reads(ctx: Context, out_dir: Path, marker: str, files: list[str]) -> dict[str, str]:
    """{read path: what it served}. ``marker`` is the word searched for; ``files`` the memory files to open."""
    out_dir.mkdir(parents=True, exist_ok=True)
    served: dict[str, str] = {}
    served["export prompt"] = _cli(["export", "prompt"])
    served["export prompt --project"] = _cli(["export", "prompt", "--project", PROJECT])
    for scope in ("global", "project"):
        target = out_dir / f"CLAUDE-{scope}.md"
        extra = ["--project", PROJECT] if scope == "project" else []
        _cli(["export", "agents-md", "--scope", scope, *extra, str(target)])
        served[f"export agents-md --scope {scope}"] = target.read_text() if target.exists() else ""
    served["search"] = _cli(["search", marker, "--json"])
    for name in ("export prompt", "export prompt --project"):
        served[f"files under the base path of {name}"] = _files_under(served[name])

    async def mcp() -> None:
        server = build_server(ctx)
        for tool in await server.list_tools():
            for args in _mcp_args(tool.name, marker, files):
                try:
                    result = await server.call_tool(tool.name, args)
                except Exception as exc:  # a refusal (file not approved) is an answer too
                    result = str(exc)
                served[f"mcp tool {tool.name} {json.dumps(args)[:60]}"] = _text(result)
        for resource in await server.list_resources():
            served[f"mcp resource {resource.uri}"] = _text(await server.read_resource(resource.uri))

    asyncio.run(mcp())
    return served
