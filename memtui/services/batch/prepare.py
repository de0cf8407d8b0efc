"""Claim eligible rollouts with a lease as long as the batch window and write one request line per rollout.

The line's ``body`` is built by ``llm.structured.request_body``, the same function the synchronous call uses, from
the same redacted, budgeted user message (``ModelExtractor.prepare_serialized``). Claims, attempt rows and request
rows are written in chunks; a kill between a claim and its request row leaves a lease that ``abandon_unfinished``
releases on the next run (the job's worker id names the submission).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from memtui.adapters.llm.backends.openai_http import OpenAIHttpBackend
from memtui.adapters.llm.structured import request_body
from memtui.core import clock
from memtui.core.settings import Settings
from memtui.domain.render import render_items
from memtui.services.batch.model import (
    MAX_BYTES_PER_FILE,
    MAX_REQUESTS_PER_FILE,
    URL,
    PrepareSummary,
    custom_id,
    input_hash,
)
from memtui.services.phase1.eligibility import Candidate, select_candidates
from memtui.services.phase1.extractor import (
    ExtractionFailed,
    ModelExtractor,
    StageOneOutput,
    add_counts,
    read_items,
)
from memtui.state import batches
from memtui.state.db import immediate
from memtui.state.jobs import (
    BATCH_WORKER_PREFIX,
    STAGE1,
    ClaimStatus,
    finish_job_run,
    mark_stage1_job_failed,
    start_job_run,
    try_claim_stage1_job,
)

CHUNK = 256
PARALLEL_MIN = 64  # fewer rollouts than this are prepared in this process: a pool's start would cost more
MAX_WORKERS = 8
TASK = 16  # rollouts per task a worker is handed
AHEAD_PER_WORKER = 2  # tasks handed out per worker before the first result is waited for
BATCH_SCAN_LIMIT = 1_000_000  # a backfill looks at every thread, not the 5,000 newest of a synchronous run
Progress = Callable[[int, int, str], None]


@dataclass
class _Pending:
    thread_id: str
    cid: str
    digest: str
    token: str
    updated_at: int
    line: bytes
    measurements: dict[str, Any]


@dataclass
class _Part:
    id: str
    path: Path
    fh: IO[bytes]
    requests: int = 0
    bytes: int = 0
    rows: list[_Pending] = field(default_factory=list)


def batch_lease_seconds(settings: Settings) -> int:
    return int(settings.batch_lease_hours * 3600)


def _new_part(conn: sqlite3.Connection, kind: str, model: str, worker: str, path: Path) -> _Part:
    part_id = uuid.uuid4().hex[:16]
    now = clock.now_s()
    path.parent.mkdir(parents=True, exist_ok=True)
    batches.start(conn, part_id, kind, model, worker, str(path), now)
    return _Part(part_id, path, open(path, "wb"))  # closed in _close_part


def _flush_rows(conn: sqlite3.Connection, part: _Part, worker: str, model: str) -> None:
    """Attempt rows and request rows of the claimed jobs, after their lines reached the file."""
    if not part.rows:
        return
    part.fh.flush()
    with immediate(conn):
        for r in part.rows:
            run_id = start_job_run(conn, STAGE1, r.thread_id, r.token, worker, offline=0, model=model)
            batches.add_request(
                conn, part.id, r.cid, r.thread_id, r.digest, r.token, r.updated_at, run_id, orjson.dumps(r.measurements)
            )
    part.rows.clear()


def _close_part(conn: sqlite3.Connection, part: _Part, worker: str, model: str, status: str) -> None:
    _flush_rows(conn, part, worker, model)
    part.fh.flush()
    os.fsync(part.fh.fileno())
    part.fh.close()
    batches.update(conn, part.id, status=status, requests=part.requests, bytes=part.bytes, updated_at=clock.now_s())


@dataclass(frozen=True)
class _Built:
    """One claimed rollout's request line and what its request row records, as a worker hands it back."""

    line: bytes
    digest: str
    cid: str
    measurements: dict[str, Any]
    redactions: dict[str, int]


