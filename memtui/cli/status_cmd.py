"""``memtui status``: what is indexed, extracted, consolidated and awaiting review."""

from __future__ import annotations

import argparse

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.state.status import read_status


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help=COMMANDS["status"])
    p.add_argument("--json", action="store_true", help="one JSON object with stable keys")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context()
    st = read_status(ctx.conn)
    if args.json:
        print_json(st.model_dump(mode="json"))
        return 0
    sources = ", ".join(f"{k} {v}" for k, v in st.threads_by_source.items()) or "none"
    print(f"home        {ctx.paths.home}")
    print(f"threads     {st.threads} ({sources}); archived {st.archived_threads}")
    print(f"files       {st.files} seen, {st.skipped_files} skipped, {st.skipped_lines} bad lines skipped")
    from memtui.domain.labels import PHASE2_STATUS, label

    for reason, n in st.skipped_files_by_reason.items():
        print(f"              {n:>5}  {reason}")
    s1 = st.stage1
    print(
        f"phase 1     {s1.done} done, {s1.running} running, {s1.error} failed "
        f"({s1.retry_exhausted} out of retries), {s1.pending} pending; outputs {st.outputs}"
    )
    redactions = ", ".join(f"{kind} {n}" for kind, n in sorted(st.redactions.items())) or "none"
    print(f"            tokens {st.tokens.prompt:,} in / {st.tokens.completion:,} out; redactions: {redactions}")
    for reason, n in st.stage1_failures.items():
        print(f"              {n:>5}  failed: {reason[:100]}")
    p2 = st.phase2
    if p2.awaiting_review:
        state = f"run #{p2.awaiting_run_id} awaiting review"
    elif p2.last_run:
        state = f"last run #{p2.last_run.id} {label(p2.last_run.status, PHASE2_STATUS)}"
    else:
        state = label(p2.status, PHASE2_STATUS)
    print(f"phase 2     {state}; watermark {st.watermark}")
    print(f"citations   {st.citations}")
    return 0
