"""``memtui batch status|collect|cancel``: the Batch API submissions of ``memtui phase1 --batch``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json

if TYPE_CHECKING:  # the command's domain modules load only when it runs (the CLI starts fast)
    from memtui.core.settings import Settings
    from memtui.services.batch.model import CollectSummary, PrepareSummary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch",
        help=COMMANDS["batch"],
        description="Batches sent by `memtui phase1 --batch` (or exported with --export-batch).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    st = verbs.add_parser("status", help="poll the submitted batches and list every open one")
    st.add_argument("--json", action="store_true")
    co = verbs.add_parser("collect", help="store the results of finished batches (also done by phase1 --batch)")
    co.add_argument("--json", action="store_true")
    ca = verbs.add_parser("cancel", help="cancel batches (all open ones without IDs); unrun requests are released")
    ca.add_argument("ids", nargs="*", metavar="ID", help="memtui submission id or remote batch id")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import openai

    from memtui.services.batch import ops

    ctx = make_context()
    try:
        if args.verb == "status":
            rows = ops.status(ctx)
            if args.json:
                print_json([r.model_dump() for r in rows])
                return 0
            if not rows:
                print("no batches")
            for r in rows:
                remote = f" remote {r.batch_id} {r.remote_status}" if r.batch_id else ""
                counts = f" {r.counts}" if r.counts else ""
                print(f"{r.id}  {r.kind:<6} {r.status:<10} {r.done}/{r.requests} done{remote}{counts}")
            return 0
        if args.verb == "collect":
            summary = ops.collect(ctx)
            print_json(summary.model_dump()) if args.json else print_collect(summary)
            return 0
        for line in ops.cancel(ctx, args.ids or None):
            print(line)
        return 0
    except (ops.BatchError, openai.OpenAIError) as exc:  # an unreachable or refusing API: say so, no traceback
        sys.stderr.write(f"memtui: {exc}\n")
        return 2


def print_collect(s: CollectSummary) -> None:
    out = sys.stdout.write
    for line in s.resumed:
        out(f"resumed     {line}\n")
    out(
        f"collected   {s.collected_submissions} batch(es) finished, {s.still_running} still running; "
        f"{s.succeeded} succeeded, {s.noop} no-op, {s.failed} failed, {s.released} released, {s.stale} stale, "
        f"{s.lost_lease} lost lease\n"
    )
    for reason, n in sorted(s.failures.items(), key=lambda kv: (-kv[1], kv[0])):
        out(f"  failed    {n:>5}  {reason}\n")
    if s.unmatched:
        out(f"unmatched   {s.unmatched} result line(s) matched no pending request (ignored)\n")


def print_prepare(s: PrepareSummary, settings: Settings | None = None) -> None:
    """The prepare step's summary; with ``settings``, a run that prepared nothing says what would change that."""
    out = sys.stdout.write
    out(
        f"prepared    {s.requests} request(s) for {s.model} in {len(s.files)} file(s), {s.bytes} bytes; "
        f"{s.candidates} eligible, {s.claimed} claimed, {s.failed} failed, in {s.seconds:.1f}s\n"
    )
    for reason, n in sorted(s.failures.items(), key=lambda kv: (-kv[1], kv[0])):
        out(f"  failed    {n:>5}  {reason}\n")
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(s.skipped.items())) or "none"
    out(f"skipped     {skipped}\n")
    if settings is not None and not s.claimed and s.skipped:
        from memtui.services.phase1.eligibility import skip_hints

        out("nothing to do: no session was ready for extraction\n")
        for hint in skip_hints(s.skipped, settings):
            out(f"  {hint}\n")
