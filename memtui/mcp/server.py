"""``memtui mcp``: a stdio MCP server that lets agents search, read and cite the memory where they work.

Built on the official ``mcp`` SDK (``MCPServer``). Tools: ``memory_search`` (the bm25 index), ``memory_read`` (a
file of the memory root, or a line range; confined to the root like the consolidation agent's tools),
``memory_cite`` (parse and check a citation block). Resources: the read-path block and memory_summary.md. Every tool
is read-only and says so in its annotations (clients then need no approval per call); every input schema refuses
unknown arguments and out-of-range numbers, and a refused call is an ``isError`` result that says why.

Counting: a citation counts once, when ingest reads the agent's reply that carries it (key
``<thread id>#<citation fingerprint>#<n>``, see ``citations.usage``). ``memory_cite`` only checks a block, so calling it
any number of times counts nothing twice.

Scope: ``memtui mcp --project DIR`` (or, without it, the first ``file://`` root the client sends) serves only what
``memtui export --project DIR`` would give (``mcp_scope``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Any, cast

import anyio
from mcp.server.mcpserver import Context as McpContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memtui.adapters.memroot.files import MEMORY_SUMMARY
from memtui.mcp.front import Front, Wire
from memtui.mcp.scope import McpScope, root_directory
from memtui.services.agent_view import AgentView, NotInView, OutOfScope, PathRefused
from memtui.services.agent_view import confine as agent_confine
from memtui.services.context import Context, NoHome
from memtui.services.export import render_prompt

SERVER_NAME = "memtui"
READ_PATH_URI = "memtui://read-path"
SUMMARY_URI = "memtui://memory_summary.md"
MAX_READ_LINES = 2_000
MAX_READ_BYTES = 256 * 1024
INSTRUCTIONS = (
    "Long-term memory distilled from this user's earlier coding-agent sessions. Read the memtui://read-path "
    "resource first; search with memory_search, open lines with memory_read. When memory informed an answer, "
    "end the answer with its citation block (that is what counts the use); memory_cite checks a block first."
)
# Every tool only reads: the memory root and the usage counts are unchanged by any call.
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


class ReadResult(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    hidden_lines: int = 0  # lines of other projects blanked by a scoped server


def confine(memory_root: Path, raw: str) -> tuple[str, Path]:
    """(relative path, resolved path) of ``raw`` inside the memory root, or PathRefused (``agent_view.confine``)."""
    rel = agent_confine(memory_root, raw)
    return rel, memory_root.resolve() / rel


def read_range(
    memory_root: Path,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    scope: McpScope | None = None,
    *,
    include_untrusted: bool = False,
    view: AgentView | None = None,
) -> ReadResult:
    """Lines of one file as agents read it (``services.agent_view``): the approved baseline with trust, hidden
    characters and scope applied; untrusted statements are a placeholder line, so cited line numbers stay the file's."""
    view = view or AgentView(memory_root, include_untrusted=include_untrusted, scope=scope)
    f = view.file(path)
    lines = f.lines
    total = len(lines)
    start = max(1, start_line or 1)
    end = min(total, end_line if end_line is not None else start + MAX_READ_LINES - 1)
    if start_line is not None and end_line is not None and end_line < start_line:
        raise ValueError("end_line is before start_line")
    if start > max(total, 1):
        raise ValueError(f"start_line {start} is past the end of {f.rel} ({total} lines)")
    chosen = lines[start - 1 : end]
    hidden = sum(1 for n in range(start, end + 1) if n in f.blanked_lines)
    text = "\n".join(chosen)
    if len(text.encode()) > MAX_READ_BYTES:
        text = text.encode()[:MAX_READ_BYTES].decode("utf-8", errors="ignore")
        end = start + text.count("\n")
    return ReadResult(
        path=f.rel, start_line=start, end_line=max(start, end), total_lines=total, text=text, hidden_lines=hidden
    )


