"""The ``threads`` and ``ingest_files`` tables: upserts for ingest, lookups and keyset paging for the UI.

``list_threads`` pages with a keyset (``after=(sort value, id)`` of the last row shown) so that a view over
100k threads costs the same on the last page as on the first; ``offset`` is there for small jumps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from memtui.rollouts.model import FileResult, Thread

THREAD_COLUMNS = list(Thread.model_fields)
SortKey = Literal["updated_at", "created_at", "bytes", "items", "cwd", "id"]
_SORTS: set[str] = {"updated_at", "created_at", "bytes", "items", "cwd", "id"}
_NOT_NULL_SORTS = {"updated_at", "bytes", "items", "id"}  # row-value keyset; updated_at uses idx_threads_updated


@dataclass(frozen=True, slots=True)
class KnownFile:
    size: int
    mtime_ns: int
    thread_id: str | None
    status: str
    updated_at: int | None = None  # of the thread this file held, when it still holds it


def known_files(conn: sqlite3.Connection) -> dict[str, KnownFile]:
    """Every ``ingest_files`` row by path: one SELECT, the whole incremental check's database cost."""
    return {
        r[0]: KnownFile(r[1], r[2], r[3], r[4], r[5])
        for r in conn.execute(
            "SELECT f.path, f.size, f.mtime_ns, f.thread_id, f.status, t.updated_at FROM ingest_files f"
            " LEFT JOIN threads t ON t.id = f.thread_id AND t.path = f.path"
        )
    }


def thread_owner(conn: sqlite3.Connection, thread_id: str) -> tuple[str, int] | None:
    """(path, updated_at) of the file that currently holds ``thread_id``."""
    row = conn.execute("SELECT path, updated_at FROM threads WHERE id = ?", (thread_id,)).fetchone()
    return (row[0], row[1]) if row else None


_THREAD_UPSERT = (
    f"INSERT INTO threads ({', '.join(THREAD_COLUMNS)}) VALUES ({', '.join('?' * len(THREAD_COLUMNS))}) "
    f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c}=excluded.{c}' for c in THREAD_COLUMNS if c != 'id')}"
)
# A forgotten rollout's words (its first message, its title) are not indexed again when its file changes.
_FORGOTTEN = "EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = excluded.id)"
_THREAD_UPSERT = _THREAD_UPSERT.replace(
    "preview=excluded.preview", f"preview=CASE WHEN {_FORGOTTEN} THEN '' ELSE excluded.preview END"
).replace("title=excluded.title", f"title=CASE WHEN {_FORGOTTEN} THEN NULL ELSE excluded.title END")
_FILE_UPSERT = (
    "INSERT INTO ingest_files (path, source_kind, size, mtime_ns, thread_id, status, reason, lines, skipped_lines,"
    " ingested_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET source_kind=excluded.source_kind,"
    " size=excluded.size, mtime_ns=excluded.mtime_ns, thread_id=excluded.thread_id, status=excluded.status,"
    " reason=excluded.reason, lines=excluded.lines, skipped_lines=excluded.skipped_lines,"
    " ingested_at=excluded.ingested_at"
)


def _thread_row(t: Thread) -> tuple[Any, ...]:
    d = t.model_dump()
    d["archived"] = int(d["archived"])
    return tuple(d[c] for c in THREAD_COLUMNS)


def upsert_threads(conn: sqlite3.Connection, threads: Iterable[Thread]) -> None:
    rows = [_thread_row(t) for t in threads]
    ids = [r[0] for r in rows]
    forgotten: set[str] = set()
    for i in range(0, len(ids), 500):  # a forgotten rollout's words are never written, not even on a first insert
        chunk = ids[i : i + 500]
        forgotten |= {
            r[0]
            for r in conn.execute(
                f"SELECT thread_id FROM forgotten_threads WHERE thread_id IN ({','.join('?' * len(chunk))})", chunk
            )
        }
    if forgotten:
        p, t = THREAD_COLUMNS.index("preview"), THREAD_COLUMNS.index("title")
        rows = [
            tuple("" if i == p else None if i == t else v for i, v in enumerate(r)) if r[0] in forgotten else r
            for r in rows
        ]
    conn.executemany(_THREAD_UPSERT, rows)


def upsert_files(conn: sqlite3.Connection, results: Iterable[FileResult], now: int) -> None:
    conn.executemany(
        _FILE_UPSERT,
        [
            (
                r.path,
                r.source_kind,
                r.size,
                r.mtime_ns,
                r.thread.id if r.thread else None,
                r.status,
                r.reason,
                r.lines,
                r.skipped_lines,
                now,
            )
            for r in results
        ],
    )


