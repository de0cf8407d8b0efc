"""``memtui phase1``: extract memories from eligible rollouts (leased, concurrent, redacted)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memtui.cli import COMMANDS
from memtui.cli.common import Progress, make_context, positive_int, print_json

if TYPE_CHECKING:  # the command's domain modules load only when it runs (the CLI starts fast)
    from memtui.services.phase1.run import Phase1Summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "phase1",
        help=COMMANDS["phase1"],
        description="Claim eligible rollouts and turn each into a raw memory and a summary (or a no-op).",
    )
    p.add_argument("--limit", type=positive_int, help="claim at most N jobs in this run")
    p.add_argument("--concurrency", type=positive_int, help="parallel model calls and the global running-job cap")
    p.add_argument("--thread", metavar="ID", help="extract this one thread now (ignores age, idle and up-to-date)")
    p.add_argument(
        "--all", action="store_true", help="ignore the age and idle windows: the backfill of an older history"
    )
    p.add_argument("--offline", action="store_true", help="deterministic extractor, no model")
    p.add_argument("--model", help="model for this run (default: extract_model)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    bulk = p.add_mutually_exclusive_group()
    bulk.add_argument(
        "--batch", action="store_true", help="send the claimed rollouts through the OpenAI Batch API (24 h window)"
    )
    bulk.add_argument("--export-batch", metavar="FILE", type=Path, help="write the requests for `vllm run-batch`")
    bulk.add_argument("--import-batch", metavar="FILE", type=Path, help="store the results of an exported batch")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtui.services.phase1.run import run_phase1

    ctx = make_context(
        concurrency=args.concurrency, extract_model=args.model, provider="offline" if args.offline else None
    )
    if args.thread is not None:
        from memtui.services.views import thread_exists

        if not thread_exists(ctx.conn, args.thread):
            print(
                f"memtui phase1: no rollout with id {args.thread!r} is indexed; `memtui search` or the Rollouts "
                "screen shows the ids (run `memtui ingest` first for a new session)",
                file=sys.stderr,
            )
            return 2
    if args.batch or args.export_batch or args.import_batch:
        return run_bulk(args, ctx)
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
    return all_failed_exit(summary)


EXIT_ALL_FAILED = 1  # every job this run attempted failed: nothing extracted, a script or hook should know


def all_failed_exit(s: Phase1Summary) -> int:
    """0 when nothing was to do or some job succeeded (or was a no-op); ``EXIT_ALL_FAILED``, said on stderr with
    the most common reason, when every attempted job failed."""
    attempted = s.succeeded + s.noop + s.failed
    if not attempted or s.failed < attempted:
        return 0
    reason, n = min(s.failures.items(), key=lambda kv: (-kv[1], kv[0])) if s.failures else ("unknown", s.failed)
    why = f"; the backend stopped the run: {s.halted}" if s.halted else ""
    print(
        f"memtui phase1: all {s.failed} attempted job(s) failed, nothing was extracted "
        f"(most common reason, {n}x: {reason}){why}",
        file=sys.stderr,
    )
    return EXIT_ALL_FAILED


def print_summary(s: Phase1Summary) -> None:
    out = sys.stdout.write
    mode = "offline (no model)" if s.offline else f"model {s.model}"
    out(f"phase 1     {mode}; {s.candidates} eligible, {s.claimed} claimed in {s.seconds:.1f}s\n")
    out(f"outcomes    {s.succeeded} succeeded, {s.noop} no-op, {s.failed} failed, {s.lost_lease} lost lease\n")
    for reason, n in sorted(s.failures.items(), key=lambda kv: (-kv[1], kv[0])):
        out(f"  failed    {n:>5}  {reason}\n")
    from memtui.domain.labels import SKIP_REASON, counts

    skipped = counts(s.skipped, SKIP_REASON) or "none"
    out(f"skipped     {skipped}\n")
    if not s.offline:
        out(
            f"tokens      {s.prompt_tokens} in, {s.completion_tokens} out "
            f"(estimated {s.estimated_tokens}; {s.sent_bytes} bytes sent of {s.input_bytes} read)\n"
        )
    redactions = ", ".join(f"{k} {v}" for k, v in sorted(s.redactions.items())) or "none"
    out(f"redactions  {redactions}\n")
    if s.expired:
        out(f"retention   {s.expired} stage-1 output(s) unused for max_unused_days removed\n")
    if s.opted_out or s.opt_outs_waiting:
        out(f"opt-outs    forgot {len(s.opted_out)} rollout(s) whose memory was turned off after extraction")
        out(f" ({', '.join(s.opted_out)})\n" if s.opted_out else "\n")
        if s.opt_outs_waiting:
            out(f"            {s.opt_outs_waiting} more once the run awaiting review is decided\n")
    if s.hidden_removed or s.dropped_untrusted:
        out(
            f"trust       {s.hidden_removed} hidden character(s) removed; {s.dropped_untrusted} line(s) speaking for "
            "the user without the user's words dropped\n"
        )
    if s.halted:
        out(f"stopped     the backend cannot serve now, nothing more was claimed: {s.halted}\n")
    if s.cancelled:
        out("cancelled   stopped claiming new jobs\n")
    if s.hints:
        out("nothing to do: no session was ready for extraction\n")
        for hint in s.hints:
            out(f"  {hint}\n")
    if s.older is not None:  # a history older than the window: the backfill, offered with its exact command
        out(f"older       {s.older.words()}\n")
        out(f"            `{s.older.command}` extracts them once; the next `memtui phase2` consolidates them\n")


def run_bulk(args: argparse.Namespace, ctx) -> int:
    """``--batch`` / ``--export-batch`` / ``--import-batch``: see ``memtui.services.batch``."""
    import openai

    from memtui.cli.batch_cmd import print_collect, print_prepare
    from memtui.services.batch import ops

    progress = Progress("phase 1 batch")
    kw = {"limit": args.limit, "thread_id": args.thread, "all_threads": args.all, "model": args.model}
    try:
        if args.import_batch:
            result = ops.import_results(ctx, args.import_batch)
            print_json(result.model_dump()) if args.json else print_collect(result)
            return 0
        if args.export_batch:
            prepared = ops.export(
                ctx, args.export_batch, progress=lambda d, t, detail: progress.update(d, detail), **kw
            )
            progress.done()
            if args.json:
                print_json(prepared.model_dump())
            else:
                print_prepare(prepared, ctx.settings)
                if prepared.requests:
                    sys.stdout.write(
                        f"next        vllm run-batch -i {args.export_batch} -o results.jsonl --model {prepared.model}\n"
                        "            then: memtui phase1 --import-batch results.jsonl\n"
                    )
            return 0
        summary = ops.submit(ctx, progress=lambda d, t, detail: progress.update(d, detail), **kw)
    except (ops.BatchError, openai.OpenAIError) as exc:  # an unreachable or refusing API: say so, no traceback
        progress.done()
        sys.stderr.write(f"memtui: {exc}\n")
        return 2
    progress.done()
    if args.json:
        print_json(summary.model_dump())
        return 0
    print_collect(summary.collected)
    print_prepare(summary.prepared, ctx.settings)
    sys.stdout.write(f"submitted   {', '.join(summary.submitted) or 'nothing'} (see `memtui batch status`)\n")
    return 0
