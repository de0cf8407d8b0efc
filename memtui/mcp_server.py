"""``memtui mcp``: a stdio MCP server that lets agents search, read and cite the memory where they work.

Built on the official ``mcp`` SDK (``MCPServer``). Tools: ``memory_search`` (the bm25 index, optionally one
project's), ``memory_read`` (a file of the memory root, or a line range; confined to the root like the consolidation
agent's tools), ``memory_cite`` (parse, validate and count a citation block, as ``memtui cite record``). Resources:
the read-path block (instructions plus memory_summary.md) and memory_summary.md itself. The memory root is read-only
here: nothing an agent sends through this server changes memory.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from memtui.context import Context
from memtui.export import render_prompt
from memtui.trust.export import trusted_text

SERVER_NAME = "memtui"
READ_PATH_URI = "memtui://read-path"
SUMMARY_URI = "memtui://memory_summary.md"
MAX_READ_LINES = 2_000
MAX_READ_BYTES = 256 * 1024
INSTRUCTIONS = (
    "Long-term memory distilled from this user's earlier coding-agent sessions. Read the memtui://read-path "
    "resource first; search with memory_search (pass project = the current working directory to keep to this "
    "project), open lines with memory_read, and when memory informed an answer, send its citation block to "
    "memory_cite."
)


class PathRefused(ValueError):
    """A path outside the memory root (absolute, '..', a symlink out, or .git)."""


class ReadResult(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str


def confine(memory_root: Path, raw: str) -> tuple[str, Path]:
    """(relative path, resolved path) of ``raw`` inside the memory root, or PathRefused.

    Resolved first (symlinks and '..' followed), then checked with ``Path.is_relative_to`` against the resolved root,
    as the consolidation agent's tools do; the private .git folder is refused too."""
    if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
        raise PathRefused("path must be a non-empty path relative to the memory root")
    text = raw.strip().replace("\\", "/")
    if text.startswith(("/", "~")) or os.path.isabs(text):
        raise PathRefused(f"{raw!r}: absolute paths are refused; give a path relative to the memory root")
    root = memory_root.resolve()
    target = (root / text).resolve()
    if not target.is_relative_to(root):
        raise PathRefused(f"{raw!r}: resolves outside the memory root")
    rel = target.relative_to(root)
    if rel.parts and rel.parts[0].lower() == ".git":
        raise PathRefused(f"{raw!r}: the .git folder is private to memtui")
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else ".", target


def read_range(
    memory_root: Path,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    *,
    include_untrusted: bool = False,
) -> ReadResult:
    rel, target = confine(memory_root, path)
    if not target.is_file():
        raise FileNotFoundError(f"{path!r} is not a file of the memory root")
    with target.open("rb") as fh:
        data = fh.read(MAX_READ_BYTES * 64)
    # Untrusted statements become a placeholder line, so the line numbers agents cite stay the file's.
    text = trusted_text(data.decode("utf-8", errors="replace"), include_untrusted=include_untrusted, keep_lines=True)
    lines = text.text.splitlines()
    total = len(lines)
    start = max(1, start_line or 1)
    end = min(total, end_line if end_line is not None else start + MAX_READ_LINES - 1)
    if start_line is not None and end_line is not None and end_line < start_line:
        raise ValueError("end_line is before start_line")
    if start > max(total, 1):
        raise ValueError(f"start_line {start} is past the end of {rel} ({total} lines)")
    chosen = lines[start - 1 : end]
    text = "\n".join(chosen)
    if len(text.encode()) > MAX_READ_BYTES:
        text = text.encode()[:MAX_READ_BYTES].decode("utf-8", errors="ignore")
        end = start + text.count("\n")
    return ReadResult(path=rel, start_line=start, end_line=max(start, end), total_lines=total, text=text)


def build_server(ctx: Context) -> MCPServer:
    """The server over one memtui context. Tools run in worker threads; one lock serialises the state connection."""
    server = MCPServer(name=SERVER_NAME, instructions=INSTRUCTIONS)
    lock = threading.Lock()
    root = ctx.paths.memory_root

    @server.tool(
        description="Full-text search (bm25) over the memory files, rollout summaries, raw memories and "
        "past messages. Pass project (an absolute directory) to keep to that project and global notes. "
        "Hits give a memory file and line (open with memory_read) or a thread and item."
    )
    def memory_search(query: str, project: str | None = None, limit: int = 20) -> dict[str, Any]:
        from memtui.search import search_memory

        with lock:
            hits = search_memory(
                ctx.conn, root, query, project=Path(project) if project else None, limit=max(1, min(limit, 100))
            )
        return {"hits": [{**h.model_dump(), "location": h.location} for h in hits]}

    @server.tool(
        description="Read a file of the memory root (path relative to it, e.g. MEMORY.md), optionally only "
        "lines start_line..end_line (1-based, inclusive). Paths outside the memory root are refused."
    )
    def memory_read(path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any]:
        try:
            return read_range(
                root, path, start_line, end_line, include_untrusted=ctx.settings.export_tool_statements
            ).model_dump()
        except (PathRefused, FileNotFoundError, IsADirectoryError, ValueError) as exc:
            raise ToolError(str(exc)) from exc  # the agent sees why and may try again

    @server.tool(
        description="Record a memory citation: pass the <oai-mem-citation> block (or its entries and "
        "rollout ids) of an answer that memory informed. Checks every cited range and counts the usage."
    )
    def memory_cite(citation: str) -> dict[str, Any]:
        from memtui.citations.parse import parse_citations
        from memtui.citations.record import record_answer_citation

        parsed = parse_citations(citation)
        if parsed.citation is None:
            raise ToolError("no citation block found: send <citation_entries> and <rollout_ids> as in the read path")
        with lock:
            outcome, report = record_answer_citation(ctx.conn, root, parsed.citation, key_prefix="mcp")
        return {**outcome.model_dump(), "ok": report.ok, "dropped_lines": parsed.dropped_lines}

    @server.resource(
        READ_PATH_URI,
        name="read-path",
        mime_type="text/markdown",
        description="How to use and cite memtui's memory, with memory_summary.md",
    )
    def read_path() -> str:
        block = render_prompt(root, ctx.settings.bytes_per_token, include_untrusted=ctx.settings.export_tool_statements)
        return block or "memtui has no memory summary yet: nothing to read."

    @server.resource(
        SUMMARY_URI,
        name="memory_summary.md",
        mime_type="text/markdown",
        description="The overview of everything in memory",
    )
    def memory_summary() -> str:
        path = root / "memory_summary.md"
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        return trusted_text(text, include_untrusted=ctx.settings.export_tool_statements).text

    return server


def serve(ctx: Context) -> None:
    """Run over stdin/stdout until the client closes the connection."""
    ctx.paths.ensure()
    ctx.conn  # noqa: B018  (open and migrate before the first request: an unusable database fails loudly now)
    try:
        build_server(ctx).run("stdio")
    finally:
        ctx.close()
