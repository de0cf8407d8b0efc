"""Claim eligible rollouts with a lease as long as the batch window and write one request line per rollout.

The line's ``body`` is built by ``llm.structured.request_body``, the same function the synchronous call uses, from
the same redacted, budgeted user message (``ModelExtractor.prepare_serialized``). Claims, attempt rows and request
rows are written in chunks; a kill between a claim and its request row leaves a lease that ``abandon_unfinished``
releases on the next run (the job's worker id names the submission).
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Callable
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
from memtui.services.phase1.eligibility import select_candidates
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
) -> PrepareSummary:
    """Claim and write request files. ``kind='openai'``: ``out`` is a folder, files split at the API's limits;
    ``kind='file'``: ``out`` is the one JSONL file to write (for ``vllm run-batch``)."""
    started = time.perf_counter()
    extractor = ModelExtractor(settings, OpenAIHttpBackend(settings), model)  # only its prompt preparation is used
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

    part: _Part | None = None
    try:
        for i, job in enumerate(candidates, 1):
            if limit is not None and summary.claimed >= limit:
                break
            claim = try_claim_stage1_job(
                conn, job.thread_id, worker, job.updated_at, lease, None, force=thread_id is not None
            )
            if claim.status is not ClaimStatus.CLAIMED or claim.ownership_token is None:
                summary.skipped[claim.status.value] = summary.skipped.get(claim.status.value, 0) + 1
                continue
            summary.claimed += 1
            token = claim.ownership_token
            try:
                st = os.stat(job.path)  # before reading: a write after it shows as a changed stat at collect
                items = read_items(job)
                rendered = render_items(items)
                message, info = extractor.prepare_items(job, items, rendered)
            except (ExtractionFailed, OSError, ValueError) as exc:
                reason = str(exc)
                mark_stage1_job_failed(conn, job.thread_id, token, reason, settings.job_retry_delay_seconds)
                run_id = start_job_run(conn, STAGE1, job.thread_id, token, worker, offline=0, model=model_name)
                finish_job_run(conn, run_id, outcome="failed", error=reason)
                summary.failed += 1
                head = reason.split(":", 1)[0][:80]
                summary.failures[head] = summary.failures.get(head, 0) + 1
                continue
            digest = input_hash(rendered)
            cid = custom_id(job.thread_id, digest)
            body = request_body(model_name, extractor.system, message, StageOneOutput, "stage_one_output")
            line = orjson.dumps({"custom_id": cid, "method": "POST", "url": URL, "body": body}) + b"\n"
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
            measurements = {
                "input_bytes": info.input_bytes,
                "sent_bytes": info.sent_bytes,
                "estimated_tokens": info.estimated_tokens,
                "truncated_tokens": info.truncated_tokens,
                "redactions": info.redactions,
                "file_stat": [st.st_size, st.st_mtime_ns],
            }
            add_counts(summary.redactions, info.redactions)
            part.rows.append(_Pending(job.thread_id, cid, digest, token, job.updated_at, line, measurements))
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
    summary.requests = sum(p.requests for p in parts)
    summary.bytes = sum(p.bytes for p in parts)
    summary.submissions = [p.id for p in parts]
    summary.files = [str(p.path) for p in parts]
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary
