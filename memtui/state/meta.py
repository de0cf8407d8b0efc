"""The ``meta`` table: small named values (run journals, an approve's intent, flags, watermarks).

Each key is named by the module that uses it (``phase2.post.<run>``, ``phase2.approving.<run>``, ``search.purge``,
``health.*``); this module is the only one that reads or writes the table.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def get(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else row[0]


def has(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT 1 FROM meta WHERE key=?", (key,)).fetchone() is not None


def put(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def delete(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM meta WHERE key=?", (key,))


def raise_flag(conn: sqlite3.Connection, key: str) -> None:
    """Set ``key`` to '1' by delete-then-insert: inside an UPSERT's trigger an INSERT OR REPLACE runs as a plain
    INSERT and would conflict once the flag is set (the schema's stage-1 triggers do the same)."""
    conn.execute("DELETE FROM meta WHERE key=?", (key,))
    conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (key,))


def rewrite_values(conn: sqlite3.Connection, change: Callable[[str | None], str | None]) -> int:
    """Apply ``change`` to every value; returns how many rows it changed (forget renames summary stems)."""
    changed = 0
    for key, value in conn.execute("SELECT key, value FROM meta").fetchall():
        new = change(value) if isinstance(value, str) else value
        if new != value:
            conn.execute("UPDATE meta SET value=? WHERE key=?", (new, key))
            changed += 1
    return changed


def data_version(conn: sqlite3.Connection, name: str) -> int:
    """A change counter the schema's triggers bump (``data_versions``); -1 when it does not exist."""
    row = conn.execute("SELECT version FROM data_versions WHERE name = ?", (name,)).fetchone()
    return int(row[0]) if row else -1
