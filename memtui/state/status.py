"""Counts for ``memtui status`` and the TUI header. Keys are stable: other tools parse them."""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from memtui import clock
from memtui.state.jobs import GLOBAL, GLOBAL_KEY, STAGE1, JobStatus, read_job


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


def _count(conn: sqlite3.Connection, sql: str, *args: object) -> int:
    return int(conn.execute(sql, args).fetchone()[0])


def read_status(conn: sqlite3.Connection) -> Status:
    """The counts, typed (the TUI header reads them; ``memtui status --json`` prints them as they are)."""
    one = partial(_count, conn)
    now = clock.now_s()
    by_source = {
        f"{r[0]}:{r[1]}": r[2]
        for r in conn.execute("SELECT source_kind, session_source, COUNT(*) FROM threads GROUP BY 1, 2 ORDER BY 1, 2")
    }
    skipped_by_reason = {
        r[0] or "unknown": r[1]
        for r in conn.execute("SELECT reason, COUNT(*) FROM ingest_files WHERE status='skipped' GROUP BY 1")
    }
    stage1 = Stage1Counts()
    for status, n in conn.execute("SELECT status, COUNT(*) FROM jobs WHERE kind=? GROUP BY 1", (STAGE1,)):
        if status in Stage1Counts.model_fields:
            setattr(stage1, status, n)
    stage1.stale_lease = one(
        "SELECT COUNT(*) FROM jobs WHERE kind=? AND status='running' AND lease_until <= ?", STAGE1, now
    )
    stage1.retry_exhausted = one(
        "SELECT COUNT(*) FROM jobs WHERE kind=? AND status='error' AND retry_remaining <= 0", STAGE1
    )
    outcomes = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT outcome, COUNT(*) FROM job_runs WHERE kind=? AND outcome IS NOT NULL GROUP BY 1", (STAGE1,)
        )
    }
    tokens = conn.execute(
        "SELECT COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0) FROM job_runs WHERE kind=?",
        (STAGE1,),
    ).fetchone()
    redactions: dict[str, int] = {}
    # Per rollout, the latest attempt that redacted anything: re-extracting a rollout does not count it twice.
    for (blob,) in conn.execute(
        """SELECT r.redactions FROM job_runs r
           WHERE r.kind=?1 AND r.id = (SELECT MAX(x.id) FROM job_runs x WHERE x.kind=?1 AND x.job_key=r.job_key
                                        AND x.redactions IS NOT NULL AND x.redactions <> '{}')""",
        (STAGE1,),
    ):
        for kind, n in json.loads(blob).items():
            redactions[kind] = redactions.get(kind, 0) + int(n)
    failures = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT COALESCE(last_error, 'unknown'), COUNT(*) FROM jobs WHERE kind=? AND status='error' GROUP BY 1",
            (STAGE1,),
        )
    }
    job = read_job(conn, GLOBAL, GLOBAL_KEY)
    awaiting = conn.execute(
        "SELECT id FROM phase2_runs WHERE status='awaiting_review' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    last_run = conn.execute("SELECT id, status, reason FROM phase2_runs ORDER BY id DESC LIMIT 1").fetchone()
    return Status(
        threads=one("SELECT COUNT(*) FROM threads"),
        threads_by_source=by_source,
        archived_threads=one("SELECT COUNT(*) FROM threads WHERE archived=1"),
        files=one("SELECT COUNT(*) FROM ingest_files"),
        skipped_files=one("SELECT COUNT(*) FROM ingest_files WHERE status='skipped'"),
        skipped_files_by_reason=skipped_by_reason,
        skipped_lines=one("SELECT COALESCE(SUM(skipped_lines),0) FROM ingest_files"),
        stage1=stage1,
        stage1_outcomes=outcomes,
        stage1_failures=failures,
        tokens=Tokens(prompt=tokens[0], completion=tokens[1]),
        redactions=redactions,
        outputs=one("SELECT COUNT(*) FROM stage1_outputs"),
        phase2=Phase2State(
            status=job.status if job else "never_run",
            last_error=job.last_error if job else None,
            awaiting_review=awaiting is not None,
            awaiting_run_id=awaiting[0] if awaiting else None,
            last_run=LastRun(id=last_run[0], status=last_run[1], reason=last_run[2]) if last_run else None,
        ),
        watermark=(job.last_success_watermark or 0) if job else 0,
        citations=one("SELECT COUNT(*) FROM citation_events"),
    )


def collect_status(conn: sqlite3.Connection) -> dict[str, object]:
    """``read_status`` as the stable JSON object ``memtui status --json`` prints (other tools parse its keys)."""
    return read_status(conn).model_dump(mode="json")
