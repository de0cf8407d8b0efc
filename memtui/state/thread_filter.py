"""The Rollouts filter's substring index: ``threads_filter``, an FTS5 trigram table over the columns a filter term
matches (preview, cwd, id, source kind, session source, title), so a term of two or more characters is found in
the index instead of by a LIKE over every thread.

The index is contentless (the words live in ``threads``; the index keeps trigrams and their positions) and the
triggers of its migration (``memtui/state/schema.py``) keep it in step with every insert, update and delete of a
thread, so a forgotten rollout's blanked preview and title leave it with the row. Each column is indexed lowered by
SQLite's ``lower()``, which folds ASCII letters only, and matched case-sensitively: a phrase query then finds exactly
the rows ``LIKE '%term%'`` finds (SQLite's LIKE folds ASCII letters only too; FTS5's own folding would fold others).
Each value ends in a space, which no term holds (whitespace separates terms): a two-character term is then the
first two characters of a trigram wherever it occurs, and is answered by the trigrams the index holds that start
with it. Deleted trigrams stay in the FTS5 segments until they are merged (SQLite 3.40 has no 'secure-delete'):
``purge`` merges them away.
"""

from __future__ import annotations

import sqlite3
import string
from collections.abc import Iterable

TABLE = "threads_filter"
TERMS = "threads_filter_terms"  # a per-connection fts5vocab view of the index's trigrams (a temp table: no data)
MIN_CHARS = 3  # a phrase of the trigram index; two characters are expanded to the trigrams they start; one uses LIKE
MAX_EXPANSION = 200  # a two-character term that starts more trigrams than this is left to LIKE

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def lowered(term: str) -> str:
    """``term`` as the index holds text: ASCII letters lowered, as SQLite's ``lower()`` and ``LIKE`` fold them."""
    return term.translate(_ASCII_LOWER)


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'  # quoted, so AND, OR, * and " are plain characters


def phrase(term: str) -> str:
    """The FTS5 phrase for 'the term is a substring of one column' (three or more characters)."""
    return _phrase(lowered(term))


def expansion(conn: sqlite3.Connection, term: str) -> str | None:
    """The FTS5 query for a two-character ``term``: any trigram that starts with it, which the index holds wherever
    the term occurs (each value ends in a space). None when it starts more than ``MAX_EXPANSION`` trigrams; ``""``
    when it starts none, so no thread matches."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{TERMS} USING fts5vocab(main, {TABLE}, row)")
    low = lowered(term)
    # trigrams sort by their UTF-8 bytes, as code points do: those starting with ``low`` lie between these two
    rows = conn.execute(
        f"SELECT term FROM temp.{TERMS} WHERE term >= ? AND term <= ? LIMIT ?",
        (low, low + chr(0x10FFFF), MAX_EXPANSION + 1),
    ).fetchall()
    if len(rows) > MAX_EXPANSION:
        return None
    return "(" + " OR ".join(_phrase(r[0]) for r in rows) + ")" if rows else ""


def match_query(parts: Iterable[str]) -> str:
    """Every part (a phrase or an expansion) must match."""
    return " AND ".join(parts)


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
        " SELECT rowid, lower(preview) || ' ', lower(COALESCE(cwd, '')) || ' ', lower(id) || ' ',"
        " lower(source_kind) || ' ', lower(session_source) || ' ', lower(COALESCE(title, '')) || ' ' FROM threads"
    )
    purge(conn)