def mark_missing(conn: sqlite3.Connection, paths: Iterable[str]) -> int:
    """Files that vanished: drop their ``ingest_files`` row; a thread still pointing at one is flagged
    ``missing`` (not deleted: its Phase 1 output and history stay, and it comes back if the file does)."""
    paths = list(paths)
    conn.executemany("DELETE FROM ingest_files WHERE path = ?", [(p,) for p in paths])
    conn.executemany(
        "UPDATE threads SET ingest_status='missing', ingest_reason='rollout file no longer exists' WHERE path = ?",
        [(p,) for p in paths],
    )
    return len(paths)


def _to_thread(row: sqlite3.Row) -> Thread:
    d = dict(row)
    d["archived"] = bool(d["archived"])
    return Thread.model_validate(d)


def get_thread(conn: sqlite3.Connection, thread_id: str) -> Thread | None:
    row = conn.execute(f"SELECT {', '.join(THREAD_COLUMNS)} FROM threads WHERE id = ?", (thread_id,)).fetchone()
    return _to_thread(row) if row else None


@dataclass
class ThreadFilter:
    """Conditions shared by ``list_threads`` and ``count_threads`` (None = no condition)."""

    source_kind: str | None = None
    session_source: str | Iterable[str] | None = None
    archived: bool | None = None
    memory_mode: str | None = None
    ingest_status: str | None = None
    cwd_prefix: str | None = None
    search: str | None = None  # substring of preview, title, cwd or id (case-insensitive)
    updated_since: int | None = None
    updated_before: int | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        for column in ("source_kind", "memory_mode", "ingest_status"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if self.session_source is not None:
            values = [self.session_source] if isinstance(self.session_source, str) else list(self.session_source)
            clauses.append(f"session_source IN ({', '.join('?' * len(values))})")
            args.extend(values)
        if self.archived is not None:
            clauses.append("archived = ?")
            args.append(int(self.archived))
        if self.cwd_prefix:
            clauses.append("substr(cwd, 1, ?) = ?")
            args.extend([len(self.cwd_prefix), self.cwd_prefix])
        if self.search:
            pattern = "%" + self.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append(
                "(preview LIKE ? ESCAPE '\\' OR title LIKE ? ESCAPE '\\' OR cwd LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')"
            )
            args.extend([pattern] * 4)
        if self.updated_since is not None:
            clauses.append("updated_at >= ?")
            args.append(self.updated_since)
        if self.updated_before is not None:
            clauses.append("updated_at < ?")
            args.append(self.updated_before)
        return clauses, args


def list_threads(
    conn: sqlite3.Connection,
    where: ThreadFilter | None = None,
    *,
    sort: SortKey = "updated_at",
    descending: bool = True,
    limit: int = 100,
    offset: int = 0,
    after: tuple[Any, str] | None = None,
) -> list[Thread]:
    """A page of threads ordered by ``sort`` then ``id``. Pass ``after=(row.<sort>, row.id)`` of the last row
    of the previous page to get the next one (keyset paging); NULL sort values come last either way."""
    if sort not in _SORTS:
        raise ValueError(f"cannot sort threads by {sort!r}")
    clauses, args = (where or ThreadFilter()).where()
    direction = "DESC" if descending else "ASC"
    cmp = "<" if descending else ">"
    if after is not None:
        value, last_id = after
        if sort == "id":
            clauses.append(f"id {cmp} ?")
            args.append(last_id)
        elif sort in _NOT_NULL_SORTS:
            clauses.append(f"({sort}, id) {cmp} (?, ?)")
            args.extend([value, last_id])
        elif value is None:
            clauses.append(f"({sort} IS NULL AND id {cmp} ?)")
            args.append(last_id)
        else:
            clauses.append(f"({sort} {cmp} ? OR ({sort} = ? AND id {cmp} ?) OR {sort} IS NULL)")
            args.extend([value, value, last_id])
    sql = f"SELECT {', '.join(THREAD_COLUMNS)} FROM threads"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    if sort == "id":
        order = f"id {direction}"
    elif sort in _NOT_NULL_SORTS:
        order = f"{sort} {direction}, id {direction}"
    else:
        order = f"{sort} IS NULL, {sort} {direction}, id {direction}"
    sql += f" ORDER BY {order} LIMIT ? OFFSET ?"
    return [_to_thread(r) for r in conn.execute(sql, [*args, limit, offset])]


def count_threads(conn: sqlite3.Connection, where: ThreadFilter | None = None) -> int:
    clauses, args = (where or ThreadFilter()).where()
    sql = "SELECT COUNT(*) FROM threads" + (" WHERE " + " AND ".join(clauses) if clauses else "")
    return conn.execute(sql, args).fetchone()[0]


def skipped_files(conn: sqlite3.Connection, limit: int = 1000) -> list[dict[str, Any]]:
    """Files that yielded no thread, newest first, with their reason (for ``status`` and the UI)."""
    rows = conn.execute(
        "SELECT path, source_kind, size, reason, lines, skipped_lines, ingested_at FROM ingest_files "
        "WHERE status = 'skipped' ORDER BY ingested_at DESC, path LIMIT ?",
        (limit,),
    )
    return [dict(r) for r in rows]
