"""``memtui review``: show, approve or reject the Phase 2 run that awaits a decision."""

from __future__ import annotations

import argparse
import sys

from memtui.cli.common import make_context, print_json
from memtui.search import try_refresh_memory_index


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help="show, approve or reject the consolidation awaiting review")
    actions = p.add_subparsers(dest="review_action", metavar="ACTION")
    show = actions.add_parser("show", help="print the diff of the run awaiting review (or of your own edits)")
    show.add_argument("--stat", action="store_true", help="only the A/M/D file list")
    show.add_argument("--json", action="store_true")
    approve = actions.add_parser("approve", help="make the run's result the new memory baseline")
    approve.add_argument("--json", action="store_true")
    reject = actions.add_parser("reject", help="undo the run's changes and remember why")
    reject.add_argument("--reason", default=None, help="why; the next consolidation prompt includes it")
    reject.add_argument("--json", action="store_true")
    p.set_defaults(func=run, review_action=None, json=False)


def _stat_lines(stat: list[tuple[str, str]]) -> str:
    return "".join(f"{s} {p}\n" for s, p in stat) or "(no changes)\n"


def run(args: argparse.Namespace) -> int:
    from memtui.phase2 import review
    from memtui.phase2.baseline import BaselineError

    action = args.review_action or "show"
    ctx = make_context()
    try:
        if action == "show":
            stat_only = bool(getattr(args, "stat", False))
            run_ = review.pending_run(ctx.conn)
            if run_ is not None:
                stat, diff = run_.stat, run_.diff
                header = f"Phase 2 run #{run_.id} awaits review ({'offline' if run_.offline else run_.model})"
            else:
                stat, diff = review.workspace_diff(ctx)
                header = "No run awaits review; changes since the baseline (your own edits and new inputs)"
            if args.json:
                print_json({"run_id": run_.id if run_ else None, "stat": stat, "diff": None if stat_only else diff})
                return 0
            print(header, file=sys.stderr, flush=True)  # (stderr: a redirected diff stays a clean patch)
            sys.stdout.write(
                ("\n" if sys.stdout.isatty() else "") + (_stat_lines(stat) if stat_only or not diff else diff)
            )
            return 0
        if action == "approve":
            result = review.approve(ctx)
            msg = f"approved run #{result.run_id}: new baseline {result.commit}, watermark {result.watermark}"
        else:
            result = review.reject(ctx, args.reason)
            msg = f"rejected run #{result.run_id}: restored {len(result.restored)} file(s)"
            if result.kept:
                msg += f"; kept {', '.join(result.kept)} (edited after the run)"
        if problem := try_refresh_memory_index(ctx.conn, ctx.paths.memory_root):  # a rejected run's text leaves it
            print(f"memtui review: {problem}", file=sys.stderr)
        if args.json:
            print_json(result.model_dump(mode="json"))
        else:
            print(msg)
        return 0
    except (review.ReviewError, BaselineError) as exc:
        print(f"memtui review: {exc}", file=sys.stderr)
        return 1
    finally:
        ctx.close()
