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

from memtui.core import clock
from memtui.state.db import immediate, like_pattern
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


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One row of ``jobs``, typed: what every reader of a job (claims, recovery, status, review) sees."""

    kind: str
    job_key: str
    status: JobStatus
    worker_id: str | None = None
    ownership_token: str | None = None
    started_at: int | None = None
    finished_at: int | None = None
    lease_until: int | None = None
    retry_at: int | None = None
    retry_remaining: int = DEFAULT_RETRY_REMAINING
    last_error: str | None = None
    input_watermark: int | None = None
    last_success_watermark: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> JobRecord:
        return cls(
            kind=row["kind"],
            job_key=row["job_key"],
            status=JobStatus(row["status"]),
            worker_id=row["worker_id"],
            ownership_token=row["ownership_token"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            lease_until=row["lease_until"],
            retry_at=row["retry_at"],
            retry_remaining=row["retry_remaining"],
            last_error=row["last_error"],
            input_watermark=row["input_watermark"],
            last_success_watermark=row["last_success_watermark"],
        )

    @property
    def running(self) -> bool:
        return self.status is JobStatus.RUNNING


def read_job(conn: sqlite3.Connection, kind: str, job_key: str) -> JobRecord | None:
    row = conn.execute("SELECT * FROM jobs WHERE kind = ? AND job_key = ?", (kind, job_key)).fetchone()
    return None if row is None else JobRecord.from_row(row)


class RunOutcome(StrEnum):
    """``job_runs.outcome``: how one attempt ended (status and summaries count these)."""

    SUCCEEDED = "succeeded"
    NO_OUTPUT = "no_output"  # the extraction found nothing worth remembering: done, no memory written
    FAILED = "failed"
    LOST_LEASE = "lost_lease"  # another worker took the job over: this attempt wrote nothing


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
    row = conn.execute(
        "SELECT COUNT(*) FROM jobs WHERE kind = ? AND status = 'running' AND lease_until > ? AND job_key IS NOT ?"
        " AND COALESCE(worker_id, '') NOT LIKE ?",
        (STAGE1, now, exclude_key, BATCH_WORKER_PREFIX + "%"),
    ).fetchone()
    return int(row[0])


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
        row = read_job(conn, STAGE1, thread_id)
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
        advanced = row.input_watermark is not None and source_updated_at > row.input_watermark
        gates_open = advanced or force
        if row.running and (row.lease_until or 0) > now:
            return Claim(ClaimStatus.RUNNING)
        if row.retry_remaining <= 0 and not gates_open:
            return Claim(ClaimStatus.RETRY_EXHAUSTED)
        if row.retry_at is not None and row.retry_at > now and not gates_open:
            return Claim(ClaimStatus.RETRY_BACKOFF)
        if max_running_jobs is not None and _running_count(conn, now, exclude_key=thread_id) >= max_running_jobs:
            return Claim(ClaimStatus.CAP_REACHED)
        retry_remaining = DEFAULT_RETRY_REMAINING if advanced else max(row.retry_remaining, 1 if force else 0)
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


def finish_job_run(conn: sqlite3.Connection, run_id: int | None, **fields: Any) -> None:
    """Close an attempt row (none to close: ``run_id`` None). ``redactions`` may be a dict (stored as JSON {kind: count})."""
    unknown = set(fields) - _RUN_COLUMNS
    if unknown:
        raise ValueError(f"unknown job_runs columns: {sorted(unknown)}")
    if isinstance(fields.get("redactions"), dict):
        fields["redactions"] = orjson.dumps(fields["redactions"], option=orjson.OPT_SORT_KEYS).decode()
    fields["finished_at"] = clock.now_s()
    assignments = ", ".join(f"{k} = ?" for k in fields)
    conn.execute(f"UPDATE job_runs SET {assignments} WHERE id = ?", [*fields.values(), run_id])


# --- the global Phase 2 job's row (its lease logic lives in ``global_job``) ---------------------------------------


def insert_global_claimed(conn: sqlite3.Connection, worker_id: str, token: str, now: int, lease_until: int) -> None:
    conn.execute(
        "INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, started_at, finished_at,"
        " lease_until, retry_at, retry_remaining, last_error, input_watermark, last_success_watermark)"
        " VALUES (?, ?, 'running', ?, ?, ?, NULL, ?, NULL, ?, NULL, 0, 0)",
        (GLOBAL, GLOBAL_KEY, worker_id, token, now, lease_until, DEFAULT_RETRY_REMAINING),
    )


def take_global(
    conn: sqlite3.Connection, worker_id: str, token: str, now: int, lease_until: int, seen_worker: str | None
) -> bool:
    """Claim the global row unless a live lease of another worker than ``seen_worker`` holds it."""
    cur = conn.execute(
        "UPDATE jobs SET status='running', worker_id=?, ownership_token=?, started_at=?, finished_at=NULL,"
        " lease_until=?, retry_at=NULL, last_error=NULL"
        " WHERE kind=? AND job_key=? AND (NOT (status='running' AND lease_until > ?) OR worker_id IS ?)",
        (worker_id, token, now, lease_until, GLOBAL, GLOBAL_KEY, now, seen_worker),
    )
    return cur.rowcount == 1


def end_global_of_dead(conn: sqlite3.Connection, now: int, error: str, worker_id: str) -> None:
    conn.execute(
        "UPDATE jobs SET status='error', finished_at=?, lease_until=NULL, retry_at=NULL, ownership_token=NULL,"
        " last_error=? WHERE kind=? AND job_key=? AND status='running' AND worker_id=?",
        (now, error, GLOBAL, GLOBAL_KEY, worker_id),
    )


def extend_global_lease(conn: sqlite3.Connection, token: str, lease_until: int) -> bool:
    cur = conn.execute(
        "UPDATE jobs SET lease_until=? WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
        (lease_until, GLOBAL, GLOBAL_KEY, token),
    )
    return cur.rowcount == 1


def global_done(conn: sqlite3.Connection, token: str, now: int, watermark: int) -> bool:
    """Owned running -> done; the success watermark never moves back."""
    cur = conn.execute(
        "UPDATE jobs SET status='done', finished_at=?, lease_until=NULL, last_error=NULL, retry_at=NULL,"
        " last_success_watermark=MAX(COALESCE(last_success_watermark, 0), ?)"
        " WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
        (now, int(watermark), GLOBAL, GLOBAL_KEY, token),
    )
    return cur.rowcount == 1


def global_failed(conn: sqlite3.Connection, token: str, now: int, retry_at: int, reason: str, *, unowned: bool) -> bool:
    owner = "(ownership_token=? OR ownership_token IS NULL)" if unowned else "ownership_token=?"
    cur = conn.execute(
        "UPDATE jobs SET status='error', finished_at=?, lease_until=NULL, retry_at=?,"
        " retry_remaining=MAX(retry_remaining-1, 0), last_error=?"
        f" WHERE kind=? AND job_key=? AND status='running' AND {owner}",
        (now, retry_at, reason, GLOBAL, GLOBAL_KEY, token),
    )
    return cur.rowcount == 1


def release_global(conn: sqlite3.Connection, token: str) -> bool:
    cur = conn.execute(
        "UPDATE jobs SET status='pending', ownership_token=NULL, worker_id=NULL, lease_until=NULL"
        " WHERE kind=? AND job_key=? AND status='running' AND ownership_token=?",
        (GLOBAL, GLOBAL_KEY, token),
    )
    return cur.rowcount == 1


# --- the jobs list and an attempt history, as the screens page them ---------------------------------------------

JOB_ORDER = """CASE
  WHEN j.status='running' AND COALESCE(j.lease_until, 0) <= :now THEN 0
  WHEN j.status='running' THEN 1 WHEN j.status='error' THEN 2 WHEN j.status='pending' THEN 3 ELSE 4 END"""


def _job_filter(filter_text: str) -> tuple[str, list[Any]]:
    clauses, args = [], []
    columns = ("j.job_key", "j.status", "COALESCE(j.last_error,'')", "j.kind")
    for term in filter_text.split():
        clauses.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
        args += [like_pattern(term)] * len(columns)
    return (" AND ".join(clauses) or "1"), args


def count_listed(conn: sqlite3.Connection, filter_text: str = "") -> int:
    where, args = _job_filter(filter_text)
    return int(conn.execute(f"SELECT COUNT(*) FROM jobs j WHERE {where}", args).fetchone()[0])


@dataclass(frozen=True, slots=True)
class ListedJob:
    kind: str
    job_key: str
    status: str
    retry_remaining: int
    worker_id: str | None
    lease_until: int | None
    retry_at: int | None
    last_error: str | None
    cwd: str | None  # the thread's project (stage-1 jobs)
    prompt_tokens: int | None  # of the latest attempt
    completion_tokens: int | None
    latency_ms: int | None


def list_page(conn: sqlite3.Connection, filter_text: str, now: int, offset: int, limit: int) -> list[ListedJob]:
    """The Phase 2 job first, then stale leases, running, failed, pending and done stage-1 jobs."""
    where, args = _job_filter(filter_text)
    rows = conn.execute(
        f"""SELECT j.kind, j.job_key, j.status, j.retry_remaining, j.worker_id, j.lease_until, j.retry_at,
              j.last_error, t.cwd AS cwd,
              (SELECT r.prompt_tokens FROM job_runs r WHERE r.kind=j.kind AND r.job_key=j.job_key
                 ORDER BY r.id DESC LIMIT 1) AS prompt_tokens,
              (SELECT r.completion_tokens FROM job_runs r WHERE r.kind=j.kind AND r.job_key=j.job_key
                 ORDER BY r.id DESC LIMIT 1) AS completion_tokens,
              (SELECT r.latency_ms FROM job_runs r WHERE r.kind=j.kind AND r.job_key=j.job_key
                 ORDER BY r.id DESC LIMIT 1) AS latency_ms
            FROM (SELECT * FROM jobs j WHERE {where.replace(":now", "?")}
                  ORDER BY j.kind != 'memory_consolidate_global', {JOB_ORDER.replace(":now", "?")},
                           COALESCE(j.retry_at, j.lease_until, j.finished_at, 0) DESC, j.job_key
                  LIMIT ? OFFSET ?) j
            LEFT JOIN threads t ON j.kind='memory_stage1' AND t.id=j.job_key""",
        [*args, now, limit, offset],
    ).fetchall()
    return [ListedJob(*r) for r in rows]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One ``job_runs`` row as the detail screen lists it."""

    started_at: int
    finished_at: int | None
    outcome: str | None
    noop: int
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int | None
    redactions: str | None  # JSON {kind: count}


