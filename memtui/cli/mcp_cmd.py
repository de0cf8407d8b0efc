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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtui.cli.common import make_context
    from memtui.mcp.server import serve

    serve(make_context(), args.project)
    return 0
