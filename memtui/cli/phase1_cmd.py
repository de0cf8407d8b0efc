"""``memtui phase1``: extract memories from eligible rollouts (leased, concurrent, redacted)."""

from __future__ import annotations

import argparse
import sys

from memtui.cli.common import Progress, make_context, print_json
from memtui.phase1.run import Phase1Summary, run_phase1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "phase1",
        help="extract memories from eligible rollouts",
        description="Claim eligible rollouts and turn each into a raw memory and a summary (or a no-op).",
    )
    p.add_argument("--limit", type=int, help="claim at most N jobs in this run")
    p.add_argument("--concurrency", type=int, help="parallel model calls and the global running-job cap")
    p.add_argument("--thread", metavar="ID", help="extract this one thread now (ignores age, idle and up-to-date)")
    p.add_argument("--all", action="store_true", help="ignore the age and idle windows")
    p.add_argument("--offline", action="store_true", help="deterministic extractor, no model")
    p.add_argument("--model", help="model for this run (default: extract_model)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context(
        concurrency=args.concurrency, extract_model=args.model, provider="offline" if args.offline else None
    )
    progress = Progress("phase 1")
    try:
        summary = run_phase1(
            ctx,
            limit=args.limit,
            thread_id=args.thread,
            all_threads=args.all,
            offline=True if args.offline else None,
            model=args.model,
            concurrency=args.concurrency,
            progress=lambda done, total, detail: progress.update(done, detail),
        )
    finally:
        progress.done()
    if args.json:
        print_json(summary.model_dump())
    else:
        print_summary(summary)
    return 0


def print_summary(s: Phase1Summary) -> None:
    out = sys.stdout.write
    mode = "offline (no model)" if s.offline else f"model {s.model}"
    out(f"phase 1     {mode}; {s.candidates} eligible, {s.claimed} claimed in {s.seconds:.1f}s\n")
    out(f"outcomes    {s.succeeded} succeeded, {s.noop} no-op, {s.failed} failed, {s.lost_lease} lost lease\n")
    for reason, n in sorted(s.failures.items(), key=lambda kv: (-kv[1], kv[0])):
        out(f"  failed    {n:>5}  {reason}\n")
    from memtui.labels import SKIP_REASON, counts

    skipped = counts(s.skipped, SKIP_REASON) or "none"
    out(f"skipped     {skipped}\n")
    if not s.offline:
        out(
            f"tokens      {s.prompt_tokens} in, {s.completion_tokens} out "
            f"(estimated {s.estimated_tokens}; {s.sent_bytes} bytes sent of {s.input_bytes} read)\n"
        )
    redactions = ", ".join(f"{k} {v}" for k, v in sorted(s.redactions.items())) or "none"
    out(f"redactions  {redactions}\n")
    if s.cancelled:
        out("cancelled   stopped claiming new jobs\n")
