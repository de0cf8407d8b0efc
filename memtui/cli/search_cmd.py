"""``memtui search``: full-text search over the approved memory and the redacted messages of past sessions (session
history), ranked by bm25, under the rules agents read by (``services.agent_view``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.cli import COMMANDS
from memtui.cli.common import Progress, make_context, positive_int, print_json
from memtui.services.search import DEFAULT_LIMIT, refresh, search_memory


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help=COMMANDS["search"],
        description="Every word must match (stemmed). Hits give a file and line of the approved memory, or a "
        "session-history message (a thread and its item: the N-th memory item of the rollout). Nothing awaiting "
        "review, and no session you opted out of or forgot, is a hit. The index is brought up to date first.",
    )
    p.add_argument("query", nargs="+", help="words to find")
    p.add_argument("--project", type=Path, help="only this project's text and text tied to no project")
    p.add_argument(
        "--limit", type=positive_int, default=DEFAULT_LIMIT, help=f"at most this many hits (default {DEFAULT_LIMIT})"
    )
    p.add_argument("--json", action="store_true", help="a JSON list of hits")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context()
    query = " ".join(args.query)
    bar = Progress("search index")
    try:
        stats = refresh(ctx.conn, ctx.paths.memory_root, progress=lambda done, total: _tick(bar, done, total))
        bar.done()
        if stats.files_indexed or stats.threads_indexed or stats.docs_removed:
            print(f"memtui search: {stats.message()}", file=sys.stderr)
        hits = search_memory(ctx.conn, ctx.paths.memory_root, query, project=args.project, limit=max(1, args.limit))
        from memtui.services.views import thread_titles

        titles = thread_titles(ctx.conn, [h.source for h in hits if h.kind != "memory"])
    finally:
        ctx.close()
    if args.json:
        print_json(
            [{**h.model_dump(), "location": h.location, "title": titles.get(h.source) if h.kind != "memory" else None}
             for h in hits]
        )  # fmt: skip
        return 0 if hits else 1
    for h in hits:
        named = f"  “{titles[h.source]}”" if h.kind != "memory" and h.source in titles else ""
        print(f"{h.location}{named}\n    {h.snippet}")
    if not hits:
        print(f"no match for {query!r}", file=sys.stderr)
    return 0 if hits else 1


def _tick(bar: Progress, done: int, total: int) -> None:
    bar.total = total
    bar.update(done, "rollouts")
