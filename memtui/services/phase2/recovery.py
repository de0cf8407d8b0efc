"""What a killed memtui process left behind, put right by the next one that takes the memory-root lock.

Four leftovers, each provable: a global Phase 2 job whose holder is dead (same host, pid gone), a Phase 2 run left
``running`` (its writes undone from its journal, keeping any file a person changed since), an approve killed after
its commit (finished from the decisions it kept before committing), and a CLI agent's copy of the memory root. Every action that needs the memory root
runs ``recover_locked`` first, and ``settle`` (``memtui.services.review.settle``) lets readers (review show, the TUI, Phase 2's first check) do it too,
so no run stays stuck for more than one restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtui.adapters.memroot.lock import held
from memtui.core import clock
from memtui.services import stores
from memtui.services.context import Context
from memtui.services.phase2 import approving
from memtui.services.phase2.tools import restore
from memtui.state import global_job, runs


def recover_locked(ctx: Context) -> list[str]:
    """Recover every leftover of a killed process; the caller holds the memory-root lock. Returns what was done."""
    conn, root = ctx.conn, ctx.paths.memory_root
    if not held(root):
        raise RuntimeError("recover_locked needs the memory-root lock")
    notes = []
    if global_job.release_dead_holder(conn):
        notes.append("released the Phase 2 lock of a process that was killed")
    if ids := recover_interrupted_runs(conn, root):
        notes.append(f"undid interrupted run(s) {', '.join(f'#{i}' for i in ids)}")
    if (run_id := approving.finish_interrupted_approve(ctx)) is not None:
        notes.append(f"finished the approve of run #{run_id}, stopped after its commit")
    for run_id in runs.decided_with_text(conn):  # no copy of a decided run's text outlives it
        approving.forget_run_content(conn, run_id)
    if swept := stores.sweep_work(stores.Env(conn, ctx.paths.home)):  # a killed CLI run's copy: none outlives it
        notes.append(f"removed {swept} scratch folder(s) a stopped run left in work/")
    if swept := stores.sweep_interrupted(stores.Env(conn, ctx.paths.home)):  # a kill between write and rename
        notes.append(f"removed {swept} temp copy(ies) an interrupted write left")
    return notes


def recover_interrupted_runs(conn: Any, root: Path) -> list[int]:
    """Runs left ``running`` by a killed process (we hold the lock, so they are stale): undo their writes."""
    ids = runs.running_ids(conn)
    for run_id in ids:
        pre, post = approving.load_journal(conn, run_id)
        restored = restore(root, pre, post if post is not None else {})
        kept = sorted(set(pre) - set(restored))
        note = f"; kept {', '.join(kept)} (edited after the run started)" if kept else ""
        why = "interrupted: the process stopped during the run; its writes were undone"
        runs.mark_interrupted(conn, run_id, clock.now_s(), why, note)
        approving.forget_run_content(conn, run_id)
    return ids