_WORKER_EXTRACTOR: ModelExtractor | None = None  # a pool worker's own, made by ``_init_worker``


def _extractor(settings: Settings, model: str | None) -> ModelExtractor:
    return ModelExtractor(settings, OpenAIHttpBackend(settings), model)  # only its prompt preparation is used


def _init_worker(settings: Settings, model: str | None) -> None:
    global _WORKER_EXTRACTOR
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the parent stops the run
    _WORKER_EXTRACTOR = _extractor(settings, model)


def _build_in_worker(jobs: list[Candidate], model_name: str) -> list[_Built | str]:
    assert _WORKER_EXTRACTOR is not None  # _init_worker ran in this process
    return [_build(_WORKER_EXTRACTOR, job, model_name) for job in jobs]


def _build(extractor: ModelExtractor, job: Candidate, model_name: str) -> _Built | str:
    """Read, render, redact, budget and serialize one rollout's request: the CPU work, with no database. A reason
    (str) when the rollout cannot be read."""
    try:
        st = os.stat(job.path)  # before reading: a write after it shows as a changed stat at collect
        items = read_items(job)
        rendered = render_items(items)
        message, info = extractor.prepare_items(job, items, rendered)
    except (ExtractionFailed, OSError, ValueError) as exc:
        return str(exc)
    digest = input_hash(rendered)
    cid = custom_id(job.thread_id, digest)
    body = request_body(model_name, extractor.system, message, StageOneOutput, "stage_one_output")
    line = orjson.dumps({"custom_id": cid, "method": "POST", "url": URL, "body": body}) + b"\n"
    measurements = {
        "input_bytes": info.input_bytes,
        "sent_bytes": info.sent_bytes,
        "estimated_tokens": info.estimated_tokens,
        "truncated_tokens": info.truncated_tokens,
        "redactions": info.redactions,
        "file_stat": [st.st_size, st.st_mtime_ns],
    }
    return _Built(line, digest, cid, measurements, info.redactions)


def _workers(jobs: int, asked: int | None) -> int:
    if asked is not None:
        return max(1, asked)
    if jobs < PARALLEL_MIN:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cpus, MAX_WORKERS)


