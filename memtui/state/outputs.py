"""``stage1_outputs`` writes: one row per thread, the newest extracted snapshot wins.

Callers hold the transaction (these are single statements, safe inside ``immediate(conn)``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memtui.core import clock


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
    row: sqlite3.Row | None = conn.execute("SELECT * FROM stage1_outputs WHERE thread_id = ?", (thread_id,)).fetchone()
    return row


def mark_selected_for_phase2(conn: sqlite3.Connection, selected: list[tuple[str, int]]) -> None:
    """Exactly the consumed snapshots flagged as selected for Phase 2.

    Same result as "clear all flags, then set the exact pairs", but rows already right are not rewritten, so a
    no-change run over thousands of selected rows writes (almost) nothing."""
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS phase2_selected (thread_id TEXT NOT NULL, source_updated_at INTEGER NOT NULL,"
        " PRIMARY KEY (thread_id, source_updated_at))"
    )
    conn.execute("DELETE FROM phase2_selected")
    conn.executemany("INSERT OR IGNORE INTO phase2_selected VALUES (?, ?)", [(tid, int(ts)) for tid, ts in selected])
    conn.execute(
        "UPDATE stage1_outputs SET selected_for_phase2=0, selected_for_phase2_source_updated_at=NULL"
        " WHERE (selected_for_phase2 != 0 OR selected_for_phase2_source_updated_at IS NOT NULL)"
        " AND NOT EXISTS (SELECT 1 FROM phase2_selected s WHERE s.thread_id = stage1_outputs.thread_id"
        " AND s.source_updated_at = stage1_outputs.source_updated_at)"
    )
    conn.execute(
        "UPDATE stage1_outputs SET selected_for_phase2=1, selected_for_phase2_source_updated_at=source_updated_at"
        " WHERE EXISTS (SELECT 1 FROM phase2_selected s WHERE s.thread_id = stage1_outputs.thread_id"
        " AND s.source_updated_at = stage1_outputs.source_updated_at)"
        " AND NOT (selected_for_phase2 = 1 AND selected_for_phase2_source_updated_at IS source_updated_at)"
    )
    conn.execute("DELETE FROM phase2_selected")


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
    fresh_at: int  # FRESHNESS_SQL: when it was last made or used, what max_unused_days counts from


# When a memory was last made or used: its extraction (a re-extraction counts again) or its latest citation.
# ``max_unused_days`` counts from here, for Phase 2's selection window and for retention alike, never from the
# session's own date: a backfill of sessions older than the window reaches the first consolidation. (Codex counts
# from the source's date; a first run over months of history would then select none of what it just extracted.)
# The expiry index (schema.py, idx_stage1_outputs_freshness) spells exactly this expression.
FRESHNESS_SQL = "MAX(generated_at, COALESCE(last_usage, 0))"

# Made or used within the window, or made since the last consolidation read its selection (``:consolidated``): what
# retention keeps because no consolidation has read it, the next one takes, however long the person waited.
_ELIGIBLE = f"""
    (TRIM(o.raw_memory, :ws) != '' OR TRIM(o.rollout_summary, :ws) != '')
    AND ({FRESHNESS_SQL} >= :cutoff OR o.generated_at > :consolidated)
    AND t.memory_mode = 'enabled'
"""


def top_for_phase2(
    conn: sqlite3.Connection, n: int, cutoff: int, whitespace: str, consolidated: int
) -> list[Stage1Output]:
    """Top ``n`` by usage_count, last use (else source_updated_at), recency, id, among the memories made or used
    since ``cutoff`` or made after ``consolidated``; returned sorted by thread id."""
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
               o.usage_count, o.last_usage, COALESCE(t.cwd, '') AS cwd, t.path AS rollout_path, t.git_branch,
               {FRESHNESS_SQL} AS fresh_at
        FROM top JOIN stage1_outputs o ON o.thread_id = top.thread_id JOIN threads t ON t.id = o.thread_id
        ORDER BY o.thread_id
        """,
        {"cutoff": cutoff, "n": n, "ws": whitespace, "consolidated": consolidated},
    ).fetchall()
    return [Stage1Output(*r) for r in rows]


def all_with_threads(conn: sqlite3.Connection) -> list[Stage1Output]:
    """Every stage-1 memory, selected or not: what the offline merge may have written lines from."""
    rows = conn.execute(
        "SELECT o.thread_id, o.source_updated_at, o.raw_memory, o.rollout_summary, o.rollout_slug, o.generated_at,"
        " o.usage_count, o.last_usage, COALESCE(t.cwd, '') AS cwd, COALESCE(t.path, '') AS rollout_path, t.git_branch,"
        f" {FRESHNESS_SQL} AS fresh_at"
        " FROM stage1_outputs o LEFT JOIN threads t ON t.id = o.thread_id ORDER BY o.thread_id"
    ).fetchall()
    return [Stage1Output(*r) for r in rows]


# The partial index idx_stage1_outputs_freshness holds exactly these rows in this order: a run reads ``limit``
# entries, not every output (the expressions must stay as the index spells them, or SQLite sorts the whole table
# again). A memory made after ``made_before`` (when the last consolidation read its selection) has not met one yet:
# it stays. (Made in that same second it may have been read or not; it counts as read, as a frozen clock needs.)
EXPIRED_SQL = f"""
    SELECT thread_id FROM stage1_outputs
    WHERE selected_for_phase2 = 0 AND {FRESHNESS_SQL} < :cutoff AND generated_at <= :made_before
    ORDER BY {FRESHNESS_SQL} ASC, source_updated_at ASC, thread_id ASC
    LIMIT :limit
"""


