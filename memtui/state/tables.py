"""Code over any table by name: the store registry's row counts and a reset's carry-over. Generic SQL like this
may only live in memtui/state (tests/test_table_owners.py), so the registry (a service) names the tables and calls
these."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable

Rows = dict[str, list[tuple[tuple[str, object], ...]]]  # table -> rows as (column, value) pairs


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def read_rows(conn: sqlite3.Connection, tables: Iterable[str]) -> Rows:
    """Every row of ``tables``, from a database that may be broken: a table that cannot be read is left out."""
    out: Rows = {}
    for table in tables:
        with contextlib.suppress(sqlite3.DatabaseError):
            cols = columns(conn, table)
            if cols:
                out[table] = [tuple(zip(cols, r, strict=True)) for r in conn.execute(f'SELECT * FROM "{table}"')]
    return out


def insert_rows(conn: sqlite3.Connection, rows: Rows, *, clear: frozenset[str] = frozenset()) -> None:
    """Write ``rows`` into the columns each table has here; the columns in ``clear`` are written as NULL."""
    for table, table_rows in rows.items():
        have = set(columns(conn, table))
        for row in table_rows:
            pairs = [(c, None if c in clear else v) for c, v in row if c in have]
            cols = ", ".join(c for c, _ in pairs)
            marks = ", ".join("?" for _ in pairs)
            conn.execute(f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({marks})", [v for _, v in pairs])


def count_rows(conn: sqlite3.Connection, table: str) -> int | None:
    """Rows of ``table``; None when a broken database cannot say."""
    try:
        return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
    except sqlite3.DatabaseError:
        return None
