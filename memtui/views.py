"""Read models for the list screens, paged in SQL so 100,000 threads stay cheap.

Domain-side (no textual import): the TUI shows these rows, tests and benchmarks call them directly.
Two small job actions (retry now, release a stale lease) live here too because they are one UPDATE each.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtui import clock
from memtui.labels import SKIP_REASON, label
from memtui.phase1.eligibility import NEVER_ELIGIBLE_SQL
from memtui.state.jobs import GLOBAL, STAGE1, JobStatus

if TYPE_CHECKING:
    from memtui.phase2.review import Phase2Run

__all__ = ["GLOBAL", "STAGE1", "JobStatus"]  # re-exported for the screens

# The stage-1 status of a thread, as one SQL expression over threads t, jobs j, stage1_outputs o.
# Skipped threads say why (ingest reason or memory mode); a finished job without an output is a no-op.
_LAST_RUN = (
    "(SELECT r.{col} FROM job_runs r WHERE r.kind='memory_stage1' AND r.job_key=t.id ORDER BY r.id DESC LIMIT 1)"
)
STATUS_SQL = f"""
CASE
  WHEN j.status = 'running' THEN 'running'
  WHEN j.status = 'error' THEN 'failed'
  WHEN o.thread_id IS NOT NULL THEN 'done'
  WHEN t.ingest_status != 'indexed' OR ({NEVER_ELIGIBLE_SQL}) IS NOT NULL THEN 'skipped'
  WHEN j.status = 'done' AND (COALESCE({_LAST_RUN.format(col="noop")}, 0) = 1
       OR {_LAST_RUN.format(col="outcome")} = 'no_output') THEN 'no-op'
  WHEN j.status = 'done' THEN 'done'
  ELSE 'pending'
END"""

_JOINS = "LEFT JOIN jobs j ON j.kind='memory_stage1' AND j.job_key=t.id LEFT JOIN stage1_outputs o ON o.thread_id=t.id"

# Column key -> SQL sort expression. Keys are the DataTable column keys.
ROLLOUT_SORTS: dict[str, str] = {
    "updated": "t.updated_at",
    "project": "COALESCE(t.cwd, '')",
    "source": "t.source_kind || ':' || t.session_source",
    "size": "t.bytes",
    "status": STATUS_SQL,
    "usage": "COALESCE(o.usage_count, 0)",
    "last_use": "COALESCE(o.last_usage, 0)",
    "preview": "t.preview",
}

# Each term must match one of these (OR short-circuits, which beats one concatenated haystack per row).
_FILTER_COLUMNS = (
    "t.preview",
    "COALESCE(t.cwd,'')",
    "t.id",
    "t.source_kind",
    "t.session_source",
    "COALESCE(t.title,'')",
)


@dataclass(frozen=True)
class RolloutRow:
    id: str
    updated_at: int
    cwd: str
    source: str
    bytes: int
    status: str
    reason: str
    usage_count: int
    last_usage: int | None
    preview: str
    path: str
    source_kind: str
    lease_expired: bool = False  # running, but its worker's lease ran out: the screens say "stale"


def _like(term: str) -> str:
    """A LIKE pattern matching ``term`` literally anywhere (``%`` and ``_`` escaped; use with ESCAPE '\\')."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# Statuses the job row alone decides (the first branches of STATUS_SQL): a count filters on the job's indexed
# status instead of evaluating the whole CASE, with its subqueries, for every thread.
_JOB_DECIDES = {"running": "running", "failed": "error"}


def _filter_clause(filter_text: str, *, by_job_status: bool = False) -> tuple[str, list[Any]]:
    """Every whitespace-separated term must match one column; `status:x` and `source:x` match exactly.

    ``by_job_status``: `status:running` and `status:failed` test the job's status, the same rows by STATUS_SQL's
    first branches; a count uses it (an ordered page is faster walking the threads by date, as it stops early)."""
    clauses: list[str] = []
    args: list[Any] = []
    for term in filter_text.split():
        key, _, value = term.partition(":")
        if value and key == "status" and by_job_status and value.lower() in _JOB_DECIDES:
            clauses.append("j.status = ?")
            args.append(_JOB_DECIDES[value.lower()])
        elif value and key == "status":
            clauses.append(f"({STATUS_SQL}) = ?")
            args.append(value.lower())
        elif value and key == "source":
            clauses.append("(t.source_kind = ? OR t.session_source = ?)")
            args += [value.lower(), value.lower()]
        else:
            like = _like(term)
            clauses.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in _FILTER_COLUMNS) + ")")
            args += [like] * len(_FILTER_COLUMNS)
    return (" AND ".join(clauses) or "1"), args


