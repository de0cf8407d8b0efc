"""``memtui phase2``: consolidate the selected memories into MEMORY.md and memory_summary.md, for review."""

from __future__ import annotations

import argparse
import sys

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.services.search import try_refresh_memory_index


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "phase2",
        help=COMMANDS["phase2"],
        description="Select stage-1 memories, sync them into the memory root, and when anything changed since the "
        "approved baseline, consolidate them. The result awaits `memtui review approve|reject` unless --auto-approve.",
    )
    p.add_argument("--offline", action="store_true", default=None, help="deterministic merge, no model")
    p.add_argument(
        "--force",
        action="store_true",
        help="run now: skip the success cooldown and the failure backoff (never the lock)",
    )
    p.add_argument(
        "--retry", action="store_true", help="run now after a failed run (the backoff holds back automatic runs only)"
    )
    p.add_argument("--auto-approve", action="store_true", help="approve the result right away")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtui.services.phase2.consolidate import run_phase2
    from memtui.services.phase2.outcome import Outcome

    ctx = make_context()
    try:
        result = run_phase2(
            ctx,
            offline=args.offline,
            force=args.force,
            retry=args.retry,
            auto_approve=args.auto_approve,
            progress=lambda msg: print(f"phase2: {msg}", file=sys.stderr, flush=True),
        )
        if problem := try_refresh_memory_index(ctx.conn, ctx.paths.memory_root):
            print(f"phase2: {problem}", file=sys.stderr)
    finally:
        ctx.close()
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(result.message())
        for status, path in result.stat:
            print(f"  {status} {path}")
    return 1 if result.outcome is Outcome.FAILED else 0
