"""``memtui health``: every approved memory block with its signals and evidence, worst first; exit status 1 when
any block is contradicted. ``--confirm``, ``--propose-update``, ``--propose-removal`` and ``--remove`` do what the
Health screen's actions do."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.adapters.llm.backends.choose import resolved_provider
from memtui.adapters.memroot.lock import MemoryRootBusy
from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.core import clock
from memtui.services.health import actions
from memtui.services.health.signals import BlockHealth, HealthReport, block_by_id, compute_health
from memtui.services.phase2.review import ReviewError
from memtui.state.health import Proposal

BUSY_EXIT = 75


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help=COMMANDS["health"])
    p.add_argument("--json", action="store_true", help="the blocks, signals and evidence as JSON")
    p.add_argument("--project", type=Path, help="only blocks that apply in DIR; paths are checked in its tree")
    p.add_argument(
        "--refine", action="store_true", help="ask the configured model (provider openai) about new findings first"
    )
    act = p.add_mutually_exclusive_group()
    act.add_argument("--confirm", metavar="ID", help="a person confirms the block: renews its last verified time")
    act.add_argument("--propose-update", metavar="ID", help="ask the next Phase 2 run to update the block")
    act.add_argument("--propose-removal", metavar="ID", help="ask the next Phase 2 run to remove the block")
    act.add_argument("--remove", metavar="ID", help="remove the block now (a person's edit, committed)")
    p.set_defaults(func=run)


def _day(ts: int | None) -> str:
    return clock.iso(ts)[:10] if ts else "never"


def format_block(b: BlockHealth) -> list[str]:
    head = ", ".join(b.signals) or "ok"
    where = f"{b.file}:{b.line}"
    lines = [f"{head.upper():<28} {where:<14} {b.id}  {b.project or 'user-level'}", f"  {b.text}"]
    for name in ("contradicted", "corrected", "restated"):
        for e in getattr(b, name):
            lines.append(f"  {name} {_day(e.at)} thread {e.thread_id} item {e.item}: {e.text!r}")
    if b.stale_reason:
        lines.append(f"  stale: {b.stale_reason}")
    tail = f"  cited in {b.cited} session(s), last {_day(b.last_cited)}; approved {_day(b.since)}"
    tail += f"; last verified {_day(b.last_verified)}"
    if b.proposal:
        tail += f"; {b.proposal} proposed for the next Phase 2 run"
    lines.append(tail)
    return lines


def _act(args: argparse.Namespace, report: HealthReport) -> str | None:
    ctx = args.ctx
    target = args.confirm or args.propose_update or args.propose_removal or args.remove
    if not target:
        return None
    block = block_by_id(report, target)
    if args.confirm:
        actions.confirm(ctx, block.id)
        return f"confirmed {block.id}: last verified {_day(clock.now_s())}"
    if args.propose_update or args.propose_removal:
        proposal = Proposal.UPDATE if args.propose_update else Proposal.REMOVE
        outcome = actions.propose(ctx, block.id, proposal)
        return f"{proposal.value} of {block.id} proposed: {outcome}"
    removed = actions.remove_now(ctx, block.id)
    return f"removed {block.id} from MEMORY.md; new baseline {removed.commit[:12]}"


def run(args: argparse.Namespace) -> int:
    ctx = make_context()
    args.ctx = ctx
    project = args.project.expanduser().resolve() if args.project else None
    if project is not None and not project.is_dir():
        print(f"memtui health: {args.project} is not a folder", file=sys.stderr)
        return 2
    report = compute_health(ctx.conn, ctx.paths.memory_root, unused_days=ctx.settings.max_unused_days, project=project)
    if args.refine:
        if resolved_provider(ctx.settings) != "openai":
            print("memtui health: --refine needs an OpenAI-compatible model (provider = openai)", file=sys.stderr)
            return 2
        from memtui.services import history
        from memtui.services.health.refine import refine_findings

        memory = history.baseline_files(ctx.paths.memory_root).get("MEMORY.md", "")
        refined = refine_findings(ctx.conn, memory, ctx.settings)
        print(
            f"refined {refined.refined} finding(s) with {refined.model}, {refined.changed} changed"
            + (f"; stopped: {refined.error}" if refined.error else ""),
            file=sys.stderr,
        )
        report = compute_health(
            ctx.conn, ctx.paths.memory_root, unused_days=ctx.settings.max_unused_days, project=project
        )
    try:
        done = _act(args, report)
    except KeyError as exc:
        print(f"memtui health: {exc.args[0]}", file=sys.stderr)
        return 2
    except (actions.HealthActionError, ReviewError) as exc:
        print(f"memtui health: {exc}", file=sys.stderr)
        return 1
    except MemoryRootBusy as exc:
        print(f"memtui health: {exc}", file=sys.stderr)
        return BUSY_EXIT
    if done is not None:
        print(done)
        return 0
    if args.json:
        print_json(
            {
                **report.model_dump(),
                "blocks": [{**b.model_dump(), "signals": b.signals} for b in report.blocks],
                "contradicted_blocks": report.contradicted,
            }
        )
    else:
        for b in report.blocks:
            print("\n".join(format_block(b)))
        print(
            f"{len(report.blocks)} memory block(s), {report.contradicted} contradicted ({report.method})"
            if report.blocks
            else "no approved memory blocks yet (approve a consolidation first)"
        )
    return 1 if report.contradicted else 0
