"""``memtui review``: show, approve or reject the Phase 2 run that awaits a decision."""

from __future__ import annotations

import argparse
import sys

from memtui.cli.common import make_context, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help="show, approve or reject the consolidation awaiting review")
    actions = p.add_subparsers(dest="review_action", metavar="ACTION")
    show = actions.add_parser("show", help="print the diff of the run awaiting review (or of your own edits)")
    show.add_argument("--stat", action="store_true", help="only the A/M/D file list")
    show.add_argument("--hunks", action="store_true", help="list the hunks (ids for --except) and their evidence")
    show.add_argument("--json", action="store_true", help="stat, diff and hunks (id, ranges, hash, text, evidence)")
    approve = actions.add_parser("approve", help="make the run's result the new memory baseline")
    approve.add_argument(
        "--except",
        dest="except_ids",
        default="",
        metavar="ID[,ID...]",
        help="leave these hunks out (their lines stay as in the baseline); `review show --hunks` lists the ids",
    )
    approve.add_argument("--reason", default=None, help="why the hunks are left out; the next run is told")
    approve.add_argument("--json", action="store_true")
    reject = actions.add_parser("reject", help="undo the run's changes and remember why")
    reject.add_argument("--reason", default=None, help="why; the next consolidation prompt includes it")
    reject.add_argument("--json", action="store_true")
    p.set_defaults(func=run, review_action=None, json=False)


def _hunk_lines(hunks: list) -> str:
    out = []
    for h in hunks:
        plus = sum(1 for line in h.text.split("\n")[1:] if line.startswith("+"))
        minus = sum(1 for line in h.text.split("\n")[1:] if line.startswith("-"))
        out.append(f"{h.id}  {h.file}  -{h.old_start},{h.old_count} +{h.new_start},{h.new_count}  (+{plus} -{minus})\n")
        for e in h.evidence:
            out.append(
                f"    <- {e['thread_id']} {e.get('rollout_summary_file') or ''} score {e['score']}: {e['excerpt']}\n"
            )
    return "".join(out) or "(no hunks)\n"


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
            if args.json or getattr(args, "hunks", False):
                from memtui.review.evidence import hunk_infos

                hunks = hunk_infos(ctx, diff, run_)
            if args.json:
                print_json(
                    {
                        "run_id": run_.id if run_ else None,
                        "kind": run_.kind if run_ else None,
                        "stat": stat,
                        "diff": None if stat_only else diff,
                        "hunks": [h.model_dump(mode="json") for h in hunks],
                    }
                )
                return 0
            print(header, file=sys.stderr)
            if getattr(args, "hunks", False):
                sys.stdout.write(_hunk_lines(hunks))
                return 0
            sys.stdout.write(_stat_lines(stat) if stat_only or not diff else diff)
            return 0
        if action == "approve":
            except_ids = [i for i in (args.except_ids or "").split(",") if i.strip()]
            result = review.approve(ctx, except_ids=except_ids, reason=args.reason)
            msg = f"approved run #{result.run_id}: new baseline {result.commit}, watermark {result.watermark}"
            if result.hunks_out:
                msg += f"; {result.hunks_in} hunk(s) in, {result.hunks_out} left out and remembered as rejected"
            if result.decision:
                msg += f" (history version {result.decision})"
        else:
            result = review.reject(ctx, args.reason)
            msg = f"rejected run #{result.run_id}: restored {len(result.restored)} file(s)"
            if result.kept:
                msg += f"; kept {', '.join(result.kept)} (edited after the run)"
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
