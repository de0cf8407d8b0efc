"""The ``rejected_hunks`` table: hunks of a memory file a person left out of an approve, with the lines they kept out
(later Phase 2 runs do not add them to that file again, until lifted). The only module with SQL against it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass


def add(
    conn: sqlite3.Connection,
    rows: Iterable[tuple[int | None, str, str, str, str, list[str], str | None, list[str], int]],
) -> None:
    """(run_id, hunk_id, file, content_hash, text, added lines, reason, thread_ids, decided_at) per hunk."""
    conn.executemany(
        "INSERT INTO rejected_hunks (run_id, hunk_id, file, content_hash, text, added, reason, thread_ids,"
        " decided_at) VALUES (?,?,?,?,?,?,?,?,?)",
        [(r, h, f, c, t, json.dumps(a), why, json.dumps(ids), at) for r, h, f, c, t, a, why, ids, at in rows],
    )


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    run_id: int | None
    hunk_id: str
    file: str
    content_hash: str
    text: str
    added: str  # JSON [line]
    reason: str | None
    decided_at: int


def newest(conn: sqlite3.Connection, limit: int) -> list[Row]:
    rows = conn.execute(
        "SELECT id, run_id, hunk_id, file, content_hash, text, added, reason, decided_at FROM rejected_hunks"
        " ORDER BY decided_at DESC, id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [Row(*r) for r in rows]


def added_lines(conn: sqlite3.Connection) -> list[str]:
    """The ``added`` JSON of every left-out hunk."""
    return [r[0] for r in conn.execute("SELECT added FROM rejected_hunks")]


@dataclass(frozen=True, slots=True)
class Evidence:
    id: int
    file: str
    text: str
    added: str  # JSON [line]
    thread_ids: str  # JSON [thread_id]


def all_evidence(conn: sqlite3.Connection) -> list[Evidence]:
    return [Evidence(*r) for r in conn.execute("SELECT id, file, text, added, thread_ids FROM rejected_hunks")]


def delete(conn: sqlite3.Connection, hunk_row: int) -> None:
    conn.execute("DELETE FROM rejected_hunks WHERE id=?", (hunk_row,))


def narrow(conn: sqlite3.Connection, hunk_row: int, text: str, added: list[str], thread_ids: list[str]) -> None:
    conn.execute(
        "UPDATE rejected_hunks SET text=?, added=?, thread_ids=? WHERE id=?",
        (text, json.dumps(added), json.dumps(thread_ids), hunk_row),
    )
