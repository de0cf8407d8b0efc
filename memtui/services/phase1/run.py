"""Phase 1 orchestration: eligible threads → leased jobs → extractor → redacted outputs → finalize.

Workers (``concurrency`` asyncio tasks) claim one job at a time, so the global running cap is honoured across
processes and a long run keeps claiming as slots free up. Every write after the claim is conditional on the
ownership token; an attempt whose lease was stolen is recorded as ``lost_lease`` and writes nothing else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  (asyncio.to_thread's executor, loaded before the first job)
import os
import sqlite3
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, Field

from memtui.adapters.llm.backends.choose import make_backend, resolved_provider
from memtui.core.settings import Settings
from memtui.services.context import Context
from memtui.services.phase1 import finalize
from memtui.services.phase1.eligibility import (
    Candidate,
    OlderSessions,
    older_sessions,
    select_candidates,
    skip_hints,
)
from memtui.services.phase1.extractor import (
    Extraction,
    ExtractionFailed,
    Extractor,
    ModelExtractor,
    add_counts,
)
from memtui.services.phase1.offline import OfflineExtractor
from memtui.services.retention import housekeeping
from memtui.state.jobs import (
    STAGE1,
    ClaimStatus,
    RunOutcome,
    close_abandoned_runs,
    finish_job_run,
    mark_stage1_job_failed,
    start_job_run,
    try_claim_stage1_job,
)

CAP_POLL_SECONDS = 0.25
CAP_WAIT_SECONDS = 30.0  # per run: how long to wait for other processes to free a slot before skipping

ProgressFn = Callable[[int, int, str], None]  # (finished jobs, candidates, detail)


class Cancel(Protocol):
    def is_set(self) -> bool: ...


class Phase1Summary(BaseModel):
    """What one run did; ``memtui phase1 --json`` prints exactly this."""

    candidates: int = 0
    claimed: int = 0
    succeeded: int = 0
    noop: int = 0
    failed: int = 0
    lost_lease: int = 0
    failures: dict[str, int] = Field(default_factory=dict)  # reason → count
    skipped: dict[str, int] = Field(default_factory=dict)  # reason → count
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: int = 0
    sent_bytes: int = 0
    input_bytes: int = 0
    redactions: dict[str, int] = Field(default_factory=dict)
    dropped_quotes: int = 0  # output lines quoting words the user never said, removed before storage
    hidden_removed: int = 0  # invisible characters removed from the outputs before storage (``trust.hidden``)
    dropped_untrusted: int = 0  # lines presenting tool or agent text as the user's, removed before storage
    seconds: float = 0.0
    offline: bool = False
    model: str = ""
    cancelled: bool = False
    provider: str = ""
    halted: str | None = None  # the backend cannot serve now (login, usage limit...): the run stopped claiming
    expired: int = 0  # retention at the start of the run: stage-1 outputs unused for max_unused_days, removed
    opted_out: list[str] = Field(default_factory=list)  # rollouts forgotten: their memory was turned off
    opt_outs_waiting: int = 0  # opt-outs left for the next run (a Phase 2 run awaits review)
    older: OlderSessions | None = None  # older sessions not read yet: the backfill ``--all`` would do (the offer)
    hints: list[str] = Field(default_factory=list)  # nothing extracted: per skip reason, what would change it


def run_phase1(
    ctx: Context,
    *,
    limit: int | None = None,
    thread_id: str | None = None,
    all_threads: bool = False,
    offline: bool | None = None,
    model: str | None = None,
    concurrency: int | None = None,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
) -> Phase1Summary:
    """Run Phase 1 once (blocking). Safe to call from a worker thread: it opens its own connection and loop."""
    conn = ctx.new_conn()
    try:
        done = housekeeping(
            Context(ctx.loaded, ctx.paths, _conn=conn)
        )  # retention and opt-outs first, as the seed does
        summary = asyncio.run(
            run_phase1_async(
                conn,
                ctx.settings,
                limit=limit,
                thread_id=thread_id,
                all_threads=all_threads,
                offline=offline,
                model=model,
                concurrency=concurrency,
                progress=progress,
                cancel=cancel,
            )
        )
        summary.expired, summary.opted_out, summary.opt_outs_waiting = done.expired, done.opted_out, done.waiting
        return summary
    finally:
        conn.close()


def make_extractor(settings: Settings, *, offline: bool | None, model: str | None) -> Extractor:
    provider = "offline" if offline else resolved_provider(settings)
    if provider == "offline":
        return OfflineExtractor()
    return ModelExtractor(settings, make_backend(settings, name=provider), model)


async def run_phase1_async(
    conn: sqlite3.Connection,
    settings: Settings,
    *,
    limit: int | None = None,
    thread_id: str | None = None,
    all_threads: bool = False,
    offline: bool | None = None,
    model: str | None = None,
    concurrency: int | None = None,
    progress: ProgressFn | None = None,
    cancel: Cancel | None = None,
    extractor: Extractor | None = None,
) -> Phase1Summary:
    started = time.perf_counter()
    close_abandoned_runs(conn)  # attempts of a killed worker would otherwise stay open forever
    extractor = extractor or make_extractor(settings, offline=offline, model=model)
    candidates, skipped = select_candidates(conn, settings, thread_id=thread_id, all_threads=all_threads)
    summary = Phase1Summary(
        candidates=len(candidates), skipped=skipped, offline=extractor.offline, model=extractor.model
    )
    run = _Run(conn, settings, extractor, summary, candidates, limit, thread_id is not None, progress, cancel)
    workers = max(1, concurrency or settings.concurrency)
    try:
        await asyncio.gather(*(run.worker() for _ in range(min(workers, max(1, len(candidates))))))
    finally:
        aclose = getattr(extractor, "aclose", None)
        if aclose is not None:
            await aclose()
    if run.halted:
        summary.halted = run.halted
        if run.queue:
            summary.skipped["backend_unavailable"] = summary.skipped.get("backend_unavailable", 0) + len(run.queue)
    if not (all_threads or thread_id) and skipped.get("too_old"):  # the scan met one: count them all, with the span
        summary.older = older_sessions(conn, settings)
    if not summary.claimed:  # the offer names the backfill already: no hint repeats it
        offered = {"too_old"} if summary.older is not None else set()
        summary.hints = skip_hints({k: n for k, n in summary.skipped.items() if k not in offered}, settings)
    summary.provider = "offline" if extractor.offline else getattr(getattr(extractor, "backend", None), "name", "")
    summary.cancelled = bool(cancel and cancel.is_set())
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


class _Run:
    """Shared state of the workers of one run."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        settings: Settings,
        extractor: Extractor,
        summary: Phase1Summary,
        candidates: list[Candidate],
        limit: int | None,
        force: bool,
        progress: ProgressFn | None,
        cancel: Cancel | None,
    ):
        self.conn, self.settings, self.extractor, self.summary = conn, settings, extractor, summary
        self.queue: deque[Candidate] = deque(candidates)
        self.total = len(candidates)
        self.limit, self.force, self.progress, self.cancel = limit, force, progress, cancel
        self.worker_id = f"memtui-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.in_flight = 0
        self.finished = 0
        self.freed = asyncio.Condition()
        self.cap_wait_left = CAP_WAIT_SECONDS
        self.halted: str | None = None

    def _skip(self, reason: str) -> None:
        self.summary.skipped[reason] = self.summary.skipped.get(reason, 0) + 1

    def _stop(self) -> bool:
        if self.halted or (self.cancel is not None and self.cancel.is_set()):
            return True
        return self.limit is not None and self.summary.claimed >= self.limit

    async def worker(self) -> None:
        while self.queue and not self._stop():
            job = self.queue.popleft()
            token = await self._claim(job)
            if token is None:
                self._tick(job, "skipped")
                continue
            self.in_flight += 1
            try:
                await self._process(job, token)
            finally:
                self.in_flight -= 1
                async with self.freed:
                    self.freed.notify_all()

    async def _claim(self, job: Candidate) -> str | None:
        """Claim; when the global cap is full, wait for a slot instead of skipping (never a hot loop).

        With our own jobs in flight we wait for one of them to finish. When other processes hold every slot we
        poll every ``CAP_POLL_SECONDS`` for at most ``CAP_WAIT_SECONDS`` per run, then skip as ``cap_reached``.
        """
        while True:
            claim = try_claim_stage1_job(
                self.conn,
                job.thread_id,
                self.worker_id,
                job.updated_at,
                self.settings.job_lease_seconds,
                self.settings.concurrency,
                force=self.force,
            )
            if claim.status is ClaimStatus.CLAIMED:
                self.summary.claimed += 1
                return claim.ownership_token
            if claim.status is ClaimStatus.CAP_REACHED and not self._stop():
                if self.in_flight > 0:
                    async with self.freed:
                        await self.freed.wait()
                    continue
                if self.cap_wait_left > 0:
                    self.cap_wait_left -= CAP_POLL_SECONDS
                    await asyncio.sleep(CAP_POLL_SECONDS)
                    continue
            self._skip(claim.status.value)
            return None

    async def _process(self, job: Candidate, token: str) -> None:
        run_id = start_job_run(
            self.conn,
            STAGE1,
            job.thread_id,
            token,
            self.worker_id,
            offline=int(self.extractor.offline),
            model=self.extractor.model,
        )
        record: dict[str, Any] = {}
        try:
            result = await self.extractor.extract(job)
        except ExtractionFailed as exc:
            reason = str(exc)
            if exc.stops_run and not self.halted:
                self.halted = reason
            record = _measurements(exc.partial) if exc.partial else {}
            owned = mark_stage1_job_failed(
                self.conn, job.thread_id, token, reason, self.settings.job_retry_delay_seconds
            )
            record.update(outcome=RunOutcome.FAILED if owned else RunOutcome.LOST_LEASE, error=reason)
        except Exception as exc:  # a bug or an unexpected I/O error: still a recorded, backed-off failure
            reason = f"{type(exc).__name__}: {exc}"
            owned = mark_stage1_job_failed(
                self.conn, job.thread_id, token, reason, self.settings.job_retry_delay_seconds
            )
            record = {"outcome": RunOutcome.FAILED if owned else RunOutcome.LOST_LEASE, "error": reason}
        else:
            try:
                # CPU work over the whole rollout: off the event loop, so the other calls in flight keep going.
                out = await asyncio.to_thread(finalize.prepare, result, result.redactions)
                record = self._store(job, token, result, out)
            except Exception as exc:  # storing failed: a recorded, backed-off failure, never a job left running
                reason = f"storing the output failed: {type(exc).__name__}: {exc}"
                owned = mark_stage1_job_failed(
                    self.conn, job.thread_id, token, reason, self.settings.job_retry_delay_seconds
                )
                record = {"outcome": RunOutcome.FAILED if owned else RunOutcome.LOST_LEASE, "error": reason}
        finish_job_run(self.conn, run_id, **record)
        self._account(record)
        self._tick(job, record["outcome"])

    def _store(self, job: Candidate, token: str, result: Any, out: Any) -> dict[str, Any]:
        """Finalize one extraction: ``out`` is its output redacted and trust-marked (``finalize.prepare``)."""
        record = _measurements(result)
        self.summary.dropped_quotes += len(result.dropped_quotes)
        record["redactions"] = result.redactions
        self.summary.hidden_removed += result.hidden_removed
        self.summary.dropped_untrusted += len(result.dropped_untrusted)
        stored = finalize.store(self.conn, job.thread_id, token, job.updated_at, out, offline=result.offline)
        record.update(outcome=stored.outcome, noop=stored.noop)
        if stored.error:
            record["error"] = stored.error
        return record

    def _account(self, record: dict[str, Any]) -> None:
        s = self.summary
        match RunOutcome(record["outcome"]):
            case RunOutcome.SUCCEEDED:
                s.succeeded += 1
            case RunOutcome.NO_OUTPUT:
                s.noop += 1
            case RunOutcome.LOST_LEASE:
                s.lost_lease += 1
            case RunOutcome.FAILED:
                s.failed += 1
                reason = short_reason(record.get("error") or "unknown")
                s.failures[reason] = s.failures.get(reason, 0) + 1
        s.prompt_tokens += record.get("prompt_tokens") or 0
        s.completion_tokens += record.get("completion_tokens") or 0
        s.estimated_tokens += record.get("estimated_tokens") or 0
        s.sent_bytes += record.get("sent_bytes") or 0
        s.input_bytes += record.get("input_bytes") or 0
        add_counts(s.redactions, record.get("redactions") or {})

    def _tick(self, job: Candidate, what: str) -> None:
        self.finished += 1
        if self.progress is not None:
            self.progress(self.finished, self.total, f"{job.thread_id[:13]} {what}")


def _measurements(e: Extraction) -> dict[str, Any]:
    return {
        "offline": int(e.offline),
        "model": e.model,
        "input_bytes": e.input_bytes,
        "sent_bytes": e.sent_bytes,
        "estimated_tokens": e.estimated_tokens,
        "truncated_tokens": e.truncated_tokens,
        "prompt_tokens": e.prompt_tokens,
        "completion_tokens": e.completion_tokens,
        "latency_ms": e.latency_ms,
        "redactions": e.redactions,
    }


def short_reason(reason: str) -> str:
    """Group failure reasons for the summary: the text before the first colon-detail, capped."""
    head = reason.split("\n", 1)[0]
    return head if len(head) <= 100 else head[:99] + "…"
