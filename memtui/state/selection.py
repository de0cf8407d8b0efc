"""Phase 2 input selection and the retention prune (reference §5.3, §5.4).

Ranking favours memories that agents actually cited (usage), then recent use; only rows whose thread is still
``enabled``/``legacy`` are visible. The final order is thread id ascending so the synced files do not churn.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memtui import clock

DAY = 86_400
_WHITESPACE = " \t\r\n\v\f"  # SQLite's TRIM strips only spaces by default; "blank" means all whitespace


@dataclass(frozen=True)
class Stage1Output:
    """One selected stage-1 row hydrated with the thread fields the workspace files need."""

    thread_id: str
    source_updated_at: int
    raw_memory: str
    rollout_summary: str
    rollout_slug: str | None
    generated_at: int
    usage_count: int | None
    last_usage: int | None
    cwd: str
    rollout_path: str
    git_branch: str | None


_ELIGIBLE = """
    (TRIM(o.raw_memory, :ws) != '' OR TRIM(o.rollout_summary, :ws) != '')
    AND (o.last_usage >= :cutoff OR (o.last_usage IS NULL AND o.source_updated_at >= :cutoff))
    AND t.memory_mode = 'enabled' AND t.history_mode = 'legacy'
"""


def get_phase2_input_selection(conn: sqlite3.Connection, n: int, max_unused_days: int) -> list[Stage1Output]:
    """Top ``n`` by usage_count, last use (else source_updated_at), recency, id; returned sorted by thread id."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    # Rank on the narrow key columns first, then fetch the wide text of the winners only: sorting thousands of rows
    # that carry their summaries costs SQLite several times more.
    rows = conn.execute(
        f"""
        WITH top AS (
            SELECT o.thread_id
            FROM stage1_outputs o JOIN threads t ON t.id = o.thread_id
            WHERE {_ELIGIBLE}
            ORDER BY COALESCE(o.usage_count, 0) DESC, COALESCE(o.last_usage, o.source_updated_at) DESC,
                     o.source_updated_at DESC, o.thread_id DESC
            LIMIT :n
        )
        SELECT o.thread_id, o.source_updated_at, o.raw_memory, o.rollout_summary, o.rollout_slug, o.generated_at,
               o.usage_count, o.last_usage, COALESCE(t.cwd, '') AS cwd, t.path AS rollout_path, t.git_branch
        FROM top JOIN stage1_outputs o ON o.thread_id = top.thread_id JOIN threads t ON t.id = o.thread_id
        ORDER BY o.thread_id
        """,
        {"cutoff": cutoff, "n": int(n), "ws": _WHITESPACE},
    ).fetchall()
    return [Stage1Output(*r) for r in rows]


def all_stage1_outputs(conn: sqlite3.Connection) -> list[Stage1Output]:
    """Every stage-1 memory, selected or not: what the offline merge may have written lines from."""
    rows = conn.execute(
        "SELECT o.thread_id, o.source_updated_at, o.raw_memory, o.rollout_summary, o.rollout_slug, o.generated_at,"
        " o.usage_count, o.last_usage, COALESCE(t.cwd, '') AS cwd, COALESCE(t.path, '') AS rollout_path, t.git_branch"
        " FROM stage1_outputs o LEFT JOIN threads t ON t.id = o.thread_id ORDER BY o.thread_id"
    ).fetchall()
    return [Stage1Output(*r) for r in rows]


def expired_stage1_outputs(conn: sqlite3.Connection, max_unused_days: int, limit: int = 200) -> list[str]:
    """Up to ``limit`` threads whose output is unselected and unused for ``max_unused_days``, stalest first."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    rows = conn.execute(
        """
        SELECT thread_id FROM stage1_outputs
        WHERE selected_for_phase2 = 0 AND COALESCE(last_usage, source_updated_at) < ?
        ORDER BY COALESCE(last_usage, source_updated_at) ASC, source_updated_at ASC, thread_id ASC
        LIMIT ?
        """,
        (cutoff, int(limit)),
    ).fetchall()
    return [r[0] for r in rows]
