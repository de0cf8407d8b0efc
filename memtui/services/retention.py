"""Retention and opt-outs after the fact: run at the start of every Phase 1 and Phase 2 run, and by
``memtui retention`` (or ``memtui forget --expired``).

- Retention (the seed's prune): stage-1 outputs no Phase 2 selected and unused for ``max_unused_days`` leave every
  store that holds them (``memtui/services/stores.py``), 200 per run, stalest first. Their summary files leave the
  memory root with the next Phase 2 sync. The rollout is not forgotten: if it changes, it may be extracted again.
- Opt-outs: a rollout whose memory was turned off after extraction (``threads.memory_mode`` no longer ``enabled``;
  the last ``session_meta`` wins) and that still has an output, or lines in the memory, is forgotten like
  ``memtui forget`` would, with a line in the run summary. While a run awaits review it waits for the next run.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from memtui.adapters.memroot.lock import MemoryRootBusy
from memtui.services import forget, stores
from memtui.services.context import Context
from memtui.services.search import purge_deleted
from memtui.state import threads
from memtui.state.db import immediate
from memtui.state.selection import expired_stage1_outputs

RETENTION_BATCH = 200  # rows per run, as the seed's PRUNE_BATCH_SIZE
OPT_OUT_REASON = "memory turned off for this session after extraction"


@dataclass
class Housekeeping:
    expired: int = 0  # stage-1 outputs removed by retention
    opted_out: list[str] = field(default_factory=list)  # rollouts forgotten because their memory was turned off
    waiting: int = 0  # opt-outs left for the next run (a run awaits review)
    problem: str | None = None  # a step failed (a locked database, a full disk): the run goes on, the next retries

    def lines(self) -> list[str]:
        out = []
        if self.expired:
            out.append(f"retention: {self.expired} stage-1 output(s) unused for max_unused_days removed")
        if self.opted_out:
            out.append(
                f"opt-outs: forgot {len(self.opted_out)} rollout(s) whose memory was turned off after extraction "
                f"({', '.join(self.opted_out)})"
            )
        if self.waiting:
            out.append(f"opt-outs: {self.waiting} rollout(s) to forget once the run awaiting review is decided")
        if self.problem:
            out.append(f"retention: not finished ({self.problem}); the next run tries again")
        return out


def run_retention(ctx: Context, limit: int = RETENTION_BATCH) -> int:
    """Expire up to ``limit`` stage-1 outputs through the store registry; returns how many."""
    conn = ctx.conn
    env = stores.Env(conn, ctx.paths.home)
    with immediate(conn):
        ids = expired_stage1_outputs(conn, ctx.settings.max_unused_days, limit)
        n = sum(1 for tid in ids if stores.expire(env, tid))
    if n:
        purge_deleted(conn, force=True)
    return n


def opted_out_threads(ctx: Context) -> list[str]:
    """Rollouts whose memory is off now but that still have an output (not yet forgotten)."""
    return threads.opted_out_with_output(ctx.conn)


def forget_opt_outs(ctx: Context, result: Housekeeping) -> None:
    for thread_id in opted_out_threads(ctx):
        try:
            forget.forget(ctx, thread_id, OPT_OUT_REASON)
        except (forget.ForgetError, MemoryRootBusy):
            result.waiting += 1
            continue
        result.opted_out.append(thread_id)


def housekeeping(ctx: Context) -> Housekeeping:
    """What the start of a Phase 1 or Phase 2 run does first: retention, then opt-outs."""
    result = Housekeeping()
    try:
        result.expired = run_retention(ctx)
        forget_opt_outs(ctx, result)
        stores.sweep_stale_scratch(ctx.paths.home)  # a killed Phase 1 CLI call's reply
    except (sqlite3.Error, OSError) as exc:  # never the reason a Phase 1 or Phase 2 run fails
        result.problem = f"{exc.__class__.__name__}: {exc}"
    return result


def prune_stage1_outputs_for_retention(conn: sqlite3.Connection, max_unused_days: int, limit: int = 200) -> int:
    """Delete up to ``limit`` unselected rows unused for ``max_unused_days``, stalest first; jobs rows are kept.

    Through the store registry: every store that holds a stage-1 output's text drops it (``stores.expire``)."""
    env = stores.Env(conn)
    with immediate(conn):
        return sum(1 for tid in expired_stage1_outputs(conn, max_unused_days, limit) if stores.expire(env, tid))
