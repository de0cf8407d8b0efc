"""Finalize one Phase 1 extraction, the same way whether its reply came back at once (``phase1.run``) or in a batch
(``batch.apply``): redact every field, mark each statement's trust class from the items it cites, then store it
through the token-conditional finalize, so a lost lease writes nothing.

Two calls because the first is CPU work over the whole rollout that the synchronous path runs off its event loop,
and the second writes to SQLite on the connection's own thread.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from memtui.adapters.redact import redact
from memtui.adapters.rollouts.model import Transcript
from memtui.domain.home_paths import home_users, tilde_homes
from memtui.services.phase1.extractor import Extraction, StageOneOutput, add_counts, mark_trust
from memtui.state.jobs import mark_stage1_job_succeeded, mark_stage1_job_succeeded_no_output

LOST_LEASE = "lease lost before finalize: another worker owns this job; nothing written"


@dataclass(frozen=True)
class Finalized:
    """What storing one extraction did: ``no_output`` when the model found nothing worth keeping."""

    outcome: Literal["succeeded", "no_output", "lost_lease"]
    error: str | None = None

    @property
    def noop(self) -> int:
        return int(self.outcome == "no_output")


def redact_output(output: StageOneOutput, counts: dict[str, int]) -> StageOneOutput:
    """Redact each field before storage (the model may echo or invent a secret); counts add to the job's."""
    fields: dict[str, Any] = {}
    for name in ("raw_memory", "rollout_summary", "rollout_slug"):
        value = getattr(output, name)
        if value:
            r = redact(value)
            add_counts(counts, r.counts)
            value = r.text
        fields[name] = value
    return StageOneOutput(**fields)


def prepare(extraction: Extraction, counts: dict[str, int], items: Transcript | None = None) -> StageOneOutput:
    """The output as it will be stored: redacted (counts added to ``counts``), trust-marked from the items it cites
    (``items`` when the caller read them, else the extraction's own), then with home folders written as ``~``."""
    marked = mark_trust(extraction, redact_output(extraction.output, counts), items)
    return without_user_names(marked)


def without_user_names(output: StageOneOutput) -> StageOneOutput:
    """Every field with its home folders written as ``~`` (``domain.home_paths``): no user name in memory. A name
    seen in one field (the cwd line) also ends an encoded project folder in another."""
    fields = (output.raw_memory, output.rollout_summary, output.rollout_slug or "")
    users = set().union(*(home_users(f) for f in fields))
    return StageOneOutput(
        raw_memory=tilde_homes(output.raw_memory, users),
        rollout_summary=tilde_homes(output.rollout_summary, users),
        rollout_slug=tilde_homes(output.rollout_slug, users) if output.rollout_slug else output.rollout_slug,
    )


def store(
    conn: sqlite3.Connection,
    thread_id: str,
    token: str,
    source_updated_at: int,
    out: StageOneOutput,
    *,
    offline: bool = False,
) -> Finalized:
    """Store a prepared output if this worker still owns the job (``token``); an empty field means no output."""
    if out.raw_memory == "" or out.rollout_summary == "":
        owned = mark_stage1_job_succeeded_no_output(conn, thread_id, token)
        outcome: Literal["succeeded", "no_output"] = "no_output"
    else:
        owned = mark_stage1_job_succeeded(
            conn,
            thread_id,
            token,
            source_updated_at,
            out.raw_memory,
            out.rollout_summary,
            out.rollout_slug,
            offline=offline,
        )
        outcome = "succeeded"
    return Finalized(outcome) if owned else Finalized("lost_lease", LOST_LEASE)
