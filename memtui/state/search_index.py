"""The search index's tables: ``search_docs`` (redacted documents), ``search_sources`` (what was indexed, by
stamp) and the FTS5 index sqlite-utils builds over the documents (``search_docs_fts`` and its shadow tables).
The only module with SQL against them; ``memtui.services.search`` decides what to index and ranks the hits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import sqlite_utils

from memtui.adapters.rollouts.model import INTERACTIVE_SOURCES
from memtui.state import forgotten, meta, threads

DOCS = "search_docs"
FTS = "search_docs_fts"
USER_FTS = "search_user_fts"  # the user messages alone (schema migration 14), for memory health's candidates
MESSAGES_VERSION = "messages"  # data_versions: moved by every message document indexed, changed or dropped
PURGE_KEY = "search.purge"
TOKENIZE = "porter"


def _db(conn: sqlite3.Connection) -> sqlite_utils.Database:
    # recursive_triggers would change how REPLACE fires delete triggers on memtui's own tables: leave it off.
    return sqlite_utils.Database(conn, recursive_triggers=False)


def index_exists(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type='trigger' AND name IN (?, ?, ?)",
        (f"{DOCS}_ai", f"{DOCS}_ad", f"{DOCS}_au"),
    ).fetchone()
    return bool(row[0] == 3)


def ensure_index(conn: sqlite3.Connection) -> bool:
    """Create the FTS5 index (sqlite-utils ``enable_fts`` with triggers) when it is missing; True if created.

    Call outside a transaction (``enable_fts`` runs scripts). Two processes may race here: the loser's CREATE fails
    and is ignored; the winner rebuilds from the documents once its triggers exist, so nothing inserted in between
    is missed."""
    if index_exists(conn):
        return False
    table = _db(conn).table(DOCS)
    before = conn.execute("PRAGMA data_version").fetchone()[0]
    try:
        # porter: "deploys" finds "deploy". The scope column is stemmed too; the exact path check in search() keeps
        # /work/shopping out of /work/shop's results.
        table.enable_fts(["text", "scope"], fts_version="FTS5", create_triggers=True, tokenize=TOKENIZE)
    except sqlite3.OperationalError as exc:
        if "already exists" not in str(exc):
            raise
        return False
    try:  # SQLite >= 3.42 can remove a deleted document's terms at once; older versions purge by merging
        conn.execute(f"INSERT INTO {FTS} ({FTS}, rank) VALUES ('secure-delete', 1)")
    except sqlite3.DatabaseError:
        pass
    if conn.execute("PRAGMA data_version").fetchone()[0] != before:
        table.rebuild_fts()  # another process wrote documents before our triggers existed
    return True


def purge_asked(conn: sqlite3.Connection) -> bool:
    """Whether a delete asked for the FTS segments to be merged (set by triggers and refreshes)."""
    return meta.get(conn, PURGE_KEY) == "1"


def merge_segments(conn: sqlite3.Connection) -> None:
    """A full merge, so no deleted document's terms remain; the request is cleared. Inside the caller's transaction."""
    if index_exists(conn):
        conn.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('optimize')")
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (USER_FTS,)).fetchone():  # a set-aside old database
        conn.execute(f"INSERT INTO {USER_FTS} ({USER_FTS}) VALUES ('optimize')")
    meta.delete(conn, PURGE_KEY)


def ask_purge(conn: sqlite3.Connection) -> None:
    meta.raise_flag(conn, PURGE_KEY)


def replace_docs(
    conn: sqlite3.Connection, source: str, kinds: tuple[str, ...], docs: list[tuple[Any, ...]]
) -> tuple[int, int]:
    """Swap one source's documents; ask for a purge when text that was indexed is no longer there. Returns
    (removed, added), (0, 0) when nothing changed."""
    marks = ",".join("?" * len(kinds))
    old = conn.execute(
        f"SELECT kind, loc, role, project, text FROM {DOCS} WHERE source=? AND kind IN ({marks})", (source, *kinds)
    ).fetchall()
    new = {(d[0], d[2], d[3], d[4], d[5]) for d in docs}
    if {tuple(r) for r in old} == new:
        return 0, 0
    kept_texts = {d[5] for d in docs}
    if any(r[4] not in kept_texts for r in old):
        # some indexed text is gone for good: its terms must leave the FTS segments too
        meta.put(conn, PURGE_KEY, "1")
    conn.execute(f"DELETE FROM {DOCS} WHERE source=? AND kind IN ({marks})", (source, *kinds))
    conn.executemany(f"INSERT INTO {DOCS} (kind, source, loc, role, project, text) VALUES (?,?,?,?,?,?)", docs)
    return len(old), len(docs)


# ---- what was indexed -------------------------------------------------------------------------------------------


def file_stamps(conn: sqlite3.Connection) -> dict[str, str]:
    """Memory-root path -> the blob it was indexed at."""
    return {r[0][5:]: r[1] for r in conn.execute("SELECT key, stamp FROM search_sources WHERE key LIKE 'file:%'")}


def set_stamp(conn: sqlite3.Connection, key: str, stamp: str) -> None:
    conn.execute("INSERT OR REPLACE INTO search_sources (key, stamp) VALUES (?, ?)", (key, stamp))


def drop_stamp(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM search_sources WHERE key=?", (key,))


def stale_threads(conn: sqlite3.Connection) -> list[str]:
    """Indexed rollouts that are gone, no longer indexed, or forgotten."""
    return [
        r[0]
        for r in conn.execute(
            # joined on the thread's primary key: matching ``'thread:' || t.id`` would compare every pair of rows
            "SELECT substr(s.key, 8) FROM search_sources s LEFT JOIN threads t ON t.id = substr(s.key, 8)"
            " WHERE s.key LIKE 'thread:%' AND (t.id IS NULL OR t.ingest_status != 'indexed'"
            " OR EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id))"
        )
    ]


# ---- queries ----------------------------------------------------------------------------------------------------


def capped_count(conn: sqlite3.Connection, match: str, cap: int) -> int:
    """How many documents ``match``, counted up to ``cap`` (a bounded doclist walk, no bm25)."""
    row = conn.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {FTS} WHERE {FTS} MATCH ? LIMIT {int(cap)})", (match,))
    return int(row.fetchone()[0])


def newest_matches(conn: sqlite3.Connection, match: str, cap: int) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH ? ORDER BY rowid DESC LIMIT {int(cap)}", (match,)
        )
    ]


def keep_matching(conn: sqlite3.Connection, ids: list[int], project: str | None, kinds: list[str] | None) -> set[int]:
    """Of ``ids``, the documents of ``project`` (its cwd or below) or tied to none, and of ``kinds``."""
    exact, args = "", []
    if project is not None:
        esc = project.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        exact = " AND (project = '' OR project = ? OR project LIKE ? ESCAPE '\\')"
        args = [project, esc + "/%"]
    if kinds is not None:
        exact += f" AND kind IN ({','.join('?' * len(kinds))})"
        args += kinds
    return {
        r[0]
        for r in conn.execute(
            f"SELECT id FROM {DOCS} WHERE id IN (SELECT value FROM json_each(?)){exact}",
            (orjson.dumps(ids).decode(), *args),
        )
    }


def unserved_threads(conn: sqlite3.Connection, thread_ids: Iterable[str]) -> set[str]:
    """Of ``thread_ids``, those whose messages no search may serve: memory turned off for the session (a person's
    opt-out), forgotten, or no longer indexed."""
    ids = sorted(set(thread_ids))
    if not ids:
        return set()
    return set(ids) - (threads.memory_enabled_among(conn, ids) - forgotten.forgotten_among(conn, ids))


def withheld_threads(conn: sqlite3.Connection, thread_ids: Iterable[str]) -> set[str]:
    """Of ``thread_ids``, those whose memory agents may no longer read, even while the approved baseline still holds
    it: forgotten (the removing run not yet approved), or memory turned off for the session after it was extracted."""
    ids = sorted(set(thread_ids))
    if not ids:
        return set()
    return forgotten.forgotten_among(conn, ids) | threads.memory_disabled_among(conn, ids)


def bm25(conn: sqlite3.Connection, match: str) -> dict[int, float]:
    """bm25 of every document ``match`` finds (text weighed, scope not)."""
    return dict(
        conn.execute(f"SELECT rowid, bm25({FTS}, 1.0, 0.0) FROM {FTS} WHERE {FTS} MATCH ?", (match,)).fetchall()
    )


@dataclass(frozen=True, slots=True)
class Doc:
    id: int
    kind: str
    source: str
    loc: int
    role: str | None
    project: str
    text: str


def docs(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, Doc]:
    rows = conn.execute(
        f"SELECT id, kind, source, loc, role, project, text FROM {DOCS} WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(list(ids)).decode(),),
    )
    return {r[0]: Doc(*r) for r in rows}


# ---- user messages, for memory health ----------------------------------------------------------------------------

_INTERACTIVE = "t.session_source IN ({})".format(", ".join(f"'{s}'" for s in INTERACTIVE_SOURCES))
_USER_MESSAGES = (
    "SELECT d.id, d.source, d.loc, d.text, t.cwd, COALESCE(t.created_at, t.updated_at) FROM search_docs d"
    " JOIN threads t ON t.id = d.source WHERE d.kind = 'message' AND d.role = 'user' AND " + _INTERACTIVE
)
UserMessage = tuple[int, str, int, str, str | None, int | None]  # doc id, thread, item, text, cwd, session start


USER_MATCHING_SQL = (
    f"{_USER_MESSAGES} AND d.id IN (SELECT rowid FROM {USER_FTS} WHERE {USER_FTS} MATCH ?)"
    " AND COALESCE(t.created_at, t.updated_at) > ?"
)


def user_messages_matching(conn: sqlite3.Connection, match: str, started_after: int) -> list[UserMessage]:
    """An interactive session's user messages that ``match`` (FTS5), from sessions started after ``started_after``.

    The match runs on the index of user messages alone (``search_user_fts``): a word every summary holds costs
    nothing here."""
    return [tuple(r) for r in conn.execute(USER_MATCHING_SQL, (match, started_after)).fetchall()]


def user_messages_after(conn: sqlite3.Connection, doc_id: int) -> list[UserMessage]:
    """An interactive session's user messages indexed after document ``doc_id``, in index order."""
    return [tuple(r) for r in conn.execute(f"{_USER_MESSAGES} AND d.id > ? ORDER BY d.id", (doc_id,)).fetchall()]


