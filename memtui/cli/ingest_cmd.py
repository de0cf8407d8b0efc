"""``memtui ingest``: index the Codex and Claude Code rollouts; progress on stderr, a summary on stdout."""

from __future__ import annotations

import argparse
import sqlite3
import sys

from memtui.cli import COMMANDS
from memtui.cli.common import Progress, make_context, print_json
from memtui.services.context import Context
from memtui.services.ingest import IngestSummary, run_ingest
from memtui.services.search import refresh


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help=COMMANDS["ingest"],
        description="Index every Codex and Claude Code rollout into the state database. Unchanged files "
        "(same size and mtime) are not re-read. Only the state database under MEMTUI_HOME is written.",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context(creates_home=True)  # the first step: a new home starts here
    bar = Progress("ingest")
    try:
        summary = run_ingest(ctx, progress=lambda done, total, path: _tick(bar, done, total, path))
        bar.done()
        index_for_search(ctx)
    finally:
        bar.done()
        ctx.close()
    if not summary.files:
        print(
            f"memtui ingest: no rollout files under {ctx.paths.codex_sessions}, {ctx.paths.codex_archived} or "
            f"{ctx.paths.claude_projects} (set CODEX_HOME / CLAUDE_CONFIG_DIR, or codex_home / claude_dir)",
            file=sys.stderr,
        )
    if args.json:
        print_json(summary.model_dump())
    else:
        print(render(summary))
    return 0


def index_for_search(ctx: Context) -> None:
    """Keep the search index in step with the rollouts just ingested (only new or changed ones are read)."""
    bar = Progress("search index")
    try:
        stats = refresh(ctx.conn, ctx.paths.memory_root, progress=lambda done, total: _count(bar, done, total))
    except (sqlite3.Error, OSError) as exc:  # the ingest itself succeeded: say so, and let the next run index
        print(
            f"memtui ingest: the search index was not updated ({exc}); the next ingest or search retries",
            file=sys.stderr,
        )
        return
    finally:
        bar.done()
    if stats.threads_indexed or stats.docs_removed:
        print(f"memtui ingest: {stats.message()}", file=sys.stderr)


def _count(bar: Progress, done: int, total: int) -> None:
    bar.total = total
    bar.update(done, "rollouts")


def _tick(bar: Progress, done: int, total: int, path: str) -> None:
    bar.total = total
    bar.update(done, path.rsplit("/", 1)[-1])


def render(s: IngestSummary) -> str:
    lines = [
        f"files      {s.files}",
        f"new        {s.new}",
        f"updated    {s.updated}",
        f"unchanged  {s.unchanged}",
        f"skipped    {s.skipped}",
    ]
    lines += [f"  {n:>6}  {reason}" for reason, n in sorted(s.skipped_by_reason.items(), key=lambda kv: -kv[1])]
    if s.missing:
        lines.append(f"missing    {s.missing} (files gone since the last run; their threads are flagged)")
    lines += [
        f"lines skipped    {s.lines_skipped}",
        f"citations found  {s.citations_found}",
        f"seconds          {s.seconds:.2f}",
    ]
    lines += [f"warning: {w}" for w in s.warnings]
    if s.cancelled:
        lines.append("cancelled: the files read so far are saved; run again to continue")
    return "\n".join(lines)
