"""What ``memtui phase1 --batch|--export-batch|--import-batch`` and ``memtui batch ...`` call."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from memtui.adapters.llm.client import make_client
from memtui.core import clock
from memtui.services import stores
from memtui.services.batch import remote
from memtui.services.batch.apply import abandon_unfinished, apply_results, parse_result_lines
from memtui.services.batch.model import TERMINAL, BatchRunSummary, CollectSummary, SubmissionStatus
from memtui.services.batch.prepare import prepare
from memtui.services.context import Context
from memtui.services.phase1.run import short_reason
from memtui.state import batches
from memtui.state.jobs import close_abandoned_runs

Progress = Callable[[int, int, str], None]
NOT_RUN = {
    "expired": "the batch expired (24h window) before this request ran; released without spending a retry",
    "cancelled": "the batch was cancelled before this request ran; released without spending a retry",
    "failed": "the batch failed validation; released without spending a retry",
    "completed": "the completed batch has no result for this request; released without spending a retry",
}


class BatchError(RuntimeError):
    """A batch command that cannot run (no API configured, unknown id, unreadable file)."""


def _client(ctx: Context):
    s = ctx.settings
    if not (s.api_key or s.base_url):
        raise BatchError("the Batch API needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server)")
    return make_client(s)


def batches_dir(ctx: Context) -> Path:
    return ctx.paths.home / "batches"


def collect(ctx: Context, client=None) -> CollectSummary:
    """Resume what earlier runs left, poll every submitted batch, and store the results of finished ones."""
    started = time.perf_counter()
    conn = ctx.conn
    summary = CollectSummary()
    close_abandoned_runs(conn)
    abandon_unfinished(conn, summary)
    subs = batches.open_openai(conn)
    if not subs:
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary
    client = client or _client(ctx)
    for sub in subs:
        if sub.status in ("prepared", "uploaded"):  # a run stopped between writing the file and creating
            batch_id = remote.submit(conn, client, sub)
            summary.resumed.append(f"{sub.id}: submitted as {batch_id} (the previous run stopped before)")
            sub = _reread(conn, sub)
        summary.checked += 1
        batch = remote.poll(conn, client, sub)
        if batch.status not in TERMINAL:
            summary.still_running += 1
            continue
        results, bad = parse_result_lines(remote.download(client, batch.output_file_id))
        errors, bad_err = parse_result_lines(remote.download(client, batch.error_file_id))
        results.update(errors)
        missing = NOT_RUN[batch.status]
        if why := remote.batch_errors(batch):  # a validation failure says why in batch.errors: keep it
            missing = f"{missing}: {why}"
            remote.note(conn, sub.id, why)
            summary.failures[short_reason(f"batch {batch.status}: {why}")] = sub.requests
        apply_results(conn, ctx.settings, sub.id, results, summary, missing=missing)
        summary.unmatched += len(results) + bad + bad_err
    stores.drop_finished_batch_files(conn)  # a finished batch's input file held the rollouts' text in full
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def submit(
    ctx: Context,
    *,
    limit: int | None = None,
    thread_id: str | None = None,
    all_threads: bool = False,
    model: str | None = None,
    progress: Progress | None = None,
) -> BatchRunSummary:
    """``phase1 --batch``: collect earlier batches first, then claim, write, upload and create new ones."""
    client = _client(ctx)
    collected = collect(ctx, client)
    prepared = prepare(
        ctx.conn,
        ctx.settings,
        kind="openai",
        out=batches_dir(ctx),
        model=model,
        limit=limit,
        thread_id=thread_id,
        all_threads=all_threads,
        progress=progress,
    )
    created = []
    for sub_id in prepared.submissions:
        sub = batches.submission(ctx.conn, sub_id)
        assert sub is not None  # prepare recorded it
        created.append(remote.submit(ctx.conn, client, sub))
    return BatchRunSummary(collected=collected, prepared=prepared, submitted=created)


def _reread(conn: sqlite3.Connection, sub: batches.Submission) -> batches.Submission:
    """The submission as recorded now (a step just changed it); the old copy if its row is gone."""
    return batches.submission(conn, sub.id) or sub


def status(ctx: Context, *, poll: bool = True) -> list[SubmissionStatus]:
    """Every submission not yet finished (and the last 20 finished), polling the API for live ones."""
    conn = ctx.conn
    rows = batches.unfinished_and_recent(conn, 20)
    live = [r for r in rows if r.kind == "openai" and r.status == "submitted"]
    counts: dict[str, dict[str, int]] = {}
    if poll and live:
        client = _client(ctx)
        for sub in live:
            batch = remote.poll(conn, client, sub)
            rc = batch.request_counts
            counts[sub.id] = (
                {"total": rc.total, "completed": rc.completed, "failed": rc.failed} if rc is not None else {}
            )
    out = []
    for sub in rows:
        sub = _reread(conn, sub)
        pending = batches.pending_count(conn, sub.id)
        out.append(
            SubmissionStatus(
                id=sub.id,
                kind=sub.kind,
                status=sub.status,
                remote_status=sub.remote_status,
                batch_id=sub.batch_id,
                requests=sub.requests,
                pending=pending,
                done=sub.requests - pending,
                counts=counts.get(sub.id, {}),
                input_path=sub.input_path,
            )
        )
    return out


def cancel(ctx: Context, ids: list[str] | None = None) -> list[str]:
    """Cancel remote batches (their unrun requests are released when collected) and release exported files' claims."""
    conn = ctx.conn
    rows = batches.cancellable(conn)
    if ids:
        rows = [r for r in rows if r.id in ids or r.batch_id in ids]
        if not rows:
            raise BatchError(f"no open batch with id {', '.join(ids)}")
    said = []
    client = None
    for sub in rows:
        if sub.kind == "openai" and sub.status == "submitted":
            client = client or _client(ctx)
            said.append(f"{sub.id} ({sub.batch_id}): {remote.cancel(conn, client, sub)}")
            continue
        summary = CollectSummary()
        apply_results(conn, ctx.settings, sub.id, {}, summary, missing="cancelled by the user before it was sent")
        batches.update(conn, sub.id, status="cancelled", updated_at=clock.now_s())
        said.append(f"{sub.id}: cancelled, {summary.released} claim(s) released")
    stores.drop_finished_batch_files(conn)
    return said


