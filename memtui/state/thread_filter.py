"""The Rollouts filter's substring index: ``threads_filter``, an FTS5 trigram table over the columns a filter term
matches (preview, cwd, id, source kind, session source, title), so a term of three or more characters is found in
the index instead of by a LIKE over every thread.

The index is contentless (the words live in ``threads``; the index keeps trigrams and their positions) and the
triggers of its migration (``memtui/state/schema.py``) keep it in step with every insert, update and delete of a
thread, so a forgotten rollout's blanked preview and title leave it with the row. Each column is indexed lowered by
SQLite's ``lower()``, which folds ASCII letters only, and matched case-sensitively: a phrase query then finds exactly
the rows ``LIKE '%term%'`` finds (SQLite's LIKE folds ASCII letters only too; FTS5's own folding would fold others).
Deleted trigrams stay in the FTS5 segments until they are merged (SQLite 3.40 has no 'secure-delete'): ``purge``
merges them away.
"""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Iterable

TABLE = "threads_filter"
MIN_CHARS = 3  # a trigram index answers substrings of three characters or more; shorter terms use LIKE

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def indexed(term: str) -> bool:
    """Whether the index can answer ``term`` (its length in characters, as the trigram tokenizer counts them)."""
    return len(term) >= MIN_CHARS


def match_query(terms: Iterable[str]) -> str:
    """The FTS5 query for 'every term is a substring of one column': one quoted phrase per term (quoted, so
    ``AND``, ``*`` and ``"`` are plain characters), lowered as the index is."""
    return " AND ".join('"' + t.translate(_ASCII_LOWER).replace('"', '""') + '"' for t in terms)


def subquery(alias: str) -> str:
    """SQL true for the threads (``alias``) whose text matches the query bound to the ``?`` it holds."""
    return f"{alias}.rowid IN (SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?)"


def matches_at_most(conn: sqlite3.Connection, match: str, cap: int) -> bool:
    """Whether ``match`` finds at most ``cap`` threads (a walk of the doclists that stops at ``cap + 1``)."""
    sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (match, cap + 1)).fetchone()[0]) <= cap


def count(conn: sqlite3.Connection, match: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE {TABLE} MATCH ?", (match,)).fetchone()[0])


def purge(conn: sqlite3.Connection) -> None:
    """Merge every segment into one, so no deleted or replaced value's trigrams remain (the freed pages are zeroed
    by ``secure_delete``; the caller checkpoints the WAL)."""
    conn.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('optimize')")


def rebuild(conn: sqlite3.Connection) -> None:
    """Index every thread again from its row (after a VACUUM, which may renumber the rowids the index keys on)."""
    conn.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('delete-all')")
    conn.execute(
        f"INSERT INTO {TABLE} (rowid, preview, cwd, id, source_kind, session_source, title)"
        " SELECT rowid, lower(preview), lower(COALESCE(cwd, '')), lower(id), lower(source_kind),"
        " lower(session_source), lower(COALESCE(title, '')) FROM threads"
    )
    purge(conn)
