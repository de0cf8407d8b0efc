"""Stage-1 job leases and the global Phase 2 enqueue: the reference's ``jobs`` semantics (§4.2, §5.3).

Every claim and finalize runs inside ``BEGIN IMMEDIATE`` so they serialise across processes, and every
finalize is conditional on the ownership token: a worker whose lease was stolen writes nothing.
``job_runs`` keeps one row per attempt (the audit trail, not job state).
"""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from memtui import clock
from memtui.state.db import immediate
from memtui.state.outputs import delete_stage1_output, upsert_stage1_output

STAGE1 = "memory_stage1"
GLOBAL = "memory_consolidate_global"
GLOBAL_KEY = "global"


class JobStatus(StrEnum):
    """``jobs.status``: the one definition (views and status derive "stale" and "failed" from these)."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


DEFAULT_RETRY_REMAINING = 3


class ClaimStatus(StrEnum):
    CLAIMED = "claimed"
    UP_TO_DATE = "up_to_date"
    RUNNING = "running"
    RETRY_BACKOFF = "retry_backoff"
    RETRY_EXHAUSTED = "retry_exhausted"
    CAP_REACHED = "cap_reached"


@dataclass(frozen=True)
class Claim:
    status: ClaimStatus
    ownership_token: str | None = None

    @property
    def claimed(self) -> bool:
        return self.status is ClaimStatus.CLAIMED


def stage1_is_up_to_date(conn: sqlite3.Connection, thread_id: str, source_updated_at: int) -> bool:
    """True when this snapshot (or a newer one) was already extracted: output row or last success watermark."""
    row = conn.execute(
        """
        SELECT
          (SELECT source_updated_at FROM stage1_outputs WHERE thread_id = ?1) AS out_at,
          (SELECT last_success_watermark FROM jobs WHERE kind = ?2 AND job_key = ?1) AS success_at
        """,
        (thread_id, STAGE1),
    ).fetchone()
    return any(v is not None and v >= source_updated_at for v in (row[0], row[1]))


# Jobs sent in a batch hold a lease for the batch window but no local model slot, so they do not count
# against the running cap (worker ids of batch submissions start with this prefix).
BATCH_WORKER_PREFIX = "memtui-batch-"


def _running_count(conn: sqlite3.Connection, now: int, exclude_key: str | None = None) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE kind = ? AND status = 'running' AND lease_until > ? AND job_key IS NOT ?"
        " AND COALESCE(worker_id, '') NOT LIKE ?",
        (STAGE1, now, exclude_key, BATCH_WORKER_PREFIX + "%"),
    ).fetchone()[0]


def try_claim_stage1_job(
    conn: sqlite3.Connection,
    thread_id: str,
    worker_id: str,
    source_updated_at: int,
    lease_seconds: int,
    max_running_jobs: int | None,
    *,
    force: bool = False,
) -> Claim:
    """Claim the stage-1 job of one thread with a fresh uuid4 token, or say why not.

    ``force`` (a manual ``--thread``) skips the up-to-date check and the retry gates, never a live lease or the cap.
    ``max_running_jobs`` None: no cap (batch requests hold no local model slot).
    """
    now = clock.now_s()
    with immediate(conn):
        if not force and stage1_is_up_to_date(conn, thread_id, source_updated_at):
            return Claim(ClaimStatus.UP_TO_DATE)
        row = conn.execute("SELECT * FROM jobs WHERE kind = ? AND job_key = ?", (STAGE1, thread_id)).fetchone()
        token = str(uuid.uuid4())
        if row is None:
            if max_running_jobs is not None and _running_count(conn, now) >= max_running_jobs:
                return Claim(ClaimStatus.CAP_REACHED)
            conn.execute(
                """
                INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, started_at, finished_at,
                                  lease_until, retry_at, retry_remaining, last_error, input_watermark)
                VALUES (?, ?, 'running', ?, ?, ?, NULL, ?, NULL, ?, NULL, ?)
                """,
                (
                    STAGE1,
                    thread_id,
                    worker_id,
                    token,
                    now,
                    now + lease_seconds,
                    DEFAULT_RETRY_REMAINING,
                    source_updated_at,
                ),
            )
            return Claim(ClaimStatus.CLAIMED, token)
        advanced = row["input_watermark"] is not None and source_updated_at > row["input_watermark"]
        gates_open = advanced or force
        if row["status"] == "running" and (row["lease_until"] or 0) > now:
            return Claim(ClaimStatus.RUNNING)
        if row["retry_remaining"] <= 0 and not gates_open:
            return Claim(ClaimStatus.RETRY_EXHAUSTED)
        if row["retry_at"] is not None and row["retry_at"] > now and not gates_open:
            return Claim(ClaimStatus.RETRY_BACKOFF)
        if max_running_jobs is not None and _running_count(conn, now, exclude_key=thread_id) >= max_running_jobs:
            return Claim(ClaimStatus.CAP_REACHED)
        retry_remaining = DEFAULT_RETRY_REMAINING if advanced else max(row["retry_remaining"], 1 if force else 0)
        conn.execute(
            """
            UPDATE jobs SET status = 'running', worker_id = ?, ownership_token = ?, started_at = ?, finished_at = NULL,
                            lease_until = ?, retry_at = NULL, last_error = NULL, input_watermark = ?,
                            retry_remaining = ?
            WHERE kind = ? AND job_key = ?
            """,
            (worker_id, token, now, now + lease_seconds, source_updated_at, retry_remaining, STAGE1, thread_id),
        )
        return Claim(ClaimStatus.CLAIMED, token)


def _finish_owned_job(conn: sqlite3.Connection, thread_id: str, token: str) -> int | None:
    """Owned running row → done; returns its input watermark, or None when the token no longer owns it."""
    row = conn.execute(
        "SELECT input_watermark FROM jobs WHERE kind = ? AND job_key = ? AND status = 'running' AND ownership_token = ?",
        (STAGE1, thread_id, token),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        """
        UPDATE jobs SET status = 'done', finished_at = ?, lease_until = NULL, last_error = NULL, retry_at = NULL,
                        last_success_watermark = input_watermark
        WHERE kind = ? AND job_key = ? AND ownership_token = ?
        """,
        (clock.now_s(), STAGE1, thread_id, token),
    )
    return row[0] if row[0] is not None else 0


def mark_stage1_job_succeeded(
    conn: sqlite3.Connection,
    thread_id: str,
    token: str,
    source_updated_at: int,
    raw_memory: str,
    rollout_summary: str,
    rollout_slug: str | None,
    *,
    offline: bool = False,
) -> bool:
    """Done + upsert the output (newer-or-equal wins) + enqueue Phase 2. False (nothing written) if not owned."""
    with immediate(conn):
        if _finish_owned_job(conn, thread_id, token) is None:
            return False
        upsert_stage1_output(
            conn, thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug, offline=offline
        )
        enqueue_global_consolidation(conn, source_updated_at)
        return True


def mark_stage1_job_succeeded_no_output(conn: sqlite3.Connection, thread_id: str, token: str) -> bool:
    """Done + delete any earlier output; Phase 2 is enqueued only if a row was deleted (so it forgets)."""
    with immediate(conn):
        watermark = _finish_owned_job(conn, thread_id, token)
        if watermark is None:
            return False
        if delete_stage1_output(conn, thread_id):
            enqueue_global_consolidation(conn, watermark)
        return True


def mark_stage1_job_failed(
    conn: sqlite3.Connection, thread_id: str, token: str, reason: str, retry_delay_seconds: int
) -> bool:
    """Owned running row → error, back off ``retry_delay_seconds`` and spend one retry."""
    now = clock.now_s()
    with immediate(conn):
        cur = conn.execute(
            """
            UPDATE jobs SET status = 'error', finished_at = ?, lease_until = NULL, retry_at = ?,
                            retry_remaining = MAX(retry_remaining - 1, 0), last_error = ?
            WHERE kind = ? AND job_key = ? AND status = 'running' AND ownership_token = ?
            """,
            (now, now + retry_delay_seconds, reason, STAGE1, thread_id, token),
        )
        return cur.rowcount == 1


def release_stage1_job(conn: sqlite3.Connection, thread_id: str, token: str, reason: str) -> bool:
    """Owned running row -> pending, no retry spent (work that never reached a model: an expired batch)."""
    with immediate(conn):
        cur = conn.execute(
            """
            UPDATE jobs SET status = 'pending', finished_at = ?, lease_until = NULL, retry_at = NULL, last_error = ?
            WHERE kind = ? AND job_key = ? AND status = 'running' AND ownership_token = ?
            """,
            (clock.now_s(), reason, STAGE1, thread_id, token),
        )
        return cur.rowcount == 1


def enqueue_global_consolidation(conn: sqlite3.Connection, watermark: int) -> None:
    """Upsert the global Phase 2 job as pending with a monotonic input watermark, as Codex keeps it.

    One statement, so it is atomic on its own and also safe inside the caller's transaction. A running job stays
    running; ``finished_at`` is kept so the success cooldown still applies; a watermark that is not newer still
    bumps the stored one by one, so Phase 2 always sees that something changed.
    """
    conn.execute(
        """
        INSERT INTO jobs (kind, job_key, status, retry_remaining, input_watermark, last_success_watermark)
        VALUES (?, ?, 'pending', ?, ?, 0)
        ON CONFLICT (kind, job_key) DO UPDATE SET
          status = CASE WHEN jobs.status = 'running' THEN 'running' ELSE 'pending' END,
          retry_at = CASE WHEN jobs.status = 'running' THEN jobs.retry_at ELSE NULL END,
          retry_remaining = MAX(jobs.retry_remaining, excluded.retry_remaining),
          input_watermark = CASE
            WHEN excluded.input_watermark > COALESCE(jobs.input_watermark, 0) THEN excluded.input_watermark
            ELSE COALESCE(jobs.input_watermark, 0) + 1
          END
        """,
        (GLOBAL, GLOBAL_KEY, DEFAULT_RETRY_REMAINING, watermark),
    )


# --- per-attempt records (job_runs) ---------------------------------------------------------------------------

ABANDONED = "the worker stopped (killed or crashed) before recording this attempt"


def close_abandoned_runs(conn: sqlite3.Connection, kind: str = STAGE1) -> int:
    """Close attempt rows left open by a dead worker: its token no longer holds a live running lease.

    The outcome follows the job row the token left behind (done -> succeeded, error -> failed), else ``lost_lease``.
    A live worker's row is never touched: its token still owns a running job whose lease has not expired.
    """
    now = clock.now_s()
    cur = conn.execute(
        """
        UPDATE job_runs SET finished_at = ?1, error = COALESCE(error, ?2),
          outcome = COALESCE((SELECT CASE j.status WHEN 'done' THEN 'succeeded' WHEN 'error' THEN 'failed' END
                              FROM jobs j WHERE j.kind = job_runs.kind AND j.job_key = job_runs.job_key
                                AND j.ownership_token = job_runs.ownership_token), 'lost_lease')
        WHERE kind = ?3 AND outcome IS NULL AND NOT EXISTS (
          SELECT 1 FROM jobs j WHERE j.kind = job_runs.kind AND j.job_key = job_runs.job_key
            AND j.ownership_token = job_runs.ownership_token AND j.status = 'running' AND j.lease_until > ?1)
        """,
        (now, ABANDONED, kind),
    )
    return cur.rowcount


def start_job_run(
    conn: sqlite3.Connection, kind: str, job_key: str, token: str | None, worker_id: str, **fields: Any
) -> int:
    """Open one attempt row; ``fields`` are job_runs columns known at start (offline, model...)."""
    cols = ["kind", "job_key", "ownership_token", "worker_id", "started_at", *fields]
    values = [kind, job_key, token, worker_id, clock.now_s(), *fields.values()]
    cur = conn.execute(
        f"INSERT INTO job_runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        values,
    )
    return int(cur.lastrowid or 0)


_RUN_COLUMNS = {
    "outcome",
    "error",
    "noop",
    "offline",
    "model",
    "input_bytes",
    "sent_bytes",
    "truncated_tokens",
    "estimated_tokens",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "redactions",
}


def finish_job_run(conn: sqlite3.Connection, run_id: int, **fields: Any) -> None:
    """Close an attempt row. ``redactions`` may be a dict (stored as JSON {kind: count})."""
    unknown = set(fields) - _RUN_COLUMNS
    if unknown:
        raise ValueError(f"unknown job_runs columns: {sorted(unknown)}")
    if isinstance(fields.get("redactions"), dict):
        fields["redactions"] = orjson.dumps(fields["redactions"], option=orjson.OPT_SORT_KEYS).decode()
    fields["finished_at"] = clock.now_s()
    assignments = ", ".join(f"{k} = ?" for k in fields)
    conn.execute(f"UPDATE job_runs SET {assignments} WHERE id = ?", [*fields.values(), run_id])
