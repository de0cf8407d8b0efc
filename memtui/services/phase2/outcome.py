"""How a Phase 2 attempt ended, typed: callers (the CLI, the TUI) branch on these, never on the words.

Kept apart from ``consolidate`` (which pulls in the whole pipeline) so the UI can name them at import time.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one Phase 2 attempt ended (``--json``'s ``outcome``)."""

    NO_CHANGES = "no_changes"
    AWAITING_REVIEW = "awaiting_review"
    APPROVED = "approved"
    FAILED = "failed"
    SKIPPED = "skipped"
    BUSY = "busy"


class SkipReason(StrEnum):
    """Why an attempt was skipped: what callers branch on; ``message`` is what the CLI says (``reason``)."""

    AWAITING_REVIEW = "awaiting_review"
    NOTHING_TO_CONSOLIDATE = "nothing_to_consolidate"
    LOCK_HELD = "lock_held"
    COOLDOWN = "cooldown"
    RETRY_BACKOFF = "retry_backoff"

    def message(self, run_id: int | None = None) -> str:
        match self:
            case SkipReason.AWAITING_REVIEW:
                return f"awaiting review: run #{run_id}"
            case SkipReason.NOTHING_TO_CONSOLIDATE:  # the run says which case (``consolidate.nothing_words``)
                return (
                    "nothing to consolidate: no memories yet and no MEMORY.md; "
                    "`memtui ingest` then `memtui phase1` extract them"
                )
            case SkipReason.LOCK_HELD:
                return "lock held: another Phase 2 run is in progress"
            case SkipReason.COOLDOWN:
                return "cooldown: the last consolidation succeeded within phase2_cooldown_hours (use --force)"
            case SkipReason.RETRY_BACKOFF:
                return (
                    "retry backoff: the last run failed recently, so automatic runs wait; "
                    "`memtui phase2 --retry` (or the Jobs screen's t) runs it now"
                )
