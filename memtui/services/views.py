"""Read models for the list screens, paged in SQL so 100,000 threads stay cheap.

Domain-side (no textual import): the TUI shows these rows, tests and benchmarks call them directly. The queries
belong to the tables' owners in ``memtui/state``; this module turns their rows into what the screens show. Two
small job actions (retry now, release a stale lease) are here too, for the screens.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from memtui.core import clock
from memtui.domain.labels import SKIP_REASON, label
from memtui.state import citations, jobs, runs, threads
from memtui.state.jobs import GLOBAL, STAGE1, JobStatus
from memtui.state.runs import Phase2Run

__all__ = ["GLOBAL", "STAGE1", "JobStatus"]  # re-exported for the screens


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
    lease_expired: bool = False
    title: str = ""  # a title of its own (``shown_title``), "" when it only repeats the preview  # running, but its worker's lease ran out: the screens say "stale"


def count_rollouts(conn: sqlite3.Connection, filter_text: str = "") -> int:
    return threads.count_listed(conn, filter_text)


def count_rollouts_from_indexes(conn: sqlite3.Connection, filter_text: str = "") -> int | None:
    """The count when indexes answer it (a few milliseconds at 100k threads), else None."""
    return threads.count_listed_from_indexes(conn, filter_text)


def rollout_rows(
    conn: sqlite3.Connection,
    filter_text: str = "",
    sort: str = "updated",
    descending: bool = True,
    offset: int = 0,
    limit: int = 200,
) -> list[RolloutRow]:
    """One page of threads. The page's ids are chosen first, then only those rows are decorated."""
    return [_rollout_row(r) for r in threads.list_page(conn, filter_text, sort, descending, offset, limit)]


def skip_reason(ingest_status: str, ingest_reason: str | None, never: str | None, session_source: str) -> str:
    """Why a thread is skipped, in words: the ingest problem first, else the eligibility rule it fails."""
    if ingest_status != "indexed":
        return ingest_reason or ingest_status
    if never == "not_interactive":
        return f"{label(never, SKIP_REASON)} ({session_source})"
    return label(never, SKIP_REASON)


def _lease_expired(r: threads.ListedThread) -> bool:
    return r.status == "running" and (r.lease_until or 0) <= clock.now_s()


def _status_reason(r: threads.ListedThread) -> str:
    if r.status == "skipped":
        return skip_reason(r.ingest_status, r.ingest_reason, r.never, r.session_source)
    if r.status == "failed":
        return r.last_error or ""
    if _lease_expired(r):
        return "lease expired"
    return ""


def _rollout_row(r: threads.ListedThread) -> RolloutRow:
    return RolloutRow(
        id=r.id,
        updated_at=r.updated_at,
        cwd=r.cwd,
        source=f"{r.source_kind}:{r.session_source}",
        bytes=r.bytes,
        status=r.status,
        reason=_status_reason(r),
        usage_count=r.usage_count,
        last_usage=r.last_usage,
        preview=r.preview,
        path=r.path,
        source_kind=r.source_kind,
        lease_expired=_lease_expired(r),
        title=shown_title(r.title, r.preview),
    )


def shown_title(title: str | None, preview: str) -> str:
    """The thread's title when it says something the preview does not: one a person gave (Claude Code's
    ``/rename``, a Codex thread name) or a summary line; "" for the first prompt's line the indexer fell back to."""
    title = (title or "").strip()
    if not title:
        return ""
    head = title.removesuffix("…").rstrip()
    return "" if preview.strip().startswith(head) else title


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
    title: str = ""  # ``shown_title``


