"""The ``forgotten_threads`` table: a person's "forget this rollout" marks, with the lineage a Phase 2 run must
still remove (kept only until the removing run is approved). The only module with SQL against it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass


def mark(conn: sqlite3.Connection, thread_id: str, at: int, reason: str | None, contributed: str) -> None:
    """Set (or renew) the mark; ``contributed`` is the lineage as JSON."""
    conn.execute(
        "INSERT INTO forgotten_threads (thread_id, forgotten_at, reason, contributed, run_id, done_at)"
        " VALUES (?,?,?,?,NULL,NULL) ON CONFLICT(thread_id) DO UPDATE SET forgotten_at=excluded.forgotten_at,"
        " reason=excluded.reason, contributed=excluded.contributed, run_id=NULL, done_at=NULL",
        (thread_id, at, reason, contributed),
    )


def unmark(conn: sqlite3.Connection, thread_id: str) -> bool:
    """Lift the mark; False when there was none."""
    return conn.execute("DELETE FROM forgotten_threads WHERE thread_id=?", (thread_id,)).rowcount > 0


def is_forgotten(conn: sqlite3.Connection, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM forgotten_threads WHERE thread_id=?", (thread_id,)).fetchone() is not None


def forgotten_among(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> set[str]:
    """Which of ``thread_ids`` are forgotten (500 ids per query)."""
    found: set[str] = set()
    for i in range(0, len(thread_ids), 500):
        chunk = list(thread_ids[i : i + 500])
        found |= {
            r[0]
            for r in conn.execute(
                f"SELECT thread_id FROM forgotten_threads WHERE thread_id IN ({','.join('?' * len(chunk))})", chunk
            )
        }
    return found


def pending_lineages(conn: sqlite3.Connection) -> list[str]:
    """The lineage (JSON) of each forgotten rollout whose derived text a Phase 2 run still has to remove."""
    rows = conn.execute(
        "SELECT contributed FROM forgotten_threads WHERE done_at IS NULL AND contributed IS NOT NULL"
        " ORDER BY forgotten_at, thread_id"
    ).fetchall()
    return [r[0] for r in rows]


@dataclass(frozen=True, slots=True)
class Carried:
    thread_id: str
    contributed: str | None  # the lineage as JSON


def carried_by(conn: sqlite3.Connection, run_id: int) -> list[Carried]:
    rows = conn.execute(
        "SELECT thread_id, contributed FROM forgotten_threads WHERE run_id=? AND done_at IS NULL", (run_id,)
    ).fetchall()
    return [Carried(r[0], r[1]) for r in rows]


def claim_for_run(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("UPDATE forgotten_threads SET run_id=? WHERE done_at IS NULL", (run_id,))


def done_with_run(conn: sqlite3.Connection, run_id: int, at: int) -> None:
    conn.execute(
        "UPDATE forgotten_threads SET contributed=NULL, done_at=? WHERE run_id=? AND done_at IS NULL", (at, run_id)
    )


def done_all(conn: sqlite3.Connection, at: int) -> int:
    return conn.execute(
        "UPDATE forgotten_threads SET contributed=NULL, done_at=? WHERE done_at IS NULL", (at,)
    ).rowcount


def release_run(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("UPDATE forgotten_threads SET run_id=NULL WHERE run_id=? AND done_at IS NULL", (run_id,))


def fingerprint(conn: sqlite3.Connection) -> tuple[int, int]:
    """(count, highest rowid): changes whenever a mark is set or lifted."""
    row = conn.execute("SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM forgotten_threads").fetchone()
    return int(row[0]), int(row[1])


def awaiting_run(conn: sqlite3.Connection) -> bool:
    """Whether a forget waits for a Phase 2 run to carry its removal (none claimed it yet)."""
    return (
        conn.execute("SELECT 1 FROM forgotten_threads WHERE done_at IS NULL AND run_id IS NULL LIMIT 1").fetchone()
        is not None
    )
