"""The single global Phase 2 job: claim, heartbeat and finalize, all owned by a token.

Every write after the claim is conditional on ``ownership_token``, so a worker whose lease was taken over can no
longer change the row. Claims run inside ``BEGIN IMMEDIATE`` so two processes never both see the lock free.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from dataclasses import dataclass
from enum import StrEnum

from memtui import clock
from memtui.state.db import immediate
from memtui.state.jobs import GLOBAL as KIND
from memtui.state.jobs import GLOBAL_KEY as KEY

DEFAULT_RETRY_REMAINING = 3


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
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # a killed child nobody reaped yet still answers signal 0
            return fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def lease_live(row: sqlite3.Row | None, now: int | None = None) -> bool:
    """A running job whose lease has not run out and whose holder is not provably dead."""
    if row is None or row["status"] != "running" or row["lease_until"] is None:
        return False
    return row["lease_until"] > (clock.now_s() if now is None else now) and not holder_is_dead(row["worker_id"])


def release_dead_holder(conn: sqlite3.Connection) -> bool:
    """A running job whose holder process died (``kill -9``): end it now, without a retry backoff (the failure
    was the process's, not the pipeline's), so the next run starts at once instead of after the lease."""
    with immediate(conn):
        row = read_global_job(conn)
        if row is None or row["status"] != "running" or not holder_is_dead(row["worker_id"]):
            return False
        conn.execute(
            "UPDATE jobs SET status='error', finished_at=?, lease_until=NULL, retry_at=NULL, ownership_token=NULL,"
            " last_error=? WHERE kind=? AND job_key=? AND status='running' AND worker_id=?",
            (
                clock.now_s(),
                f"interrupted: {row['worker_id']} stopped while holding the lock",
                KIND,
                KEY,
                row["worker_id"],
            ),
        )
        return True


def read_global_job(conn: sqlite3.Connection) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM jobs WHERE kind=? AND job_key=?", (KIND, KEY)).fetchone()


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
            conn.execute(
                "INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, started_at, finished_at,"
                " lease_until, retry_at, retry_remaining, last_error, input_watermark, last_success_watermark)"
                " VALUES (?, ?, 'running', ?, ?, ?, NULL, ?, NULL, ?, NULL, 0, 0)",
                (KIND, KEY, worker_id, token, now, now + lease_seconds, DEFAULT_RETRY_REMAINING),
            )
            return Claim(ClaimOutcome.CLAIMED, token, 0)
        if not skip_backoff and row["retry_at"] is not None and row["retry_at"] > now:
            return Claim(ClaimOutcome.SKIPPED_RETRY_UNAVAILABLE)
        if lease_live(row, now):  # a holder provably dead (killed) is taken over at once, not after its lease
            return Claim(ClaimOutcome.SKIPPED_RUNNING)
        if (
            cooldown_seconds > 0
            and row["last_error"] is None
            and row["finished_at"] is not None
            and row["finished_at"] > now - cooldown_seconds
        ):
            return Claim(ClaimOutcome.SKIPPED_COOLDOWN)
        cur = conn.execute(
            "UPDATE jobs SET status='running', worker_id=?, ownership_token=?, started_at=?, finished_at=NULL,"
            " lease_until=?, retry_at=NULL, last_error=NULL"
            " WHERE kind=? AND job_key=? AND (NOT (status='running' AND lease_until > ?) OR worker_id IS ?)",
            (worker_id, token, now, now + lease_seconds, KIND, KEY, now, row["worker_id"]),
        )
        if cur.rowcount != 1:
            return Claim(ClaimOutcome.SKIPPED_RUNNING)
        return Claim(ClaimOutcome.CLAIMED, token, int(row["input_watermark"] or 0))


def heartbeat_global_phase2_job(conn: sqlite3.Connection, token: str, lease_seconds: int) -> bool:
    """Extend the lease iff this token still owns the running job."""
    cur = conn.execute(
        "UPDATE jobs SET lease_until=? WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
        (clock.now_s() + lease_seconds, KIND, KEY, token),
    )
    return cur.rowcount == 1


def mark_global_phase2_job_succeeded(
    conn: sqlite3.Connection, token: str, completed_watermark: int, selected: list[tuple[str, int]]
) -> bool:
    """Owned running -> done; watermark never moves back; selection flags set on the exact consumed snapshots."""
    now = clock.now_s()
    with immediate(conn):
        cur = conn.execute(
            "UPDATE jobs SET status='done', finished_at=?, lease_until=NULL, last_error=NULL, retry_at=NULL,"
            " last_success_watermark=MAX(COALESCE(last_success_watermark, 0), ?)"
            " WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
            (now, int(completed_watermark), KIND, KEY, token),
        )
        if cur.rowcount != 1:
            return False
        # Same result as "clear all flags, then set the exact pairs", but rows already right are not rewritten, so a
        # no-change run over thousands of selected rows writes (almost) nothing.
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS phase2_selected (thread_id TEXT NOT NULL, source_updated_at INTEGER NOT NULL,"
            " PRIMARY KEY (thread_id, source_updated_at))"
        )
        conn.execute("DELETE FROM phase2_selected")
        conn.executemany(
            "INSERT OR IGNORE INTO phase2_selected VALUES (?, ?)", [(tid, int(ts)) for tid, ts in selected]
        )
        conn.execute(
            "UPDATE stage1_outputs SET selected_for_phase2=0, selected_for_phase2_source_updated_at=NULL"
            " WHERE (selected_for_phase2 != 0 OR selected_for_phase2_source_updated_at IS NOT NULL)"
            " AND NOT EXISTS (SELECT 1 FROM phase2_selected s WHERE s.thread_id = stage1_outputs.thread_id"
            " AND s.source_updated_at = stage1_outputs.source_updated_at)"
        )
        conn.execute(
            "UPDATE stage1_outputs SET selected_for_phase2=1, selected_for_phase2_source_updated_at=source_updated_at"
            " WHERE EXISTS (SELECT 1 FROM phase2_selected s WHERE s.thread_id = stage1_outputs.thread_id"
            " AND s.source_updated_at = stage1_outputs.source_updated_at)"
            " AND NOT (selected_for_phase2 = 1 AND selected_for_phase2_source_updated_at IS source_updated_at)"
        )
        conn.execute("DELETE FROM phase2_selected")
    return True


def _failed(conn: sqlite3.Connection, token: str, reason: str, delay: int, *, unowned: bool) -> bool:
    now = clock.now_s()
    owner = "(ownership_token=? OR ownership_token IS NULL)" if unowned else "ownership_token=?"
    cur = conn.execute(
        "UPDATE jobs SET status='error', finished_at=?, lease_until=NULL, retry_at=?,"
        " retry_remaining=MAX(retry_remaining-1, 0), last_error=?"
        f" WHERE kind=? AND job_key=? AND status='running' AND {owner}",
        (now, now + int(delay), reason, KIND, KEY, token),
    )
    return cur.rowcount == 1


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
    cur = conn.execute(
        "UPDATE jobs SET status='pending', ownership_token=NULL, worker_id=NULL, lease_until=NULL"
        " WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
        (KIND, KEY, token),
    )
    return cur.rowcount == 1
