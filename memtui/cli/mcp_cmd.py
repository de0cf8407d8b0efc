"""``memtui mcp``: serve the memory to agents over MCP (stdio)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="stdio MCP server: memory_search, memory_read, memory_cite and the read-path resource",
        description="Add it to an agent with `codex mcp add memtui -- memtui mcp --project DIR` or "
        "`claude mcp add memtui -- memtui mcp --project DIR`.",
    )
    p.add_argument(
        "--project",
        type=Path,
        help="serve only this project's memory, as `memtui export --project DIR` does (default: the client's "
        "first root when it sends one, else every project)",
    )
    p.set_defaults(func=run, before_start_up=take_the_wire)


def take_the_wire(args: argparse.Namespace) -> None:
    """Start answering the client's handshake (``memtui.mcp.front``) before the settings, the database and the MCP
    SDK load: agents send their first model request without waiting long for a server."""
    if args.func is run:
        from memtui.mcp.front import start

        args.front = start()


def run(args: argparse.Namespace) -> int:
    from memtui.cli.common import make_context
    from memtui.mcp.server import serve

    front, wire = getattr(args, "front", None) or (None, None)
    serve(make_context(), args.project, front, wire)
    return 0
