"""``memtui forget THREAD_ID``: forget a rollout and everything derived from it (``--undo`` lifts the mark)."""

from __future__ import annotations

import argparse
import sys

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "forget",
        help=COMMANDS["forget"],
    )
    p.add_argument("thread_id", nargs="?")
    p.add_argument("--reason", default=None, help="why (kept in the history)")
    p.add_argument("--undo", action="store_true", help="lift the mark: the rollout may be extracted again")
    p.add_argument(
        "--expired", action="store_true", help="run retention now (as `memtui retention`): unused outputs and opt-outs"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtui.services import forget

    if args.expired:
        from memtui.cli.retention_cmd import run_housekeeping

        return run_housekeeping(bool(args.json))
    if not args.thread_id:
        print("memtui forget: give a THREAD_ID (or --expired)", file=sys.stderr)
        return 2
    ctx = make_context()
    try:
        result = forget.unforget(ctx, args.thread_id) if args.undo else forget.forget(ctx, args.thread_id, args.reason)
    except forget.ForgetError as exc:
        print(f"memtui forget: {exc}", file=sys.stderr)
        return 1
    finally:
        ctx.close()
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(result.message())
        if result.forgotten:
            print(
                "run `memtui phase2` (it runs now, without the cooldown: you asked), then review and approve it to "
                "remove what was derived from it",
                file=sys.stderr,
            )
    return 0