def thread_detail(conn: sqlite3.Connection, thread_id: str) -> ThreadDetail | None:
    """The thread row plus its stage-1 output and status, for the rollout detail screen."""
    r = threads.listed(conn, thread_id)
    if r is None:
        return None
    return ThreadDetail(
        id=r.id,
        path=r.path,
        cwd=r.cwd,
        source_kind=r.source_kind,
        session_source=r.session_source,
        bytes=r.bytes,
        updated_at=r.updated_at,
        status=r.status,
        reason=_status_reason(r),
        raw_memory=r.raw_memory,
        rollout_summary=r.rollout_summary,
        usage_count=r.usage_count,
        last_usage=r.last_usage,
        title=shown_title(r.title, r.preview),
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
    out = []
    for r in jobs.attempts(conn, kind, job_key, limit):
        try:
            reds = sum(json.loads(r.redactions).values()) if r.redactions else None
        except (ValueError, AttributeError, TypeError):
            reds = None
        outcome = "no-op" if r.noop else (r.outcome or "running")
        out.append(
            JobRun(
                started_at=r.started_at,
                finished_at=r.finished_at,
                outcome="no-op" if outcome == "no_output" else outcome,
                error=r.error or "",
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                latency_ms=r.latency_ms,
                redactions=reds,
            )
        )
    return out


# ---- jobs -----------------------------------------------------------------------------------------


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


def count_jobs(conn: sqlite3.Connection, filter_text: str = "") -> int:
    return jobs.count_listed(conn, filter_text)


def job_rows(conn: sqlite3.Connection, filter_text: str = "", offset: int = 0, limit: int = 200) -> list[JobRow]:
    """The Phase 2 job first, then stale leases, running, failed, pending and done stage-1 jobs."""
    now = clock.now_s()
    rows = jobs.list_page(conn, filter_text, now, offset, limit)
    out = []
    awaiting = runs.any_pending(conn)
    for r in rows:
        status = r.status
        if status == JobStatus.RUNNING and (r.lease_until or 0) <= now:
            status = "stale"
        elif r.kind == GLOBAL and awaiting and status != JobStatus.RUNNING:
            status = "awaiting_review"  # the job is released while its result waits for a person
        out.append(
            JobRow(
                kind=r.kind,
                job_key=r.job_key,
                status=status,
                retry_remaining=r.retry_remaining,
                worker_id=r.worker_id or "",
                lease_until=r.lease_until,
                retry_at=r.retry_at,
                last_error=r.last_error or "",
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                latency_ms=r.latency_ms,
                label="global" if r.kind == GLOBAL else (r.cwd or ""),
            )
        )
    return out


def retry_job_now(conn: sqlite3.Connection, kind: str, job_key: str) -> bool:
    """Make a failed or waiting job claimable now, with at least one attempt left. Running jobs are left alone."""
    return jobs.retry_now(conn, kind, job_key)


def release_stale_lease(conn: sqlite3.Connection, kind: str, job_key: str) -> bool:
    """Drop an expired lease: the old owner's token no longer matches, so its late writes are refused."""
    return jobs.release_expired_lease(conn, kind, job_key, clock.now_s())


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
    out = []
    for r in citations.newest_events(conn, limit):
        try:
            ids = json.loads(r.rollout_ids or "[]")
        except ValueError:
            ids = []
        out.append(
            CitationEventRow(
                key=r.key,
                origin=r.origin,
                thread_id=r.thread_id,
                body=r.body,
                rollout_ids=[str(i) for i in ids] if isinstance(ids, list) else [],
                recorded_at=r.recorded_at,
                entries=r.entries,
            )
        )
    return out


def thread_titles(conn: sqlite3.Connection, thread_ids: list[str]) -> dict[str, str]:
    """id -> ``shown_title`` for the threads that have a title of their own (what a CLI listing names them by)."""
    rows = threads.titles_and_previews(conn, thread_ids)
    return {tid: shown for tid, (title, preview) in rows.items() if (shown := shown_title(title, preview))}


def thread_exists(conn: sqlite3.Connection, thread_id: str) -> bool:
    return threads.exists(conn, thread_id)


# ---- phase 2 review -----------------------------------------------------------------------------------


def review_run(conn: sqlite3.Connection) -> Phase2Run | None:
    """The Phase 2 run awaiting review, else the latest run (so the screen can say what happened)."""
    return runs.pending_or_latest(conn)