def build_server(ctx: Context, project: Path | None = None) -> MCPServer:
    """The server over one memtui context, scoped to ``project`` when given (else to the client's first root, if it
    sends any). One lock serialises the state connection across worker threads."""
    server = MCPServer(name=SERVER_NAME, instructions=INSTRUCTIONS)
    lock = threading.Lock()
    root = ctx.paths.memory_root
    fixed = McpScope(project.expanduser().resolve(), f"--project {project}") if project is not None else None
    from_roots: list[McpScope | None] = []  # asked once per connection

    def no_home() -> str | None:
        """While the home does not exist (a person who registered the server before their first ingest), every
        answer is empty and says why; the home is looked for again on each call, so no restart is needed."""
        try:
            ctx.require_home()
        except NoHome:
            return (
                f"memtui has no memory yet: there is no memtui home at {ctx.paths.home}. The user creates it with "
                "`memtui ingest`; memory reaches you once they approve a consolidation."
            )
        return None

    async def current_scope(mcp_ctx: McpContext | None) -> McpScope | None:
        if fixed is not None or mcp_ctx is None:
            return fixed
        if not from_roots:
            from_roots.append(await _scope_from_roots(mcp_ctx))
        return from_roots[0]

    @server.tool(
        description="Full-text search (bm25) over the memory files, rollout summaries, raw memories and "
        "past messages. Pass project (an absolute directory) to keep to that project and global notes. "
        "Hits give a memory file and line (open with memory_read) or a thread and item.",
        annotations=READ_ONLY,
    )
    async def memory_search(
        query: Annotated[str, Field(min_length=1, max_length=2_000)],
        project: Annotated[str | None, Field(max_length=4_096)] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        mcp_ctx: McpContext | None = None,
    ) -> dict[str, Any]:
        from memtui.services.search import search_memory

        scope = await current_scope(mcp_ctx)
        where = Path(project).expanduser() if project else None
        if where is not None and not where.is_absolute():
            raise ToolError(f"project must be an absolute directory, not {project!r}")
        if scope is not None:
            if where is not None and not where.resolve().is_relative_to(scope.project):
                raise ToolError(f"this server is scoped to {scope.project} ({scope.why}); {project} is outside it")
            where = where or scope.project
        elif where is not None:  # an unscoped server asked for one project: the project's whole scope applies
            scope = McpScope(where.resolve(), f"project={project}")

        missing = no_home()
        if missing is not None:
            return {"hits": [], "note": missing}
        view = AgentView(root, include_untrusted=ctx.settings.export_tool_statements, scope=scope)

        def run() -> list[Any]:
            with lock:
                return search_memory(ctx.conn, root, query, view=view, project=where, limit=limit)

        hits = await anyio.to_thread.run_sync(run)
        return {"hits": [{**h.model_dump(), "location": h.location} for h in hits]}

    @server.tool(
        description="Read a file of the memory root (path relative to it, e.g. MEMORY.md), optionally only "
        "lines start_line..end_line (1-based, inclusive). Paths outside the memory root are refused.",
        annotations=READ_ONLY,
    )
    async def memory_read(
        path: Annotated[str, Field(min_length=1, max_length=4_096)],
        start_line: Annotated[int | None, Field(ge=1)] = None,
        end_line: Annotated[int | None, Field(ge=1)] = None,
        mcp_ctx: McpContext | None = None,
    ) -> dict[str, Any]:
        scope = await current_scope(mcp_ctx)
        missing = no_home()
        if missing is not None:
            raise ToolError(missing)
        try:
            return read_range(
                root, path, start_line, end_line, scope, include_untrusted=ctx.settings.export_tool_statements
            ).model_dump()
        except (PathRefused, OutOfScope, NotInView, IsADirectoryError, ValueError) as exc:
            raise ToolError(str(exc)) from exc  # the agent sees why and may try again

    @server.tool(
        description="Check a memory citation before ending an answer with it: pass the <oai-mem-citation> block. "
        "Says which cited ranges are stale or unknown and which rollout ids hold a memory. Counts nothing: the "
        "block in your reply is what counts the use, once, so calling this again changes nothing.",
        annotations=READ_ONLY,
    )
    async def memory_cite(
        citation: Annotated[str, Field(min_length=1, max_length=64_000)], mcp_ctx: McpContext | None = None
    ) -> dict[str, Any]:
        from memtui.services.citations.check import check_citation
        from memtui.services.citations.parse import parse_citations
        from memtui.services.citations.usage import fingerprint

        parsed = parse_citations(citation)
        found = parsed.citation
        if found is None:
            raise ToolError("no citation block found: send <citation_entries> and <rollout_ids> as in the read path")
        missing = no_home()
        if missing is not None:
            raise ToolError(missing)

        view = AgentView(
            root, include_untrusted=ctx.settings.export_tool_statements, scope=await current_scope(mcp_ctx)
        )

        def run() -> Any:
            with lock:
                return check_citation(root, found, ctx.conn, view)

        report = await anyio.to_thread.run_sync(run)
        return {
            "ok": report.ok,
            "counted": False,
            "counts_when": "ingest reads the reply that ends with this block (once per reply)",
            "fingerprint": fingerprint(found),
            "check": report.to_json(),
            "dropped_lines": parsed.dropped_lines,
        }

    @server.resource(
        READ_PATH_URI,
        name="read-path",
        mime_type="text/markdown",
        description="How to use and cite memtui's memory, with memory_summary.md (the project's memory when scoped)",
    )
    def read_path() -> str:
        missing = no_home()
        if missing is not None:
            return missing
        scope = fixed or (from_roots[0] if from_roots else None)
        if scope is not None:
            from memtui.services.export.scope import render_project_prompt

            block = render_project_prompt(
                root, scope.project, ctx.settings.bytes_per_token, include_untrusted=ctx.settings.export_tool_statements
            )
            return block or f"memtui has no memory for {scope.project} yet: nothing to read."
        block = render_prompt(root, ctx.settings.bytes_per_token, include_untrusted=ctx.settings.export_tool_statements)
        return block or "memtui has no memory summary yet: nothing to read."

    @server.resource(
        SUMMARY_URI,
        name="memory_summary.md",
        mime_type="text/markdown",
        description="The overview of everything in memory (a scoped server refuses it: it spans every project)",
    )
    def memory_summary() -> str:
        scope = fixed or (from_roots[0] if from_roots else None)
        if scope is not None:
            return f"memory_summary.md spans every project; this server is scoped to {scope.project} ({scope.why})."
        view = AgentView(root, include_untrusted=ctx.settings.export_tool_statements)
        try:
            return view.text(MEMORY_SUMMARY, placeholders=False)
        except NotInView:
            return ""

    _strict_arguments(server)
    return server


