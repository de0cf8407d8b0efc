"""``memtui review``: show what is pending, approve or reject the Phase 2 run, or commit your own edits."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memtui.adapters.memroot.files import is_generated_input
from memtui.cli import COMMANDS
from memtui.cli.common import EXIT_BUSY, make_context, print_json

if TYPE_CHECKING:
    from memtui.services.context import Context
    from memtui.services.phase2.forgotten import LineRef
    from memtui.state.runs import Phase2Run

# `review show` loads only what reading needs (memtui.services.review.state); approve, reject and commit load the
# decisions (memtui.services.phase2.review) and the search index they refresh.


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help=COMMANDS["review"])
    actions = p.add_subparsers(dest="review_action", metavar="ACTION")
    show = actions.add_parser(
        "show", help="the run awaiting review and what changed since it, or your own edits since the baseline"
    )
    show.add_argument("--stat", action="store_true", help="only the A/M/D file lists")
    show.add_argument(
        "--hunks", action="store_true", help="list the run's hunks (ids for --except) with their evidence"
    )
    show.add_argument("--json", action="store_true", help="stat, diff and hunks (id, ranges, hash, text, evidence)")
    approve = actions.add_parser("approve", help="make exactly the reviewed result the new memory baseline")
    approve.add_argument(
        "--include-changes",
        action="store_true",
        help="also approve the files changed since the run (shown by `review show` under 'changed since the run')",
    )
    approve.add_argument(
        "--expect", metavar="TREE", default=None, help="approve only if the memory root is still this tree (from show)"
    )
    approve.add_argument(
        "--except",
        dest="except_ids",
        default=None,
        metavar="ID[,ID...]",
        help="leave these hunks out (their lines stay as in the baseline); `review show --hunks` lists the ids",
    )
    approve.add_argument(
        "--trust",
        dest="trusted_ids",
        default="",
        metavar="ID[,ID...]",
        help="let these hunks' tool-only or flagged lines into what agents load (recorded in the history)",
    )
    approve.add_argument("--reason", default=None, help="why the hunks are left out; the next run is told")
    approve.add_argument("--json", action="store_true")
    reject = actions.add_parser("reject", help="undo the run's changes and remember why")
    reject.add_argument("--reason", default=None, help="why; the next consolidation prompt includes it")
    reject.add_argument("--json", action="store_true")
    listing = actions.add_parser(
        "rejections", help="the hunks you left out that later runs keep out (ids for `review lift`)"
    )
    listing.add_argument("--json", action="store_true")
    lift = actions.add_parser("lift", help="lift a remembered rejection: later runs may propose its lines again")
    lift.add_argument("rejection", type=int, metavar="ID", help="its id (`memtui review rejections` lists them)")
    lift.add_argument("--json", action="store_true")
    commit = actions.add_parser("commit", help="make your own edits the new baseline (no run may await review)")
    commit.add_argument("-m", "--message", default=None, help="commit message (default: 'memtui: manual edit')")
    commit.add_argument(
        "--expect", metavar="TREE", default=None, help="commit only if the memory root is still this tree (from show)"
    )
    commit.add_argument("--json", action="store_true")
    p.set_defaults(func=run, review_action=None, json=False)


DEFERRED = (
    "not published now: the next run renders it again from the memories (to drop a session's memory for good: "
    "`memtui forget <rollout>`)"
)


def _rejections(ctx: Context, as_json: bool) -> int:
    from memtui.services.review.decide import remembered_rejections

    rows = remembered_rejections(ctx.conn)
    if as_json:
        print_json({"rejections": [dict(r.model_dump(mode="json"), removed=r.removed) for r in rows]})
        return 0
    if not rows:
        print("No remembered rejections: later runs keep nothing out.")
        return 0
    for r in rows:
        run = f"run #{r.run_id}" if r.run_id else "-"
        reason = f"  reason: {r.reason}" if r.reason else ""
        print(f"{r.id:>4}  {r.when()}  {run:<8} {r.file}  {len(r.added)} line(s) kept out{reason}")
        for line in r.added[:5]:
            print(f"        + {line}")
        if len(r.added) > 5:
            print(f"        ... and {len(r.added) - 5} more")
    print("`memtui review lift ID` lets later runs propose a rejection's lines again.")
    return 0


def _lift(ctx: Context, rejection: int, as_json: bool) -> int:
    from memtui.services.review.decide import LiftError, lift

    try:
        row = lift(ctx.conn, rejection)
    except LiftError as exc:
        print(f"memtui review: {exc}", file=sys.stderr)
        return 1
    if as_json:
        print_json({"lifted": row.model_dump(mode="json")})
    else:
        print(
            f"lifted rejection #{row.id} ({row.file}, {row.when()}): later runs may propose its "
            f"{len(row.added)} line(s) again (recorded in `memtui history`)"
        )
    return 0


def _stat_lines(stat: list[tuple[str, str]]) -> str:
    return "".join(f"{s} {p}\n" for s, p in stat) or "(no changes)\n"


def _hunk_lines(hunks: list) -> str:
    out = []
    for h in hunks:
        body = h.text.split("\n")[1:]
        plus, minus = sum(x.startswith("+") for x in body), sum(x.startswith("-") for x in body)
        out.append(f"{h.id}  {h.file}  -{h.old_start},{h.old_count} +{h.new_start},{h.new_count}  (+{plus} -{minus})\n")
        if is_generated_input(h.file):
            out.append("    --except: left out for now; the next run renders it again (nothing remembered)\n")
        if classes := h.trust.get("classes"):
            out.append("    trust: " + ", ".join(f"{c} {n}" for c, n in classes.items()) + "\n")
        for flag in h.trust.get("flags", []):
            out.append(f"    ! line {flag['line']}: {flag['text']}\n")
        for e in h.evidence:
            out.append(
                f"    <- {e['thread_id']} {e.get('rollout_summary_file') or ''} score {e['score']}: {e['excerpt']}\n"
            )
    return "".join(out) or "(no hunks)\n"


def _show(ctx, stat_only: bool, as_json: bool, list_hunks: bool = False) -> int:
    from memtui.services.review.state import review_state

    state = review_state(ctx, with_diff=not stat_only or as_json or list_hunks)
    shown = state.run.diff if state.run else (state.own_edits.diff if state.own_edits else "")
    hunks = []
    if as_json or list_hunks:
        from memtui.services.review.evidence import hunk_infos

        hunks = hunk_infos(ctx, shown, state.run)
    if list_hunks:
        sys.stdout.write(_hunk_lines(hunks))
        return 0
    if as_json:
        print_json(
            {
                "run_id": state.run.id if state.run else None,
                "kind": state.run.kind if state.run else None,
                "hunks": [h.model_dump(mode="json") for h in hunks],
                "stat": state.run.stat if state.run else (state.own_edits.stat if state.own_edits else []),
                "diff": None if stat_only else (state.run.diff if state.run else (state.own_edits or _empty()).diff),
                "tree": state.run.reviewed_tree if state.run else (state.own_edits.tree if state.own_edits else None),
                "since_run": None if state.since_run is None else state.since_run.model_dump(mode="json"),
                "forgotten_mentions": [m.model_dump() for m in _mentions(ctx)],
                "rejections_acted": _acted(ctx, state.run),
                "error": state.error,
            }
        )
        return 0
    out = sys.stdout
    if state.error:
        print(f"memtui review: {state.error}", file=sys.stderr)
    for m in _mentions(ctx):  # forget never removes a person's line: it is theirs to keep or delete
        print(f"{m.file}:{m.line}: a line you wrote mentions a forgotten rollout", file=sys.stderr)
    for note in _acted(ctx, state.run):  # what remembered rejections did to this run, and how to lift them
        print(note, file=sys.stderr)
    if state.run is not None:
        run = state.run
        print(f"Phase 2 run #{run.id} awaits review ({'offline' if run.offline else run.model})", file=sys.stderr)
        sys.stderr.flush()  # (stderr: a redirected diff stays a clean patch; on a terminal, a blank line between)
        out.write(("\n" if out.isatty() else "") + (_stat_lines(run.stat) if stat_only or not run.diff else run.diff))
        if state.since_run is not None:
            since = state.since_run
            out.write(f"\n=== changed since the run (not part of it): {len(since.stat)} file(s) ===\n")
            out.write(_stat_lines(since.stat) if stat_only or not since.diff else since.diff)
            out.write(
                f"=== approve the run with these changes: memtui review approve --include-changes --expect {since.tree}\n"
            )
        return 0
    edits = state.own_edits
    if edits is None or not edits.stat:
        print("Nothing pending: no run awaits review and the memory root matches the baseline.", file=sys.stderr)
        out.write(_stat_lines([]))
        return 0
    print(
        "No run awaits review; changes since the baseline (your own edits and new inputs). "
        f"Commit them with `memtui review commit --expect {edits.tree}`, or let the next Phase 2 consolidate them.",
        file=sys.stderr,
    )
    out.write(_stat_lines(edits.stat) if stat_only or not edits.diff else edits.diff)
    return 0


def _mentions(ctx: Context) -> list[LineRef]:
    from memtui.state.forgotten import pending_lineages

    if not pending_lineages(ctx.conn):  # nothing is being forgotten: no line to name, no forget machinery to load
        return []
    from memtui.services.phase2 import forgotten

    return forgotten.mentions(ctx)


def _acted(ctx: Context, run: Phase2Run | None) -> list[str]:
    if run is None or not run.rejections_acted:  # no rejection shaped the run: nothing to name, nothing to load
        return []
    from memtui.services.review.decide import acted_notes

    return acted_notes(ctx.conn, run.rejections_acted)


def _empty():
    from memtui.services.review.state import PendingChanges

    return PendingChanges(tree="", stat=[], diff="")


def run(args: argparse.Namespace) -> int:
    from memtui.adapters.memroot.baseline import BaselineError
    from memtui.adapters.memroot.lock import MemoryRootBusy

    action = args.review_action or "show"
    ctx = make_context()
    try:
        if action == "show":
            return _show(ctx, bool(getattr(args, "stat", False)), bool(args.json), bool(getattr(args, "hunks", False)))
        if action == "rejections":
            return _rejections(ctx, bool(args.json))
        if action == "lift":
            return _lift(ctx, args.rejection, bool(args.json))
        return _decide(ctx, args, action)
    except MemoryRootBusy as exc:
        print(f"memtui review: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except BaselineError as exc:
        print(f"memtui review: {exc}", file=sys.stderr)
        return 1
    finally:
        ctx.close()


def _decide(ctx: Context, args: argparse.Namespace, action: str) -> int:
    from memtui.services.phase2 import review
    from memtui.services.search import try_refresh_memory_index

    try:
        if action == "commit":
            commit = review.commit_manual_edit(ctx, args.message, expected_tree=args.expect)
            if args.json:
                print_json({"commit": commit})
            else:
                print(f"committed your edits: new baseline {commit}")
            return 0
        if action == "approve":
            except_ids = [i.strip() for i in (args.except_ids or "").split(",") if i.strip()]
            if args.except_ids is not None and not except_ids:
                print(
                    "memtui review: --except needs hunk ids (`memtui review show --hunks` lists them); nothing was "
                    "approved",
                    file=sys.stderr,
                )
                return 2
            result = review.approve(
                ctx,
                include_changes=args.include_changes,
                expected_tree=args.expect,
                except_ids=except_ids,
                reason=args.reason,
                trusted_ids=[i for i in (args.trusted_ids or "").split(",") if i.strip()],
            )
            msg = f"approved run #{result.run_id}: new baseline {result.commit}, watermark {result.watermark}"
            if result.included_changes:
                msg += f"; included {', '.join(p for _, p in result.included_changes)} (changed since the run)"
            if result.hunks_out:
                msg += f"; {result.hunks_in} hunk(s) in, {result.hunks_out} left out"
                if result.remembered:
                    msg += f" ({result.remembered} remembered as rejected: `memtui review rejections`)"
                if result.deferred:
                    msg += f"; {', '.join(result.deferred)} {DEFERRED}"
            if result.decision:
                msg += f" (history version {result.decision})"
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
    except review.ReviewError as exc:
        print(f"memtui review: {exc}", file=sys.stderr)
        return 1