def count_rollouts(conn: sqlite3.Connection, filter_text: str = "") -> int:
    where, args = _filter_clause(filter_text, by_job_status=True)
    needs_join = "status:" in filter_text
    if where == "1":  # no filter: a bare COUNT(*) reads SQLite's smallest index; "WHERE 1" walks the table
        return int(conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0])
    sql = f"SELECT COUNT(*) FROM threads t {_JOINS if needs_join else ''} WHERE {where}"
    return int(conn.execute(sql, args).fetchone()[0])


def rollout_rows(
    conn: sqlite3.Connection,
    filter_text: str = "",
    sort: str = "updated",
    descending: bool = True,
    offset: int = 0,
    limit: int = 200,
) -> list[RolloutRow]:
    """One page of threads. The page's ids are chosen first, then only those rows are decorated."""
    where, args = _filter_clause(filter_text)
    order = ROLLOUT_SORTS.get(sort, ROLLOUT_SORTS["updated"])
    direction = "DESC" if descending else "ASC"
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT t.id FROM threads t {_JOINS} WHERE {where} "
            f"ORDER BY {order} {direction}, t.id {direction} LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
    ]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"""SELECT t.id, t.updated_at, COALESCE(t.cwd, '') AS cwd, t.source_kind, t.session_source, t.bytes,
                   {STATUS_SQL} AS status, t.ingest_status, t.ingest_reason, {NEVER_ELIGIBLE_SQL} AS never,
                   j.last_error, j.lease_until,
                   COALESCE(o.usage_count, 0) AS usage_count, o.last_usage, t.preview, t.path
            FROM threads t {_JOINS} WHERE t.id IN ({marks})""",
        ids,
    ).fetchall()
    by_id = {r["id"]: r for r in rows}
    return [_rollout_row(by_id[i]) for i in ids if i in by_id]


def skip_reason(ingest_status: str, ingest_reason: str | None, never: str | None, session_source: str) -> str:
    """Why a thread is skipped, in words: the ingest problem first, else the eligibility rule it fails."""
    if ingest_status != "indexed":
        return ingest_reason or ingest_status
    if never == "not_interactive":
        return f"{label(never, SKIP_REASON)} ({session_source})"
    return label(never, SKIP_REASON)


def _lease_expired(r: sqlite3.Row) -> bool:
    return bool(r["status"] == "running" and (r["lease_until"] or 0) <= clock.now_s())


def _status_reason(r: sqlite3.Row) -> str:
    status = r["status"]
    if status == "skipped":
        return skip_reason(r["ingest_status"], r["ingest_reason"], r["never"], r["session_source"])
    if status == "failed":
        return r["last_error"] or ""
    if _lease_expired(r):
        return "lease expired"
    return ""


def _rollout_row(r: sqlite3.Row) -> RolloutRow:
    status = r["status"]
    reason = _status_reason(r)
    return RolloutRow(
        id=r["id"],
        updated_at=r["updated_at"],
        cwd=r["cwd"],
        source=f"{r['source_kind']}:{r['session_source']}",
        bytes=r["bytes"],
        status=status,
        reason=reason,
        usage_count=r["usage_count"],
        last_usage=r["last_usage"],
        preview=r["preview"],
        path=r["path"],
        source_kind=r["source_kind"],
        lease_expired=_lease_expired(r),
    )


@dataclass(frozen=True)
class ThreadDetail:
    """A thread with its stage-1 status (the word the Rollouts list shows), why, and its stage-1 output."""

    id: str
    path: str
    cwd: str
    source_kind: str
    session_source: str
    bytes: int
    updated_at: int
    status: str
    reason: str  # why it is skipped or failed, in full
    raw_memory: str
    rollout_summary: str
    usage_count: int
    last_usage: int | None