def _pool(settings: Settings, model: str | None, n: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(n, initializer=_init_worker, initargs=(settings, model))


def _in_order(
    pool: ProcessPoolExecutor, claims: Iterator[tuple[int, Candidate, str]], model_name: str, *, ahead: int
) -> Iterator[tuple[tuple[int, Candidate, str], _Built | str]]:
    """Each claim with its built request, in claim order: ``TASK`` rollouts per round trip to a worker (one per
    rollout cost a sixth of the work in pickling and queueing), ``ahead`` tasks in the workers' hands."""
    pending: deque[tuple[list[tuple[int, Candidate, str]], Future[list[_Built | str]]]] = deque()
    task: list[tuple[int, Candidate, str]] = []

    def submit() -> None:
        pending.append((task, pool.submit(_build_in_worker, [c[1] for c in task], model_name)))

    for claim in claims:
        task.append(claim)
        if len(task) < TASK:
            continue
        submit()
        task = []
        if len(pending) >= ahead:
            done, future = pending.popleft()
            yield from zip(done, future.result(), strict=True)
    if task:
        submit()
    while pending:
        done, future = pending.popleft()
        yield from zip(done, future.result(), strict=True)


def prepare(
    conn: sqlite3.Connection,
    settings: Settings,
    *,
    kind: str,
    out: Path,
    model: str | None = None,
    limit: int | None = None,
    thread_id: str | None = None,
    all_threads: bool = False,
    split: bool = True,
    progress: Progress | None = None,
    workers: int | None = None,
) -> PrepareSummary:
    """Claim and write request files. ``kind='openai'``: ``out`` is a folder, files split at the API's limits;
    ``kind='file'``: ``out`` is the one JSONL file to write (for ``vllm run-batch``). ``workers``: processes that
    read, render, redact and budget the rollouts (default: one per CPU for a run of ``PARALLEL_MIN`` rollouts or
    more; 1: all in this process); claims, files and rows stay in this process, in candidate order, so the files
    are the same either way."""
    started = time.perf_counter()
    extractor = _extractor(settings, model)
    model_name = extractor.request_model or settings.extract_model
    candidates, skipped = select_candidates(
        conn, settings, thread_id=thread_id, all_threads=all_threads, scan_limit=BATCH_SCAN_LIMIT
    )
    summary = PrepareSummary(candidates=len(candidates), skipped=skipped, model=model_name)
    worker = f"{BATCH_WORKER_PREFIX}{uuid.uuid4().hex[:12]}"
    status_when_done = "prepared" if kind == "openai" else "exported"
    lease = batch_lease_seconds(settings)
    parts: list[_Part] = []

    def path_for(n: int) -> Path:
        return out / f"{clock.now_s()}-{worker[-12:]}-{n:03d}.jsonl" if kind == "openai" else out

    def claims() -> Iterator[tuple[int, Candidate, str]]:
        """The candidates this run claims, in order, each with its ownership token (claimed as they are pulled)."""
        for i, job in enumerate(candidates, 1):
            if limit is not None and summary.claimed >= limit:
                return
            claim = try_claim_stage1_job(
                conn, job.thread_id, worker, job.updated_at, lease, None, force=thread_id is not None
            )
            if claim.status is not ClaimStatus.CLAIMED or claim.ownership_token is None:
                summary.skipped[claim.status.value] = summary.skipped.get(claim.status.value, 0) + 1
                continue
            summary.claimed += 1
            yield i, job, claim.ownership_token

    n_workers = _workers(len(candidates) if limit is None else min(limit, len(candidates)), workers)
    pool = _pool(settings, model, n_workers) if n_workers > 1 else None
    part: _Part | None = None
    try:
        if pool is None:
            built: Iterator[tuple[tuple[int, Candidate, str], _Built | str]] = (
                (c, _build(extractor, c[1], model_name)) for c in claims()
            )
        else:
            built = _in_order(pool, claims(), model_name, ahead=n_workers * AHEAD_PER_WORKER)
        for (i, job, token), result in built:
            if isinstance(result, str):
                mark_stage1_job_failed(conn, job.thread_id, token, result, settings.job_retry_delay_seconds)
                run_id = start_job_run(conn, STAGE1, job.thread_id, token, worker, offline=0, model=model_name)
                finish_job_run(conn, run_id, outcome="failed", error=result)
                summary.failed += 1
                head = result.split(":", 1)[0][:80]
                summary.failures[head] = summary.failures.get(head, 0) + 1
                continue
            line = result.line
            full = (
                part is not None
                and split
                and (part.requests >= MAX_REQUESTS_PER_FILE or part.bytes + len(line) > MAX_BYTES_PER_FILE)
            )
            if part is None or full:
                if part is not None:
                    _close_part(conn, part, worker, model_name, status_when_done)
                part = _new_part(conn, kind, model_name, worker, path_for(len(parts)))
                parts.append(part)
            part.fh.write(line)
            part.requests += 1
            part.bytes += len(line)
            add_counts(summary.redactions, result.redactions)
            part.rows.append(
                _Pending(job.thread_id, result.cid, result.digest, token, job.updated_at, line, result.measurements)
            )
            if len(part.rows) >= CHUNK:
                _flush_rows(conn, part, worker, model_name)
            if progress is not None:
                progress(i, len(candidates), job.thread_id[:13])
        if part is not None:
            _close_part(conn, part, worker, model_name, status_when_done)
    except BaseException:
        if part is not None and not part.fh.closed:
            part.fh.close()
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    summary.requests = sum(p.requests for p in parts)
    summary.bytes = sum(p.bytes for p in parts)
    summary.submissions = [p.id for p in parts]
    summary.files = [str(p.path) for p in parts]
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary
