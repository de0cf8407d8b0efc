"""The ``citation_events`` and ``citation_entries`` tables: citation blocks seen in rollouts or recorded by hand,
counted once each, and the memory lines they point at. The only module with SQL against them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass


def insert_event(
    conn: sqlite3.Connection, key: str, origin: str, thread_id: str | None, body: str, rollout_ids: str, at: int
) -> bool:
    """``INSERT OR IGNORE`` on ``key``: False when the key was already recorded."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO citation_events(key, origin, thread_id, body, rollout_ids, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (key, origin, thread_id, body, rollout_ids, at),
    )
    return cur.rowcount == 1


def insert_entries(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, int, int, str, str | None]]) -> None:
    """(event_key, path, line_start, line_end, note, text_hash) per cited range."""
    conn.executemany(
        "INSERT INTO citation_entries(event_key, path, line_start, line_end, note, text_hash) VALUES (?,?,?,?,?,?)",
        list(rows),
    )


def has_event(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT 1 FROM citation_events WHERE key=?", (key,)).fetchone() is not None


def count_events(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM citation_events").fetchone()[0])


def recorded_hash(conn: sqlite3.Connection, path: str, line_start: int, line_end: int) -> str | None:
    """The sha256 of the cited lines when this range was last recorded with one."""
    row = conn.execute(
        "SELECT text_hash FROM citation_entries WHERE path=? AND line_start=? AND line_end=? AND text_hash IS NOT NULL "
        "ORDER BY id DESC LIMIT 1",
        (path, line_start, line_end),
    ).fetchone()
    return row[0] if row else None


@dataclass(frozen=True, slots=True)
class Event:
    key: str
    origin: str
    thread_id: str | None
    body: str
    rollout_ids: str  # JSON list
    recorded_at: int
    entries: int


def newest_events(conn: sqlite3.Connection, limit: int = 200) -> list[Event]:
    rows = conn.execute(
        """SELECT e.key, e.origin, e.thread_id, e.body, e.rollout_ids, e.recorded_at,
                  (SELECT COUNT(*) FROM citation_entries c WHERE c.event_key=e.key) AS entries
           FROM citation_events e ORDER BY e.recorded_at DESC, e.key LIMIT ?""",
        (limit,),
    ).fetchall()
    return [Event(*r) for r in rows]


@dataclass(frozen=True, slots=True)
class EventRef:
    key: str
    thread_id: str | None
    rollout_ids: str  # JSON list
    recorded_at: int


def all_events(conn: sqlite3.Connection) -> list[EventRef]:
    rows = conn.execute("SELECT key, thread_id, rollout_ids, recorded_at FROM citation_events").fetchall()
    return [EventRef(r[0], r[1], r[2], r[3]) for r in rows]


def all_entries(conn: sqlite3.Connection) -> dict[str, list[tuple[str, int, int, str | None]]]:
    """event key -> (path, line_start, line_end, text_hash) of each cited range."""
    out: dict[str, list[tuple[str, int, int, str | None]]] = {}
    for key, path, start, end, digest in conn.execute(
        "SELECT event_key, path, line_start, line_end, text_hash FROM citation_entries"
    ):
        out.setdefault(key, []).append((path, int(start), int(end), digest))
    return out


def forget_thread(conn: sqlite3.Connection, thread_id: str) -> int:
    """The citation blocks found in a forgotten rollout, with their entries."""
    conn.execute(
        "DELETE FROM citation_entries WHERE event_key IN (SELECT key FROM citation_events WHERE thread_id=?)",
        (thread_id,),
    )
    return conn.execute("DELETE FROM citation_events WHERE thread_id=?", (thread_id,)).rowcount