def export(
    ctx: Context,
    path: Path,
    *,
    limit: int | None = None,
    thread_id: str | None = None,
    all_threads: bool = False,
    model: str | None = None,
    progress: Progress | None = None,
):
    """``phase1 --export-batch FILE``: the same claims and lines, written for ``vllm run-batch``."""
    if path.exists():
        raise BatchError(f"{path} exists; choose a new file (an exported batch is never overwritten)")
    return prepare(
        ctx.conn,
        ctx.settings,
        kind="file",
        out=path,
        model=model,
        limit=limit,
        thread_id=thread_id,
        all_threads=all_threads,
        split=False,
        progress=progress,
    )


def import_results(ctx: Context, path: Path) -> CollectSummary:
    """``phase1 --import-batch FILE``: results of an exported batch (``vllm run-batch`` output), matched by custom_id.

    Requests of the export without a line stay claimed (import the rest later, or ``memtui batch cancel``).
    """
    started = time.perf_counter()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BatchError(f"cannot read {path}: {exc}") from exc
    results, bad = parse_result_lines(data)
    summary = CollectSummary()
    conn = ctx.conn
    close_abandoned_runs(conn)
    for sub_id in batches.exported_file_ids(conn):
        summary.checked += 1
        if apply_results(conn, ctx.settings, sub_id, results, summary, missing=None):
            summary.still_running += 1
    summary.unmatched = len(results) + bad
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary
