"""The single global Phase 2 job: claim, heartbeat and finalize, all owned by a token.

Every write after the claim is conditional on ``ownership_token``, so a worker whose lease was taken over can no
longer change the row. Claims run inside ``BEGIN IMMEDIATE`` so two processes never both see the lock free.
"""

from __future__ import annotations

import socket
import sqlite3
import uuid
from dataclasses import dataclass
from enum import StrEnum

from memtui.core import clock
from memtui.core.process import pid_is_dead
from memtui.state import jobs, outputs
from memtui.state.db import immediate
from memtui.state.jobs import JobRecord


class ClaimOutcome(StrEnum):
    CLAIMED = "claimed"
    SKIPPED_RETRY_UNAVAILABLE = "skipped_retry_unavailable"
    SKIPPED_RUNNING = "skipped_running"
    SKIPPED_COOLDOWN = "skipped_cooldown"


@dataclass(frozen=True)
class Claim:
    outcome: ClaimOutcome
    token: str | None = None
    input_watermark: int = 0

    @property
    def claimed(self) -> bool:
        return self.outcome is ClaimOutcome.CLAIMED


def holder_is_dead(worker_id: str | None) -> bool:
    """True only when it is provable: the lease was taken on this host (``host:pid``) and that pid is gone (or a
    zombie). A holder on another host, or one we cannot signal, counts as alive until its lease runs out."""
    host, _, pid_text = (worker_id or "").rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    return pid_is_dead(int(pid_text))


def lease_live(job: JobRecord | None, now: int | None = None) -> bool:
    """A running job whose lease has not run out and whose holder is not provably dead."""
    if job is None or not job.running or job.lease_until is None:
        return False
    return job.lease_until > (clock.now_s() if now is None else now) and not holder_is_dead(job.worker_id)


def release_dead_holder(conn: sqlite3.Connection) -> bool:
    """A running job whose holder process died (``kill -9``): end it now, without a retry backoff (the failure
    was the process's, not the pipeline's), so the next run starts at once instead of after the lease."""
    with immediate(conn):
        row = read_global_job(conn)
        if row is None or not row.running or not holder_is_dead(row.worker_id):
            return False
        error = f"interrupted: {row.worker_id} stopped while holding the lock"
        jobs.end_global_of_dead(conn, clock.now_s(), error, row.worker_id or "")
        return True


def read_global_job(conn: sqlite3.Connection) -> JobRecord | None:
    return jobs.read_job(conn, jobs.GLOBAL, jobs.GLOBAL_KEY)


def try_claim_global_phase2_job(
    conn: sqlite3.Connection,
    worker_id: str,
    lease_seconds: int,
    cooldown_seconds: float = 6 * 3600,
    *,
    skip_backoff: bool = False,
) -> Claim:
    """Claim the lock unless backoff, a live lease or the success cooldown forbids it (checked in that order).
    A lease whose holder is provably dead (same host, pid gone) is not live.

    ``cooldown_seconds=0`` is ``--force``: it skips the cooldown, never the lock. ``retry_remaining`` is not checked
    (reference: the global job can be claimed after its retry budget is exhausted).
    """
    now = clock.now_s()
    token = str(uuid.uuid4())
    with immediate(conn):
        row = read_global_job(conn)
        if row is None:
            jobs.insert_global_claimed(conn, worker_id, token, now, now + lease_seconds)
            return Claim(ClaimOutcome.CLAIMED, token, 0)
        if not skip_backoff and row.retry_at is not None and row.retry_at > now:
            return Claim(ClaimOutcome.SKIPPED_RETRY_UNAVAILABLE)
        if lease_live(row, now):  # a holder provably dead (killed) is taken over at once, not after its lease
            return Claim(ClaimOutcome.SKIPPED_RUNNING)
        if (
            cooldown_seconds > 0
            and row.last_error is None
            and row.finished_at is not None
            and row.finished_at > now - cooldown_seconds
        ):
            return Claim(ClaimOutcome.SKIPPED_COOLDOWN)
        if not jobs.take_global(conn, worker_id, token, now, now + lease_seconds, row.worker_id):
            return Claim(ClaimOutcome.SKIPPED_RUNNING)
        return Claim(ClaimOutcome.CLAIMED, token, int(row.input_watermark or 0))


def heartbeat_global_phase2_job(conn: sqlite3.Connection, token: str, lease_seconds: int) -> bool:
    """Extend the lease iff this token still owns the running job."""
    return jobs.extend_global_lease(conn, token, clock.now_s() + lease_seconds)


def mark_global_phase2_job_succeeded(
    conn: sqlite3.Connection, token: str, completed_watermark: int, selected: list[tuple[str, int]] | None
) -> bool:
    """Owned running -> done; watermark never moves back; selection flags set on the exact consumed snapshots
    (``None``: the run consumed the selection the flags already hold, so they are left as they are)."""
    now = clock.now_s()
    with immediate(conn):
        if not jobs.global_done(conn, token, now, completed_watermark):
            return False
        if selected is not None:
            outputs.mark_selected_for_phase2(conn, selected)
    return True


def _failed(conn: sqlite3.Connection, token: str, reason: str, delay: int, *, unowned: bool) -> bool:
    now = clock.now_s()
    return jobs.global_failed(conn, token, now, now + int(delay), reason, unowned=unowned)


def mark_global_phase2_job_failed(conn: sqlite3.Connection, token: str, reason: str, delay: int) -> bool:
    return _failed(conn, token, reason, delay, unowned=False)


def mark_global_phase2_job_failed_if_unowned(conn: sqlite3.Connection, token: str, reason: str, delay: int) -> bool:
    """Fallback that also recovers a running row with no owner; used only when the strict update matched nothing."""
    return _failed(conn, token, reason, delay, unowned=True)


def fail_global_phase2_job(conn: sqlite3.Connection, token: str, reason: str, delay: int) -> bool:
    """The reference's ``job::failed``: strict update first, unowned fallback only when it matched nothing."""
    return mark_global_phase2_job_failed(conn, token, reason, delay) or mark_global_phase2_job_failed_if_unowned(
        conn, token, reason, delay
    )


def release_global_phase2_job(conn: sqlite3.Connection, token: str) -> bool:
    """Hand the lock back without finishing (a run now awaits review): owned running -> pending, no lease."""
    return jobs.release_global(conn, token)