async def _scope_from_roots(mcp_ctx: McpContext) -> McpScope | None:
    """The project of the client's first ``file://`` root, when the client declares roots; None otherwise."""
    try:
        caps = mcp_ctx.client_capabilities
    except (LookupError, ValueError):  # called in-process, outside a client's request: no roots to ask
        return None
    if caps is None or getattr(caps, "roots", None) is None:
        return None
    try:
        listed = await mcp_ctx.session.list_roots()
    except Exception:  # a client that declared roots but cannot list them: serve unscoped, as without roots
        return None
    for r in listed.roots:
        folder = root_directory(str(r.uri))
        if folder is not None:
            from memtui.services.export.scope import project_of_cwd

            return McpScope(project_of_cwd(folder), f"the client's root {r.uri}")
    return None


def _strict_arguments(server: MCPServer) -> None:
    """Refuse unknown arguments: each tool's argument model and published schema get ``additionalProperties:
    false`` (the SDK's models ignore extra keys)."""
    for tool in server._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        # three-argument ``type`` builds a subclass of ``base``; typeshed can only call it ``type``
        strict = cast(
            "type[ArgModelBase]",
            type(
                base.__name__,
                (base,),
                {"model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True), "__module__": __name__},
            ),
        )
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)


def serve(ctx: Context, project: Path | None = None, front: Front | None = None, wire: Wire | None = None) -> None:
    """Run over stdin/stdout until the client closes the connection; behind ``front`` (which took the wire and
    answered the handshake while this module loaded) when given."""
    try:
        try:
            ctx.conn  # noqa: B018  (open and migrate before the first tool call: an unusable database fails loudly)
        except NoHome as exc:  # an empty memory, not a failure: the agent keeps working, each answer says why
            print(f"memtui mcp: serving an empty memory until the home exists: {exc}", file=sys.stderr)
        server = build_server(ctx, project)
        if front is None or wire is None:
            server.run("stdio")
        else:
            anyio.run(serve_lines, server, front, wire.write)
    finally:
        ctx.close()


async def serve_lines(server: MCPServer, front: Front, write: Callable[[bytes], None]) -> None:
    """The SDK server over the front's inbox (the client's lines in order, from the copy of its ``initialize``
    on) and ``write``, through the SDK's own stdio framing (``stdio_server`` with explicit streams)."""
    stdin = cast("anyio.AsyncFile[str]", anyio.wrap_file(cast("IO[str]", _Inbox(front))))
    stdout = cast("anyio.AsyncFile[str]", anyio.wrap_file(cast("IO[str]", _Outbox(front, write))))
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
        front.hand_off()
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class _Inbox:
    """The front's queue as the text file ``stdio_server`` reads lines from."""

    def __init__(self, front: Front) -> None:
        self._front = front

    def readline(self) -> str:
        line = self._front.inbox.get()
        return "" if line is None else line.decode("utf-8", errors="replace")


class _Outbox:
    """The text file ``stdio_server`` writes frames to: each goes to the wire, but for the answer to the front's
    copy of ``initialize``."""

    def __init__(self, front: Front, write: Callable[[bytes], None]) -> None:
        self._front, self._write, self._pending = front, write, ""

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            out = self._front.sdk_output(line.encode() + b"\n")
            if out is not None:
                self._write(out)
        return len(text)

    def flush(self) -> None:
        return None
