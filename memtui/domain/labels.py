"""The words a person reads for the codes memtui stores: one vocabulary for the UI, the CLI and the README.

Codes stay stable in the database and in ``--json`` output; anything printed for a person goes through here.
"""

from __future__ import annotations

from collections.abc import Mapping

# Stage-1 and Phase 2 job states (jobs.status, plus "stale" for a running job past its lease).
JOB_STATUS = {
    "pending": "pending",
    "running": "running",
    "stale": "stale lease",
    "done": "done",
    "error": "failed",
    "awaiting_review": "awaiting review",
}

# Phase 2 run states (phase2_runs.status) and outcomes (Phase2Result.outcome).
PHASE2_STATUS = {
    "never_run": "never run",
    "running": "running",
    "no_changes": "no changes",
    "awaiting_review": "awaiting review",
    "approved": "approved",
    "rejected": "rejected",
    "failed": "failed",
    "skipped": "skipped",
}

# Citation entry and rollout id checks.
CITATION_STATUS = {
    "ok": "ok",
    "missing_file": "missing file",
    "out_of_range": "out of range",
    "blank_lines": "blank lines",
    "stale": "stale",
    "unknown": "not indexed",
    "not_uuid": "not a rollout id",
}

# Why a rollout is not extracted (eligibility), or why a claim was refused.
SKIP_REASON = {
    "archived": "archived",
    "not_interactive": "not interactive",
    "memory_disabled": "memory disabled",
    "no_preview": "no user message",
    "forgotten": "forgotten (memtui forget --undo lifts it)",
    "too_old": "too old",
    "not_idle": "still active",
    "up_to_date": "up to date",
    "claimed": "claimed",
    "running": "already running",
    "retry_backoff": "waiting to retry",
    "retry_exhausted": "out of retries",
    "cap_reached": "concurrency cap reached",
    "lost_lease": "lost its lease",
    "no_output": "no-op",
}

# What would change each skip, said when a Phase 1 run extracted nothing: the setting or flag that decides it. The
# fields in braces are settings (``Settings``), filled in by ``phase1.eligibility.skip_hints``.
SKIP_HINT = {
    "too_old": "updated before max_rollout_age_days ({max_rollout_age_days} days); `memtui phase1 --all` reads them",
    "not_idle": (
        "active within min_rollout_idle_hours ({min_rollout_idle_hours} h): extracted once idle, or now with "
        "`memtui phase1 --all`"
    ),
    "up_to_date": "already extracted; `memtui phase1 --thread ID` extracts one again",
    "retry_backoff": (
        "failed recently, retried after job_retry_delay_seconds ({job_retry_delay_seconds} s); "
        "`memtui phase1 --thread ID` tries one now"
    ),
    "retry_exhausted": "failed on every retry; `memtui phase1 --thread ID` tries one again",
    "cap_reached": "other runs held every slot (concurrency = {concurrency})",
    "running": "another run is extracting them",
    "memory_disabled": "memory is turned off in those sessions",
    "archived": "archived in Codex",
    "not_interactive": "exec, sub-agent and other non-interactive sessions are never extracted",
    "no_preview": "no message from you in them",
    "forgotten": "you forgot them; `memtui forget --undo ID` lifts it",
}

_ALL = {**SKIP_REASON, **CITATION_STATUS, **PHASE2_STATUS, **JOB_STATUS}


def label(code: str | None, table: Mapping[str, str] | None = None) -> str:
    """The words for a code; an unknown code is shown with its underscores as spaces."""
    if not code:
        return ""
    return (table or _ALL).get(code, code.replace("_", " "))


def counts(by_code: Mapping[str, int], table: Mapping[str, str] | None = None) -> str:
    """``{"not_interactive": 2, "too_old": 1}`` -> ``2 not interactive, 1 too old`` (largest first)."""
    items = sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n:,} {label(code, table)}" for code, n in items)
