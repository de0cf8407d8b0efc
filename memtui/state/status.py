"""Counts for ``memtui status`` and the TUI header. Keys are stable: other tools parse them."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, Field

from memtui import clock
from memtui.state import citations, jobs, outputs, runs, threads


def collect_status(conn: sqlite3.Connection) -> dict[str, Any]:
    index = threads.index_counts(conn)
    stage1 = jobs.stage1_counts(conn, clock.now_s())
    job = jobs.read_global(conn)
    awaiting = runs.pending_id(conn)
    last_run = runs.last(conn)
    return {
        "threads": index.threads,
        "threads_by_source": index.by_source,
        "archived_threads": index.archived,
        "files": index.files,
        "skipped_files": index.skipped_files,
        "skipped_files_by_reason": index.skipped_by_reason,
        "skipped_lines": index.skipped_lines,
        "stage1": stage1.by_status,
        "stage1_outcomes": stage1.outcomes,
        "stage1_failures": stage1.failures,
        "tokens": {"prompt": stage1.prompt_tokens, "completion": stage1.completion_tokens},
        "redactions": stage1.redactions,
        "outputs": outputs.count(conn),
        "phase2": {
            "status": job["status"] if job else "never_run",
            "last_error": job["last_error"] if job else None,
            "awaiting_review": awaiting is not None,
            "awaiting_run_id": awaiting,
            "last_run": asdict(last_run) if last_run else None,
        },
        "watermark": (job["last_success_watermark"] or 0) if job else 0,
        "citations": citations.count_events(conn),
    }


class Stage1Counts(BaseModel):
    pending: int = 0
    running: int = 0
    done: int = 0
    error: int = 0
    stale_lease: int = 0
    retry_exhausted: int = 0


class LastRun(BaseModel):
    id: int
    status: str
    reason: str | None = None


class Phase2State(BaseModel):
    status: str = "never_run"
    last_error: str | None = None
    awaiting_review: bool = False
    awaiting_run_id: int | None = None
    last_run: LastRun | None = None


class Status(BaseModel):
    """``collect_status`` typed, for code that reads it (the TUI header); the CLI prints the dict as is."""

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
    tokens: dict[str, int] = Field(default_factory=dict)
    redactions: dict[str, int] = Field(default_factory=dict)
    outputs: int = 0
    phase2: Phase2State = Field(default_factory=Phase2State)
    watermark: int = 0
    citations: int = 0


def read_status(conn: sqlite3.Connection) -> Status:
    return Status.model_validate(collect_status(conn))
