"""Which threads Phase 1 looks at (Codex's rules), and why each other thread is skipped.

One query classifies every thread (bounded by the reference's scan limit), newest first, so the run summary can
count skips by reason. The claim re-checks "up to date" inside its transaction; this is only the first pass.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from pydantic import BaseModel

from memtui.core import clock
from memtui.core.settings import Settings
from memtui.domain.labels import SKIP_HINT, SKIP_REASON, label
from memtui.state import threads
from memtui.state.jobs import STAGE1

THREAD_SCAN_LIMIT = 5_000
BACKFILL_COMMAND = "memtui phase1 --all"  # Phase 1 over every session, whatever its age (the TUI: b on Rollouts)


class OlderSessions(BaseModel):
    """Sessions older than ``max_rollout_age_days`` that Phase 1 would read but has not: what a backfill reads.

    A first run over a history of months sees most of it here; ``memtui phase1`` offers it, naming the command."""

    count: int
    oldest: int  # updated_at of the oldest of them, unix seconds
    newest: int
    max_rollout_age_days: int
    command: str = BACKFILL_COMMAND

    def words(self) -> str:
        """The offer in a sentence: how many, their span, and why they were left."""
        first, last = clock.iso(self.oldest)[:10], clock.iso(self.newest)[:10]
        span = f"from {first} to {last}" if last != first else f"from {first}"
        return (
            f"{self.count} session(s) {span} older than max_rollout_age_days ({self.max_rollout_age_days} days), "
            "not read yet"
        )


def skip_hints(skipped: dict[str, int], settings: Settings) -> list[str]:
    """One line per skip reason (most first): how many, and the setting or flag that would change it."""
    values = settings.model_dump()
    out = []
    for reason, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])):
        hint = SKIP_HINT.get(reason)
        out.append(f"{n:,} {label(reason, SKIP_REASON)}" + (f": {hint.format(**values)}" if hint else ""))
    return out


def older_sessions(conn: sqlite3.Connection, settings: Settings) -> OlderSessions | None:
    """The backfill Phase 1 can offer (None when every older session was read, or there is none)."""
    oldest = clock.now_s() - settings.max_rollout_age_days * 86_400
    found = threads.older_unread(conn, oldest, STAGE1)
    if not found.count or found.oldest is None or found.newest is None:
        return None
    return OlderSessions(
        count=found.count,
        oldest=found.oldest,
        newest=found.newest,
        max_rollout_age_days=settings.max_rollout_age_days,
    )


@dataclass(frozen=True)
class Candidate:
    """A thread worth claiming: what the job needs to load and render its rollout."""

    thread_id: str
    source_kind: str
    path: str
    cwd: str | None
    updated_at: int


def select_candidates(
    conn: sqlite3.Connection,
    settings: Settings,
    *,
    thread_id: str | None = None,
    all_threads: bool = False,
    scan_limit: int = THREAD_SCAN_LIMIT,
) -> tuple[list[Candidate], dict[str, int]]:
    """Eligible threads (newest first) and the count of skipped threads by reason.

    ``all_threads`` ignores the age and idle windows; ``thread_id`` forces one thread: it also ignores them and the
    up-to-date check (a manual re-extraction), but never the user's opt-outs (archived, non-interactive, disabled).
    """
    now = clock.now_s()
    params = {
        "windows": int(not (all_threads or thread_id)),
        "oldest": now - settings.max_rollout_age_days * 86_400,
        "newest": now - settings.min_rollout_idle_hours * 3_600,
        "check_done": int(thread_id is None),
        "kind": STAGE1,
        "limit": scan_limit,
        "thread_id": thread_id,
    }
    candidates: list[Candidate] = []
    skipped: dict[str, int] = {}
    for row in threads.phase1_scan(conn, params, one_thread=bool(thread_id)):
        if row.skip:
            skipped[row.skip] = skipped.get(row.skip, 0) + 1
        else:
            candidates.append(Candidate(row.id, row.source_kind, row.path, row.cwd, row.updated_at))
    return candidates, skipped
