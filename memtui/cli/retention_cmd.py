"""``memtui retention``: the retention prune and opt-outs, as every Phase 1 and Phase 2 run does first."""

from __future__ import annotations

import argparse

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retention",
        help=COMMANDS["retention"],
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_housekeeping(bool(args.json))


def run_housekeeping(as_json: bool) -> int:
    """Shared with ``memtui forget --expired``."""
    from dataclasses import asdict

    from memtui.services.retention import housekeeping

    ctx = make_context()
    try:
        done = housekeeping(ctx)
    finally:
        ctx.close()
    if as_json:
        print_json(asdict(done))
    else:
        print(
            "\n".join(done.lines())
            or "retention: nothing expired (a memory goes once a consolidation has read it and it stays unselected "
            f"and unused for max_unused_days = {ctx.settings.max_unused_days} days), no opt-outs"
        )
    return 0
