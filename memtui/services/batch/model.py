"""Line formats (the OpenAI Batch API's, which ``vllm run-batch`` also reads and writes) and run summaries.

Input line: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``. Output line:
``{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null, "error": {"code", "message"} | null}``.
Limits: 50,000 requests and 200 MB per input file; ``completion_window`` is ``24h``. Sources: the OpenAI Batch
API reference (platform.openai.com/docs/api-reference/batch, mirrored by openai-python ``types/batch.py`` and
async-openai's ``BatchRequest`` docs) and vLLM's ``run_batch`` entrypoint, which takes the same format.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

URL = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
MAX_REQUESTS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 200 * 1024 * 1024
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
METADATA_KEY = "memtui_submission"


def input_hash(rendered: str) -> str:
    """Hash of the rollout's filtered, rendered items (before redaction and budget): a result is stored only if the
    rollout still renders to the same text."""
    return hashlib.sha256(rendered.encode("utf-8")).hexdigest()[:16]


def custom_id(thread_id: str, digest: str) -> str:
    return f"{thread_id}:{digest}"


class ResultResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    status_code: int
    request_id: str | None = None
    body: Any = None


class ResultError(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str | None = None
    message: str | None = None

    @field_validator("code", mode="before")
    @classmethod
    def _code_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def error_message(value: Any, depth: int = 0) -> str | None:
    """The human message of an error in any shape the engines write: a string, ``{message}``, ``{error: ...}``
    nested (Batch API bodies, vLLM's ``ErrorResponse``), ``{detail}`` (FastAPI)."""
    if depth > 4 or value is None:
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        for key in ("message", "msg", "detail"):
            if isinstance(value.get(key), str) and value[key]:
                return value[key]
        if "error" in value:
            return error_message(value["error"], depth + 1)
        if isinstance(value.get("detail"), list):
            return "; ".join(filter(None, (error_message(d, depth + 1) for d in value["detail"]))) or None
    if isinstance(value, list):
        return "; ".join(filter(None, (error_message(v, depth + 1) for v in value))) or None
    return None


class ResultLine(BaseModel):
    """One line of an output or error file, in every shape the Batch API and ``vllm run-batch`` write: ``error``
    as an object (``code`` a string, or a number in older vLLM), as a plain string (vLLM), or nested."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    custom_id: str
    response: ResultResponse | None = None
    error: ResultError | None = None

    @field_validator("error", mode="before")
    @classmethod
    def _error_shape(cls, value: Any) -> Any:
        if value is None or value == {}:
            return None
        if isinstance(value, str):
            return {"code": None, "message": value}
        if isinstance(value, dict):
            inner = value.get("error")
            code = value.get("code", inner.get("code") if isinstance(inner, dict) else None)
            return {**value, "code": code, "message": error_message(value)}
        return {"code": None, "message": str(value)}


class PrepareSummary(BaseModel):
    candidates: int = 0
    claimed: int = 0
    requests: int = 0
    failed: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    submissions: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    bytes: int = 0
    redactions: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""


class CollectSummary(BaseModel):
    checked: int = 0
    still_running: int = 0
    collected_submissions: int = 0
    succeeded: int = 0
    noop: int = 0
    failed: int = 0
    released: int = 0
    stale: int = 0
    lost_lease: int = 0
    recovered: int = 0
    unmatched: int = 0  # result lines whose custom_id no pending request has
    dropped_quotes: int = 0  # output lines quoting words the user never said, removed before storage
    failures: dict[str, int] = Field(default_factory=dict)
    resumed: list[str] = Field(default_factory=list)  # what a previous, interrupted run left and this one finished
    seconds: float = 0.0


class SubmissionStatus(BaseModel):
    id: str
    kind: str
    status: str
    remote_status: str | None
    batch_id: str | None
    requests: int
    pending: int
    done: int
    counts: dict[str, int] = Field(default_factory=dict)  # the remote request_counts when polled
    input_path: str | None


class BatchRunSummary(BaseModel):
    """``memtui phase1 --batch``: what the collect of earlier batches did, then what was prepared and submitted."""

    collected: CollectSummary
    prepared: PrepareSummary
    submitted: list[str] = Field(default_factory=list)  # remote batch ids created by this run
