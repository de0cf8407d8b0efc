"""Store batch results exactly like the synchronous path, and release what never ran.

Per request: the result line is validated with the same code as a synchronous reply (``parse_chat_reply``: refusal,
cut-off, missing content, unknown or missing fields), the rollout is re-filtered and its hash compared with the one
sent (a changed rollout's result is discarded), and the output goes through the same finalize (``phase1.finalize``:
redacted, trust-marked, stored only while the token owns the job). Failures back off like synchronous ones; requests
that never reached a model (an expired or cancelled batch) are released without spending a retry.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from memtui.adapters.llm.structured import StructuredCallError, parse_chat_reply
from memtui.adapters.rollouts.model import Transcript
from memtui.core import clock
from memtui.core.settings import Settings
from memtui.domain.render import render_items
from memtui.domain.trust.classes import cited_items
from memtui.services.batch.model import CollectSummary, ResultLine, error_message, input_hash
from memtui.services.phase1 import finalize
from memtui.services.phase1.eligibility import Candidate
from memtui.services.phase1.extractor import (
    Extraction,
    ExtractionFailed,
    StageOneOutput,
    keep_faithful_quotes,
    read_items,
)
from memtui.services.phase1.output_check import stage_one_problems
from memtui.services.phase1.quotes import has_user_quote, user_words
from memtui.services.phase1.run import short_reason
from memtui.state import batches, jobs, threads
from memtui.state.jobs import (
    finish_job_run,
    mark_stage1_job_failed,
    release_stage1_job,
)

NOT_RUN_CODES = frozenset({"batch_expired", "batch_cancelled"})  # error-file codes of requests no model saw
STALE = "rollout changed since it was sent in the batch: result discarded"


def parse_result_lines(data: bytes) -> tuple[dict[str, ResultLine], int]:
    """custom_id -> result line; and the count of lines that are not valid result lines."""
    out: dict[str, ResultLine] = {}
    bad = 0
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            line = ResultLine.model_validate_json(raw)
        except ValidationError:
            bad += 1
            continue
        out[line.custom_id] = line
    return out, bad


def _fail_reason(line: ResultLine) -> str:
    if line.error is not None:
        return f"batch request failed ({line.error.code or 'error'}): {line.error.message or 'no detail'}"
    resp = line.response
    message = error_message(resp.body) if resp is not None else None
    return f"model server error in the batch (HTTP {resp.status_code if resp else '?'}): {message or 'no detail'}"


def _candidate(conn: sqlite3.Connection, thread_id: str) -> Candidate | None:
    t = threads.locate(conn, thread_id)
    return Candidate(t.id, t.source_kind, t.path, t.cwd, t.updated_at) if t else None


def _current(
    conn: sqlite3.Connection, thread_id: str, sent_stat: Any, sent_hash: str, need_words: bool
) -> tuple[str | None, str | None, Transcript | None]:
    """(hash of the rollout's rendered items now, the user's own words now): the hash decides whether the result
    still belongs to this rollout; the words check its quotes, as the synchronous path does (``services/phase1/quotes.py``).

    A file whose size and mtime are those it had when its request was written is the same file (the ingest's own
    rule): it is re-read only when the output quotes the user or cites items (their origins give each statement its
    trust class). Any other file is read, rendered and hashed.
    """
    job = _candidate(conn, thread_id)
    if job is None:
        return None, None, None
    try:
        st = os.stat(job.path)
    except OSError:
        return None, None, None
    if not need_words and sent_stat == [st.st_size, st.st_mtime_ns]:
        return sent_hash, None, None
    try:
        items = read_items(job)
    except ExtractionFailed:
        return None, None, None
    return input_hash(render_items(items)), user_words(items), items


def _account(summary: CollectSummary, status: str, error: str | None, dropped: int = 0) -> None:
    summary.dropped_quotes += dropped
    if status == "succeeded":
        summary.succeeded += 1
    elif status == "no_output":
        summary.noop += 1
    elif status == "released":
        summary.released += 1
    elif status == "stale":
        summary.stale += 1
    elif status == "lost_lease":
        summary.lost_lease += 1
    elif status == "recovered":
        summary.recovered += 1
    else:
        summary.failed += 1
        head = short_reason(error or "unknown")
        summary.failures[head] = summary.failures.get(head, 0) + 1


def _already_finalized(conn: sqlite3.Connection, req: batches.Request) -> bool:
    """A previous collect finalized the job and stopped before marking the request: do not finalize twice."""
    state = jobs.stage1_state(conn, req.thread_id)
    return state is not None and state[1] == req.ownership_token and state[0] != "running"


def apply_one(
    conn: sqlite3.Connection, settings: Settings, req: batches.Request, line: ResultLine | None, missing: str | None
) -> tuple[str, str | None, int]:
    """Finalize one pending request; returns (request status, error, quote lines dropped). ``line`` None: released
    with ``missing``."""
    thread_id, token = req.thread_id, req.ownership_token
    record: dict[str, Any] = orjson.loads(req.measurements or b"{}")
    redactions: dict[str, int] = dict(record.get("redactions") or {})
    record["redactions"] = redactions
    if _already_finalized(conn, req):
        return "recovered", None, 0
    if line is not None and line.error is not None and line.error.code in NOT_RUN_CODES:
        missing = f"{line.error.code}: {line.error.message or 'the request never ran'}; released without a retry spent"
        line = None
    if line is None:
        reason = missing or "the batch ended without running this request"
        owned = release_stage1_job(conn, thread_id, token, reason)
        status = "released" if owned else "lost_lease"
        finish_job_run(conn, req.run_id, outcome="failed" if owned else "lost_lease", error=reason, **_cols(record))
        return status, reason, 0
    body = line.response.body if line.response is not None else None
    ok = line.error is None and line.response is not None and line.response.status_code == 200
    output: StageOneOutput | None = None
    error: str | None = None
    if ok:
        try:
            result = parse_chat_reply(ChatCompletion.model_validate(body), StageOneOutput, latency_ms=0, model="")
            output = result.output
            record["prompt_tokens"], record["completion_tokens"] = result.prompt_tokens, result.completion_tokens
            if problems := stage_one_problems(output):  # junk in the right keys: never stored
                output, error = None, "invalid_output: " + "; ".join(problems)
        except StructuredCallError as exc:
            error = str(exc)
            record["prompt_tokens"], record["completion_tokens"] = exc.prompt_tokens, exc.completion_tokens
        except ValidationError:
            error = "batch result body is not a chat completion"
    else:
        error = _fail_reason(line)
    if output is not None:
        need_words = has_user_quote(output.raw_memory) or has_user_quote(output.rollout_summary)
        need_words = need_words or bool(cited_items(output.raw_memory) or cited_items(output.rollout_summary))
        current, said, items = _current(conn, thread_id, record.get("file_stat"), req.input_hash, need_words)
        if current != req.input_hash:
            owned = mark_stage1_job_failed(conn, thread_id, token, STALE, 0)
            finish_job_run(conn, req.run_id, outcome="failed" if owned else "lost_lease", error=STALE, **_cols(record))
            return ("stale" if owned else "lost_lease"), STALE, 0
        checked = Extraction(output=output, offline=False, model="", user_said=said)
        keep_faithful_quotes(checked)  # a line quoting words the user never said is dropped, as in the sync path
        record["dropped_quotes"] = len(checked.dropped_quotes)
        # each statement's class from the items it cites, after redaction, as in the sync path
        out = finalize.prepare(checked, redactions, items)
        stored = finalize.store(conn, thread_id, token, req.source_updated_at, out)
        finish_job_run(conn, req.run_id, outcome=stored.outcome, error=stored.error, noop=stored.noop, **_cols(record))
        return stored.outcome, stored.error, record["dropped_quotes"]
    owned = mark_stage1_job_failed(conn, thread_id, token, error or "unknown", settings.job_retry_delay_seconds)
    finish_job_run(conn, req.run_id, outcome="failed" if owned else "lost_lease", error=error, **_cols(record))
    return ("failed" if owned else "lost_lease"), error, 0


def _cols(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("input_bytes", "sent_bytes", "estimated_tokens", "truncated_tokens", "prompt_tokens", "completion_tokens")
    return {k: record.get(k) for k in keys} | {"redactions": record.get("redactions") or {}}


def apply_results(
    conn: sqlite3.Connection,
    settings: Settings,
    submission_id: str,
    results: dict[str, ResultLine],
    summary: CollectSummary,
    *,
    missing: str | None,
) -> int:
    """Finalize the submission's pending requests that have a result (all of them when ``missing`` is given:
    those without a line are released). Returns how many stay pending."""
    pending = batches.pending_requests(conn, submission_id)
    left = 0
    for req in pending:
        line = results.pop(req.custom_id, None)
        if line is None and missing is None:
            left += 1
            continue
        status, error, dropped = apply_one(conn, settings, req, line, missing)
        batches.finish_request(conn, submission_id, req.custom_id, status, error)
        _account(summary, status, error, dropped)
    if left == 0:
        batches.collected(conn, submission_id, clock.now_s())
        summary.collected_submissions += 1
    return left


def abandon_unfinished(conn: sqlite3.Connection, summary: CollectSummary) -> None:
    """Submissions a killed run left ``preparing``: release their claims (nothing was sent) and drop the file."""
    for sub in batches.preparing(conn):
        res = CollectSummary()
        apply_results(conn, Settings(), sub.id, {}, res, missing="the run that prepared this batch stopped")
        for job_key, token in jobs.running_without_batch_request(conn, sub.worker_id):
            release_stage1_job(conn, job_key, token, "the run that prepared this batch stopped")
            res.released += 1
        detail = "interrupted while preparing: claims released, nothing was sent"
        batches.update(conn, sub.id, status="abandoned", updated_at=clock.now_s(), detail=detail)
        if sub.input_path and sub.kind == "openai":
            Path(sub.input_path).unlink(missing_ok=True)
        summary.released += res.released
        summary.resumed.append(f"{sub.id}: abandoned (interrupted while preparing), {res.released} claim(s) released")