def thread_detail(conn: sqlite3.Connection, thread_id: str) -> ThreadDetail | None:
    """The thread row plus its stage-1 output and status, for the rollout detail screen."""
    r = conn.execute(
        f"""SELECT t.*, {STATUS_SQL} AS status, {NEVER_ELIGIBLE_SQL} AS never, o.raw_memory, o.rollout_summary,
                   COALESCE(o.usage_count, 0) AS usage_count, o.last_usage, j.last_error, j.lease_until
            FROM threads t {_JOINS} WHERE t.id = ?""",
        (thread_id,),
    ).fetchone()
    if r is None:
        return None
    return ThreadDetail(
        id=r["id"],
        path=r["path"],
        cwd=r["cwd"] or "",
        source_kind=r["source_kind"],
        session_source=r["session_source"],
        bytes=r["bytes"],
        updated_at=r["updated_at"],
        status=r["status"],
        reason=_status_reason(r),
        raw_memory=r["raw_memory"] or "",
        rollout_summary=r["rollout_summary"] or "",
        usage_count=r["usage_count"],
        last_usage=r["last_usage"],
    )


@dataclass(frozen=True)
class JobRun:
    """One attempt of a job (``job_runs``): the audit trail the detail screen lists."""

    started_at: int
    finished_at: int | None
    outcome: str  # succeeded | failed | no-op | running | ...
    error: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int | None
    redactions: int | None  # secrets redacted in this attempt


def job_history(conn: sqlite3.Connection, kind: str, job_key: str, limit: int = 50) -> list[JobRun]:
    rows = conn.execute(
        "SELECT * FROM job_runs WHERE kind=? AND job_key=? ORDER BY id DESC LIMIT ?", (kind, job_key, limit)
    ).fetchall()
    out = []
    for r in rows:
        try:
            reds = sum(json.loads(r["redactions"]).values()) if r["redactions"] else None
        except (ValueError, AttributeError, TypeError):
            reds = None
        outcome = "no-op" if r["noop"] else (r["outcome"] or "running")
        out.append(
            JobRun(
                started_at=r["started_at"],
                finished_at=r["finished_at"],
                outcome="no-op" if outcome == "no_output" else outcome,
                error=r["error"] or "",
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                latency_ms=r["latency_ms"],
                redactions=reds,
            )
        )
    return out


# ---- jobs -----------------------------------------------------------------------------------------

JOB_ORDER = """CASE
  WHEN j.status='running' AND COALESCE(j.lease_until, 0) <= :now THEN 0
  WHEN j.status='running' THEN 1 WHEN j.status='error' THEN 2 WHEN j.status='pending' THEN 3 ELSE 4 END"""


@dataclass(frozen=True)
class JobRow:
    kind: str
    job_key: str
    status: str  # a JobStatus, or stale (running past its lease), or awaiting_review (the Phase 2 job)
    retry_remaining: int
    worker_id: str
    lease_until: int | None
    retry_at: int | None
    last_error: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int | None
    label: str  # the thread's project or "global"


def _job_filter(filter_text: str) -> tuple[str, list[Any]]:
    clauses, args = [], []
    columns = ("j.job_key", "j.status", "COALESCE(j.last_error,'')", "j.kind")
    for term in filter_text.split():
        clauses.append("(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns) + ")")
        args += [_like(term)] * len(columns)
    return (" AND ".join(clauses) or "1"), args


def count_jobs(conn: sqlite3.Connection, filter_text: str = "") -> int:
    where, args = _job_filter(filter_text)
    return int(conn.execute(f"SELECT COUNT(*) FROM jobs j WHERE {where}", args).fetchone()[0])


def job_rows(conn: sqlite3.Connection, filter_text: str = "", offset: int = 0, limit: int = 200) -> list[JobRow]:
    """The Phase 2 job first, then stale leases, running, failed, pending and done stage-1 jobs."""
    now = clock.now_s()
    where, args = _job_filter(filter_text)
    rows = conn.execute(
        f"""SELECT j.*, t.cwd AS cwd,
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
    out = []
    awaiting = conn.execute("SELECT 1 FROM phase2_runs WHERE status='awaiting_review' LIMIT 1").fetchone() is not None
    for r in rows:
        status = r["status"]
        if status == JobStatus.RUNNING and (r["lease_until"] or 0) <= now:
            status = "stale"
        elif r["kind"] == GLOBAL and awaiting and status != JobStatus.RUNNING:
            status = "awaiting_review"  # the job is released while its result waits for a person
        out.append(
            JobRow(
                kind=r["kind"],
                job_key=r["job_key"],
                status=status,
                retry_remaining=r["retry_remaining"],
                worker_id=r["worker_id"] or "",
                lease_until=r["lease_until"],
                retry_at=r["retry_at"],
                last_error=r["last_error"] or "",
                prompt_tokens=r["prompt_tokens"],
                completion_tokens=r["completion_tokens"],
                latency_ms=r["latency_ms"],
                label="global" if r["kind"] == GLOBAL else (r["cwd"] or ""),
            )
        )
    return out


def retry_job_now(conn: sqlite3.Connection, kind: str, job_key: str) -> bool:
    """Make a failed or waiting job claimable now, with at least one attempt left. Running jobs are left alone."""
    cur = conn.execute(
        """UPDATE jobs SET retry_at = NULL, retry_remaining = MAX(retry_remaining, 1)
           WHERE kind=? AND job_key=? AND status != 'running'""",
        (kind, job_key),
    )
    return cur.rowcount > 0


def release_stale_lease(conn: sqlite3.Connection, kind: str, job_key: str) -> bool:
    """Drop an expired lease: the old owner's token no longer matches, so its late writes are refused."""
    cur = conn.execute(
        """UPDATE jobs SET status='pending', worker_id=NULL, ownership_token=NULL, lease_until=NULL, retry_at=NULL
           WHERE kind=? AND job_key=? AND status='running' AND COALESCE(lease_until, 0) <= ?""",
        (kind, job_key, clock.now_s()),
    )
    return cur.rowcount > 0


# ---- citations found in rollouts --------------------------------------------------------------------


@dataclass(frozen=True)
class CitationEventRow:
    """A recorded citation block, as the citations screen offers it."""

    key: str
    origin: str
    thread_id: str | None
    body: str
    rollout_ids: list[str]
    recorded_at: int
    entries: int  # how many entries the block holds


def citation_event_rows(conn: sqlite3.Connection, limit: int = 200) -> list[CitationEventRow]:
    """Recorded citation blocks (newest first) so a person can pick one instead of pasting."""
    rows = conn.execute(
        """SELECT e.key, e.origin, e.thread_id, e.body, e.rollout_ids, e.recorded_at,
                  (SELECT COUNT(*) FROM citation_entries c WHERE c.event_key=e.key) AS entries
           FROM citation_events e ORDER BY e.recorded_at DESC, e.key LIMIT ?""",
        (limit,),
    ).fetchall()
    out = []
    for r in rows:
        try:
            ids = json.loads(r["rollout_ids"] or "[]")
        except ValueError:
            ids = []
        out.append(
            CitationEventRow(
                key=r["key"],
                origin=r["origin"],
                thread_id=r["thread_id"],
                body=r["body"],
                rollout_ids=[str(i) for i in ids] if isinstance(ids, list) else [],
                recorded_at=r["recorded_at"],
                entries=r["entries"],
            )
        )
    return out


def thread_exists(conn: sqlite3.Connection, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM threads WHERE id=?", (thread_id,)).fetchone() is not None


# ---- phase 2 review -----------------------------------------------------------------------------------


def review_run(conn: sqlite3.Connection) -> Phase2Run | None:
    """The Phase 2 run awaiting review, else the latest run (so the screen can say what happened)."""
    from memtui.phase2.review import Phase2Run  # (GitPython behind it: loaded off the first paint)

    row = conn.execute("SELECT * FROM phase2_runs ORDER BY status = 'awaiting_review' DESC, id DESC LIMIT 1").fetchone()
    return Phase2Run.from_row(row) if row is not None else None
