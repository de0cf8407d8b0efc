"""``stage1_outputs`` writes: one row per thread, the newest extracted snapshot wins.

Callers hold the transaction (these are single statements, safe inside ``immediate(conn)``).
"""

from __future__ import annotations

import sqlite3

from memtui import clock


def upsert_stage1_output(
    conn: sqlite3.Connection,
    thread_id: str,
    source_updated_at: int,
    raw_memory: str,
    rollout_summary: str,
    rollout_slug: str | None,
    *,
    offline: bool = False,
    generated_at: int | None = None,
) -> bool:
    """Insert or replace when the new snapshot is newer or equal; keeps the ``selected_for_phase2`` flags.

    Returns whether a row was written (False when a newer snapshot is already stored, or the thread was forgotten).
    """
    cur = conn.execute(
        """
        INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug,
                                    generated_at, offline)
        SELECT ?, ?, ?, ?, ?, ?, ?
        WHERE NOT EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = ?)  -- forgotten stays so
        ON CONFLICT (thread_id) DO UPDATE SET
          source_updated_at = excluded.source_updated_at,
          raw_memory = excluded.raw_memory,
          rollout_summary = excluded.rollout_summary,
          rollout_slug = excluded.rollout_slug,
          generated_at = excluded.generated_at,
          offline = excluded.offline
        WHERE excluded.source_updated_at >= stage1_outputs.source_updated_at
        """,
        (
            thread_id,
            source_updated_at,
            raw_memory,
            rollout_summary,
            rollout_slug,
            clock.now_s() if generated_at is None else generated_at,
            int(offline),
            thread_id,
        ),
    )
    return cur.rowcount == 1


def delete_stage1_output(conn: sqlite3.Connection, thread_id: str) -> bool:
    """Delete the thread's row; True if one existed."""
    return conn.execute("DELETE FROM stage1_outputs WHERE thread_id = ?", (thread_id,)).rowcount == 1


def get_stage1_output(conn: sqlite3.Connection, thread_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM stage1_outputs WHERE thread_id = ?", (thread_id,)).fetchone()
