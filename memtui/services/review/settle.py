"""The readers' side of recovery: whether a killed process left anything, and putting it right when the root is free.

``review show``, the TUI's review screen and Phase 2's first check run it every time and nearly always find nothing,
so it lives apart from what puts things right (``memtui.services.phase2.recovery``: the approve, every store), which
loads only when something needs it.
"""

from __future__ import annotations

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import interrupted_publishes
from memtui.adapters.memroot.files import interrupted_writes
from memtui.adapters.memroot.lock import MemoryRootBusy, memory_root_lock
from memtui.services.context import Context
from memtui.services.review.marks import INTENT_KEY, approve_message
from memtui.state import global_job, meta, runs


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
    if meta.has(conn, INTENT_KEY.format(run.id)):
        return True  # an approve that did not finish, before or after its commit
    subject = baseline.run_git(ctx.paths.memory_root, "log", "-1", "--format=%s", "HEAD", check=False).strip()
    return subject == approve_message(run)


def settle(ctx: Context) -> list[str]:
    """``recover_locked`` when something needs it and the root is free; a busy root is left to its holder.

    A ``running`` run is only recovered when no live process holds the Phase 2 lease (a live run holds the lock).
    """
    if not needs_recovery(ctx):
        return []
    from memtui.services.phase2.recovery import recover_locked  # (the phase2 package: its baseline hook too)

    try:
        with memory_root_lock(ctx.paths.memory_root, "recovery", wait=0.5):
            return recover_locked(ctx)
    except MemoryRootBusy:
        return []
