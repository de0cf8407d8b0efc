"""What a killed memtui process left behind, put right by the next one that takes the memory-root lock.

Four leftovers, each provable: a global Phase 2 job whose holder is dead (same host, pid gone), a Phase 2 run left
``running`` (its writes undone from its journal, keeping any file a person changed since), an approve killed after
its commit (finished from the decisions it kept before committing), and a CLI agent's copy of the memory root. Every action that needs the memory root
runs ``recover_locked`` first, and ``settle`` lets readers (review show, the TUI, Phase 2's first check) do it too,
so no run stays stuck for more than one restart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import interrupted_publishes
from memtui.adapters.memroot.files import interrupted_writes
from memtui.adapters.memroot.lock import MemoryRootBusy, held, memory_root_lock
from memtui.core import clock
from memtui.services import stores
from memtui.services.context import Context
from memtui.services.phase2 import approving
from memtui.services.phase2.tools import restore
from memtui.state import global_job, meta, runs


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


def needs_recovery(ctx: Context) -> bool:
    """Cheap check without the lock: is there anything a killed process left?"""
    conn = ctx.conn
    if runs.any_running(conn):
        return True
    job = global_job.read_global_job(conn)
    if job is not None and job.running and global_job.holder_is_dead(job.worker_id):
        return True
    if runs.any_decided_with_text(conn):  # a decision killed before it dropped the run's stored memory text
        return True
    if interrupted_writes(ctx.paths.memory_root) or interrupted_publishes(ctx.paths.memory_root):
        return True
    run = runs.pending(conn)
    if run is None or not baseline.is_usable(ctx.paths.memory_root):
        return False
    if meta.has(conn, approving.INTENT_KEY.format(run.id)):
        return True  # an approve that did not finish, before or after its commit
    subject = baseline.run_git(ctx.paths.memory_root, "log", "-1", "--format=%s", "HEAD", check=False).strip()
    return subject == approving.approve_message(run)


def settle(ctx: Context) -> list[str]:
    """``recover_locked`` when something needs it and the root is free; a busy root is left to its holder.

    A ``running`` run is only recovered when no live process holds the Phase 2 lease (a live run holds the lock).
    """
    if not needs_recovery(ctx):
        return []
    try:
        with memory_root_lock(ctx.paths.memory_root, "recovery", wait=0.5):
            return recover_locked(ctx)
    except MemoryRootBusy:
        return []


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
