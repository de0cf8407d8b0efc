"""Counts for ``memtui status`` and the TUI header. Keys are stable: other tools parse them."""

from __future__ import annotations

import sqlite3
from typing import Literal

from pydantic import BaseModel, Field

from memtui.core import clock
from memtui.state import citations, jobs, outputs, runs, threads
from memtui.state.jobs import JobStatus


class Stage1Counts(BaseModel):
    pending: int = 0
    running: int = 0
    done: int = 0
    error: int = 0
    stale_lease: int = 0
    retry_exhausted: int = 0


class Tokens(BaseModel):
    prompt: int = 0
    completion: int = 0


class LastRun(BaseModel):
    id: int
    status: str
    reason: str | None = None


class Phase2State(BaseModel):
    status: JobStatus | Literal["never_run"] = "never_run"
    last_error: str | None = None
    awaiting_review: bool = False
    awaiting_run_id: int | None = None
    last_run: LastRun | None = None


class Status(BaseModel):
    """What ``memtui status`` reports: what is indexed, extracted, consolidated and awaiting review."""

    threads: int = 0
    threads_by_source: dict[str, int] = Field(default_factory=dict)
    archived_threads: int = 0
    files: int = 0
    skipped_files: int = 0
    skipped_files_by_reason: dict[str, int] = Field(default_factory=dict)
    skipped_lines: int = 0
    stage1: Stage1Counts = Field(default_factory=Stage1Counts)
    stage1_outcomes: dict[str, int] = Field(default_factory=dict)
    stage1_failures: dict[str, int] = Field(default_factory=dict)
    tokens: Tokens = Field(default_factory=Tokens)
    redactions: dict[str, int] = Field(default_factory=dict)
    outputs: int = 0
    phase2: Phase2State = Field(default_factory=Phase2State)
    watermark: int = 0
    citations: int = 0


def read_status(conn: sqlite3.Connection) -> Status:
    """The counts, typed (the TUI header reads them; ``memtui status --json`` prints them as they are)."""
    index = threads.index_counts(conn)
    stage1 = jobs.stage1_counts(conn, clock.now_s())
    job = jobs.read_job(conn, jobs.GLOBAL, jobs.GLOBAL_KEY)
    awaiting = runs.pending_id(conn)
    last_run = runs.last(conn)
    return Status(
        threads=index.threads,
        threads_by_source=index.by_source,
        archived_threads=index.archived,
        files=index.files,
        skipped_files=index.skipped_files,
        skipped_files_by_reason=index.skipped_by_reason,
        skipped_lines=index.skipped_lines,
        stage1=Stage1Counts.model_validate(stage1.by_status),
        stage1_outcomes=stage1.outcomes,
        stage1_failures=stage1.failures,
        tokens=Tokens(prompt=stage1.prompt_tokens, completion=stage1.completion_tokens),
        redactions=stage1.redactions,
        outputs=outputs.count(conn),
        phase2=Phase2State(
            status=job.status if job else "never_run",
            last_error=job.last_error if job else None,
            awaiting_review=awaiting is not None,
            awaiting_run_id=awaiting,
            last_run=LastRun(id=last_run.id, status=last_run.status, reason=last_run.reason) if last_run else None,
        ),
        watermark=(job.last_success_watermark or 0) if job else 0,
        citations=citations.count_events(conn),
    )


def collect_status(conn: sqlite3.Connection) -> dict[str, object]:
    """``read_status`` as the stable JSON object ``memtui status --json`` prints (other tools parse its keys)."""
    return read_status(conn).model_dump(mode="json")