def expired(conn: sqlite3.Connection, cutoff: int, limit: int, made_before: int) -> list[str]:
    """Up to ``limit`` threads whose output is unselected, neither made nor used since ``cutoff``, and made by
    ``made_before``; stalest first."""
    args = {"cutoff": cutoff, "limit": limit, "made_before": made_before}
    return [r[0] for r in conn.execute(EXPIRED_SQL, args).fetchall()]


def bump_usage(conn: sqlite3.Connection, thread_ids: list[str], now: int) -> int:
    """Each id (duplicates counted again) gets ``usage_count+1`` and ``last_usage=now``; rows updated."""
    updated = 0
    for tid in thread_ids:
        cur = conn.execute(
            "UPDATE stage1_outputs SET usage_count = COALESCE(usage_count, 0) + 1, last_usage = ? WHERE thread_id = ?",
            (now, tid),
        )
        updated += cur.rowcount
    return updated


@dataclass(frozen=True, slots=True)
class Usage:
    usage_count: int
    last_usage: int | None


def usage(conn: sqlite3.Connection, thread_id: str) -> Usage | None:
    row = conn.execute("SELECT usage_count, last_usage FROM stage1_outputs WHERE thread_id=?", (thread_id,)).fetchone()
    return None if row is None else Usage(row[0] or 0, row[1])


def has_any(conn: sqlite3.Connection, thread_ids: tuple[str, ...]) -> bool:
    """Whether any of ``thread_ids`` has a stage-1 output."""
    marks = ", ".join("?" * len(thread_ids))
    return conn.execute(f"SELECT 1 FROM stage1_outputs WHERE thread_id IN ({marks})", thread_ids).fetchone() is not None


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0])


def texts(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """(thread_id, raw_memory, rollout_summary) of every output."""
    return [
        (r[0], r[1], r[2]) for r in conn.execute("SELECT thread_id, raw_memory, rollout_summary FROM stage1_outputs")
    ]


def stem_parts(conn: sqlite3.Connection, thread_id: str) -> tuple[int, str | None] | None:
    """(source_updated_at, rollout_slug): what the rollout summary's file name is made of."""
    row = conn.execute(
        "SELECT source_updated_at, rollout_slug FROM stage1_outputs WHERE thread_id=?", (thread_id,)
    ).fetchone()
    return None if row is None else (int(row[0]), row[1])


def text_of(conn: sqlite3.Connection, thread_id: str) -> tuple[str, str] | None:
    """(raw_memory, rollout_summary) of one thread."""
    row = conn.execute(
        "SELECT raw_memory, rollout_summary FROM stage1_outputs WHERE thread_id=?", (thread_id,)
    ).fetchone()
    return None if row is None else (row[0], row[1])


def texts_of_others_remembered(conn: sqlite3.Connection, thread_id: str) -> list[tuple[str, str]]:
    """(raw_memory, rollout_summary) of every other thread that is not forgotten."""
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT raw_memory, rollout_summary FROM stage1_outputs WHERE thread_id != ? AND thread_id NOT IN"
            " (SELECT thread_id FROM forgotten_threads)",
            (thread_id,),
        )
    ]


def forget(conn: sqlite3.Connection, thread_id: str) -> int:
    """The output goes; its search documents follow by trigger (search_stage1_ad)."""
    return conn.execute("DELETE FROM stage1_outputs WHERE thread_id=?", (thread_id,)).rowcount


@dataclass(frozen=True, slots=True)
class WithThread:
    """A stage-1 output with what the review's evidence shows of its thread."""

    thread_id: str
    raw_memory: str | None
    rollout_summary: str | None
    source_updated_at: int
    rollout_slug: str | None
    cwd: str | None
    updated_at: int | None
    title: str | None  # the thread's title, else its first words


_WITH_THREAD = (
    "SELECT o.thread_id, o.raw_memory, o.rollout_summary, o.source_updated_at, o.rollout_slug, t.cwd,"
    " t.updated_at, COALESCE(NULLIF(t.title, ''), NULLIF(t.preview, '')) AS title"
    " FROM stage1_outputs o LEFT JOIN threads t ON t.id = o.thread_id"
)


def with_threads(conn: sqlite3.Connection, thread_ids: list[str] | None) -> list[WithThread]:
    """The outputs of ``thread_ids`` (500 per query); None: the outputs selected for Phase 2, else the newest 4096
    (what the memory was built from when no run selection is known)."""
    if thread_ids is None:
        rows = conn.execute(_WITH_THREAD + " WHERE o.selected_for_phase2 = 1").fetchall()
        rows = rows or conn.execute(_WITH_THREAD + " ORDER BY o.source_updated_at DESC LIMIT 4096").fetchall()
    else:
        rows = []
        for i in range(0, len(thread_ids), 500):
            chunk = thread_ids[i : i + 500]
            rows += conn.execute(
                _WITH_THREAD + f" WHERE o.thread_id IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
    return [WithThread(*r) for r in rows]
