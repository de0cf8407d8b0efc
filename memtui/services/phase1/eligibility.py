"""Which threads Phase 1 looks at (Codex's rules), and why each other thread is skipped.

One query classifies every thread (bounded by the reference's scan limit), newest first, so the run summary can
count skips by reason. The claim re-checks "up to date" inside its transaction; this is only the first pass.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memtui.core import clock
from memtui.core.settings import Settings
from memtui.state import threads
from memtui.state.jobs import STAGE1

THREAD_SCAN_LIMIT = 5_000


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