def attempts(conn: sqlite3.Connection, kind: str, job_key: str, limit: int = 50) -> list[Attempt]:
    rows = conn.execute(
        "SELECT started_at, finished_at, outcome, noop, error, prompt_tokens, completion_tokens, latency_ms,"
        " redactions FROM job_runs WHERE kind=? AND job_key=? ORDER BY id DESC LIMIT ?",
        (kind, job_key, limit),
    ).fetchall()
    return [Attempt(*r) for r in rows]


def retry_now(conn: sqlite3.Connection, kind: str, job_key: str) -> bool:
    """Make a failed or waiting job claimable now, with at least one attempt left. Running jobs are left alone."""
    cur = conn.execute(
        """UPDATE jobs SET retry_at = NULL, retry_remaining = MAX(retry_remaining, 1)
           WHERE kind=? AND job_key=? AND status != 'running'""",
        (kind, job_key),
    )
    return cur.rowcount > 0


def release_expired_lease(conn: sqlite3.Connection, kind: str, job_key: str, now: int) -> bool:
    """Drop an expired lease: the old owner's token no longer matches, so its late writes are refused."""
    cur = conn.execute(
        """UPDATE jobs SET status='pending', worker_id=NULL, ownership_token=NULL, lease_until=NULL, retry_at=NULL
           WHERE kind=? AND job_key=? AND status='running' AND COALESCE(lease_until, 0) <= ?""",
        (kind, job_key, now),
    )
    return cur.rowcount > 0


@dataclass(frozen=True, slots=True)
class Stage1Counts:
    """What ``memtui status`` counts of stage-1 jobs and their attempts."""

    by_status: dict[str, int]  # pending/running/done/error, plus stale_lease and retry_exhausted
    outcomes: dict[str, int]
    failures: dict[str, int]  # last_error -> jobs
    prompt_tokens: int
    completion_tokens: int
    redactions: dict[str, int]  # kind -> count, the latest redacting attempt per rollout


def stage1_counts(conn: sqlite3.Connection, now: int) -> Stage1Counts:
    def one(sql: str, *a: object) -> int:
        return int(conn.execute(sql, a).fetchone()[0])

    by_status: dict[str, int] = {"pending": 0, "running": 0, "done": 0, "error": 0, "stale_lease": 0}
    for status, n in conn.execute("SELECT status, COUNT(*) FROM jobs WHERE kind=? GROUP BY 1", (STAGE1,)):
        by_status[status] = n
    by_status["stale_lease"] = one(
        "SELECT COUNT(*) FROM jobs WHERE kind=? AND status='running' AND lease_until <= ?", STAGE1, now
    )
    by_status["retry_exhausted"] = one(
        "SELECT COUNT(*) FROM jobs WHERE kind=? AND status='error' AND retry_remaining <= 0", STAGE1
    )
    outcomes = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT outcome, COUNT(*) FROM job_runs WHERE kind=? AND outcome IS NOT NULL GROUP BY 1", (STAGE1,)
        )
    }
    tokens = conn.execute(
        "SELECT COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0) FROM job_runs WHERE kind=?",
        (STAGE1,),
    ).fetchone()
    redactions: dict[str, int] = {}
    # Per rollout, the latest attempt that redacted anything: re-extracting a rollout does not count it twice.
    for (blob,) in conn.execute(
        """SELECT r.redactions FROM job_runs r
           WHERE r.kind=?1 AND r.id = (SELECT MAX(x.id) FROM job_runs x WHERE x.kind=?1 AND x.job_key=r.job_key
                                        AND x.redactions IS NOT NULL AND x.redactions <> '{}')""",
        (STAGE1,),
    ):
        for kind, n in orjson.loads(blob).items():
            redactions[kind] = redactions.get(kind, 0) + int(n)
    failures = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT COALESCE(last_error, 'unknown'), COUNT(*) FROM jobs WHERE kind=? AND status='error' GROUP BY 1",
            (STAGE1,),
        )
    }
    return Stage1Counts(by_status, outcomes, failures, tokens[0], tokens[1], redactions)