def user_message(conn: sqlite3.Connection, thread_id: str, item: int) -> tuple[str, str | None] | None:
    """(text, session cwd) of the user's message at ``item`` of ``thread_id``."""
    row = conn.execute(
        "SELECT d.text, t.cwd FROM search_docs d LEFT JOIN threads t ON t.id = d.source"
        " WHERE d.kind = 'message' AND d.role = 'user' AND d.source = ? AND d.loc = ?",
        (thread_id, item),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def last_doc_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM search_docs").fetchone()[0])


def message_mark(conn: sqlite3.Connection) -> int:
    """A counter the schema's triggers move whenever a message is indexed, changed or dropped (one row read, not a
    count of every message)."""
    return meta.data_version(conn, MESSAGES_VERSION)


# ---- forgetting -------------------------------------------------------------------------------------------------


def forget(
    conn: sqlite3.Connection,
    thread_id: str,
    holds: Callable[[str], bool] | None,
    named: Callable[[str], bool] | None = None,
) -> int:
    """A forgotten rollout's documents go; so do memory-file chunks that ``holds`` its lines or whose file ``named``
    names as its own (its rollout summary: the next refresh leaves it out of the view), unless ``holds`` is None. A
    purge is asked for. Returns the documents dropped."""
    n = conn.execute("DELETE FROM search_docs WHERE source=? AND kind='message'", (thread_id,)).rowcount
    n += conn.execute(
        "DELETE FROM search_docs WHERE source=? AND kind IN ('summary', 'raw_memory')", (thread_id,)
    ).rowcount
    n += conn.execute("DELETE FROM search_sources WHERE key=?", (f"thread:{thread_id}",)).rowcount
    memory = [] if holds is None else conn.execute("SELECT id, source, text FROM search_docs WHERE kind='memory'")
    for doc_id, source, text in list(memory):
        if holds is not None and (holds(text) or (named is not None and named(source))):
            conn.execute("DELETE FROM search_docs WHERE id=?", (doc_id,))
            conn.execute("DELETE FROM search_sources WHERE key=?", (f"file:{source}",))
            n += 1
    ask_purge(conn)
    return n