def forget_stage1(conn: sqlite3.Connection, thread_id: str) -> int:
    """The thread's stage-1 job and attempts (their errors can quote it)."""
    n = conn.execute("DELETE FROM jobs WHERE kind=? AND job_key=?", (STAGE1, thread_id)).rowcount
    return n + conn.execute("DELETE FROM job_runs WHERE kind=? AND job_key=?", (STAGE1, thread_id)).rowcount


def stage1_state(conn: sqlite3.Connection, thread_id: str) -> tuple[str, str | None] | None:
    """(status, ownership_token) of the thread's stage-1 job."""
    row = conn.execute(
        "SELECT status, ownership_token FROM jobs WHERE kind = ? AND job_key = ?", (STAGE1, thread_id)
    ).fetchone()
    return None if row is None else (row[0], row[1])


def running_without_batch_request(conn: sqlite3.Connection, worker_id: str) -> list[tuple[str, str]]:
    """(job_key, token) of the stage-1 jobs ``worker_id`` holds that no batch request carries (claimed by a
    preparing run that stopped before writing their request rows)."""
    rows = conn.execute(
        "SELECT job_key, ownership_token FROM jobs WHERE kind = ? AND status = 'running' AND worker_id = ?"
        " AND ownership_token NOT IN (SELECT ownership_token FROM batch_requests)",
        (STAGE1, worker_id),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
