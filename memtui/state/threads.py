"""The ``threads`` and ``ingest_files`` tables: upserts for ingest, lookups and keyset paging for the UI.

``list_threads`` pages with a keyset (``after=(sort value, id)`` of the last row shown) so that a view over
100k threads costs the same on the last page as on the first; ``offset`` is there for small jumps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from memtui.adapters.rollouts.model import INTERACTIVE_SOURCES, FileResult, Thread
from memtui.state import thread_filter
from memtui.state.db import like_pattern
from memtui.state.forgotten import forgotten_among

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
    memory_mode: str | None = None  # that thread's, as stored (Codex's state may have changed it since)
    archived: bool | None = None


def known_files(conn: sqlite3.Connection) -> dict[str, KnownFile]:
    """Every ``ingest_files`` row by path: one SELECT, the whole incremental check's database cost."""
    return {
        r[0]: KnownFile(r[1], r[2], r[3], r[4], r[5], r[6], None if r[7] is None else bool(r[7]))
        for r in conn.execute(
            "SELECT f.path, f.size, f.mtime_ns, f.thread_id, f.status, t.updated_at, t.memory_mode, t.archived"
            " FROM ingest_files f LEFT JOIN threads t ON t.id = f.thread_id AND t.path = f.path"
        )
    }


def thread_owner(conn: sqlite3.Connection, thread_id: str) -> tuple[str, int] | None:
    """(path, updated_at) of the file that currently holds ``thread_id``."""
    row = conn.execute("SELECT path, updated_at FROM threads WHERE id = ?", (thread_id,)).fetchone()
    return (row[0], row[1]) if row else None


# One statement for a whole batch (rows from a JSON array): the filter index's triggers then write one FTS5 segment
# per batch, where one statement per row (executemany) flushed a segment per row, five times the cost. json_extract,
# not the ->> operator, which needs SQLite 3.38 (older distributions' Pythons link an older one).
_ROW_VALUES = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(THREAD_COLUMNS)))
_THREAD_UPSERT = (
    f"INSERT INTO threads ({', '.join(THREAD_COLUMNS)}) SELECT {_ROW_VALUES} FROM json_each(?) WHERE true "
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
    forgotten = forgotten_among(conn, ids)  # a forgotten rollout's words are never written, not even at first
    if forgotten:
        p, t = THREAD_COLUMNS.index("preview"), THREAD_COLUMNS.index("title")
        rows = [
            tuple("" if i == p else None if i == t else v for i, v in enumerate(r)) if r[0] in forgotten else r
            for r in rows
        ]
    if rows:
        conn.execute(_THREAD_UPSERT, (orjson.dumps(rows).decode(),))


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
    return int(conn.execute(sql, args).fetchone()[0])


@dataclass(frozen=True)
class SkippedFile:
    """A rollout file that yielded no thread, and why."""

    path: str
    source_kind: str
    size: int
    reason: str | None
    lines: int
    skipped_lines: int
    ingested_at: int


def skipped_files(conn: sqlite3.Connection, limit: int = 1000) -> list[SkippedFile]:
    """Files that yielded no thread, newest first, with their reason (for ``status`` and the UI)."""
    rows = conn.execute(
        "SELECT path, source_kind, size, reason, lines, skipped_lines, ingested_at FROM ingest_files "
        "WHERE status = 'skipped' ORDER BY ingested_at DESC, path LIMIT ?",
        (limit,),
    )
    return [SkippedFile(*r) for r in rows]


# ---- which threads Phase 1 may read, and the rollout list the UI pages ---------------------------------------------

# Why a thread (alias t) can never be extracted, whatever the time: the user's opt-outs and Codex's claim rules
# (``claim_stage1_jobs_for_startup``: not archived, an interactive source, ``memory_mode = 'enabled'``, legacy or
# paginated history alike since Codex 0.16x; docs/faithful-input.md), for every agent: each transcript source maps
# its sessions onto those fields (``memtui.adapters.sources.protocol``). NULL when none applies. The UI shows the
# same reasons.
NEVER_ELIGIBLE_SQL = """CASE
    WHEN EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id) THEN 'forgotten'
    WHEN t.archived != 0 THEN 'archived'
    WHEN t.session_source NOT IN ({interactive}) THEN 'not_interactive'
    WHEN t.memory_mode != 'enabled' THEN 'memory_disabled'
    WHEN t.preview = '' THEN 'no_preview'
  END""".format(interactive=", ".join(f"'{s}'" for s in INTERACTIVE_SOURCES))

# Phase 1 has read the thread as it is now (its output, or its last successful job, is as new as the thread).
_UP_TO_DATE = "(o.source_updated_at >= t.updated_at OR j.last_success_watermark >= t.updated_at)"

# Up to date comes before the windows: a session a backfill (``--all``) read is no longer "too old" to read.
_PHASE1_SCAN = (
    """
SELECT t.id, t.source_kind, t.path, t.cwd, t.updated_at,
  CASE
    WHEN ("""
    + NEVER_ELIGIBLE_SQL
    + """) IS NOT NULL THEN """
    + NEVER_ELIGIBLE_SQL
    + """
    WHEN :check_done AND """
    + _UP_TO_DATE
    + """ THEN 'up_to_date'
    WHEN :windows AND t.updated_at < :oldest THEN 'too_old'
    WHEN :windows AND t.updated_at > :newest THEN 'not_idle'
  END AS skip
FROM threads t
LEFT JOIN stage1_outputs o ON o.thread_id = t.id
LEFT JOIN jobs j ON j.kind = :kind AND j.job_key = t.id
{where}
ORDER BY t.updated_at DESC, t.id DESC
LIMIT :limit
"""
)


# The sessions older than Phase 1's age window that it would read but has not: what a backfill (``--all``) reads.
_OLDER_UNREAD = f"""
SELECT COUNT(*), MIN(t.updated_at), MAX(t.updated_at)
FROM threads t
LEFT JOIN stage1_outputs o ON o.thread_id = t.id
LEFT JOIN jobs j ON j.kind = :kind AND j.job_key = t.id
WHERE t.updated_at < :oldest AND ({NEVER_ELIGIBLE_SQL}) IS NULL AND NOT COALESCE({_UP_TO_DATE}, 0)
"""


@dataclass(frozen=True, slots=True)
class OlderUnread:
    count: int
    oldest: int | None  # updated_at of the oldest and the newest of them (None when there are none)
    newest: int | None


def older_unread(conn: sqlite3.Connection, oldest: int, kind: str) -> OlderUnread:
    """Sessions updated before ``oldest`` that Phase 1 may read and has not (``kind``: its job kind)."""
    n, lo, hi = conn.execute(_OLDER_UNREAD, {"oldest": oldest, "kind": kind}).fetchone()
    return OlderUnread(int(n), lo, hi)


@dataclass(frozen=True, slots=True)
class ScannedThread:
    id: str
    source_kind: str
    path: str
    cwd: str | None
    updated_at: int
    skip: str | None  # why Phase 1 skips it, or None when it is a candidate


def phase1_scan(conn: sqlite3.Connection, params: dict[str, Any], *, one_thread: bool) -> list[ScannedThread]:
    """Every thread (newest first, up to ``:limit``) with the reason Phase 1 skips it; one query."""
    sql = _PHASE1_SCAN.format(where="WHERE t.id = :thread_id" if one_thread else "")
    return [ScannedThread(r[0], r[1], r[2], r[3], r[4], r[5]) for r in conn.execute(sql, params)]


# The stage-1 status of a thread, as one SQL expression over threads t, jobs j, stage1_outputs o.
# Skipped threads say why (ingest reason or memory mode); a finished job without an output is a no-op.
_LAST_RUN = (
    "(SELECT r.{col} FROM job_runs r WHERE r.kind='memory_stage1' AND r.job_key=t.id ORDER BY r.id DESC LIMIT 1)"
)
STATUS_SQL = f"""
CASE
  WHEN j.status = 'running' THEN 'running'
  WHEN j.status = 'error' THEN 'failed'
  WHEN o.thread_id IS NOT NULL THEN 'done'
  WHEN t.ingest_status != 'indexed' OR ({NEVER_ELIGIBLE_SQL}) IS NOT NULL THEN 'skipped'
  WHEN j.status = 'done' AND (COALESCE({_LAST_RUN.format(col="noop")}, 0) = 1
       OR {_LAST_RUN.format(col="outcome")} = 'no_output') THEN 'no-op'
  WHEN j.status = 'done' THEN 'done'
  ELSE 'pending'
END"""

_JOINS = "LEFT JOIN jobs j ON j.kind='memory_stage1' AND j.job_key=t.id LEFT JOIN stage1_outputs o ON o.thread_id=t.id"

# Column key -> SQL sort expression. Keys are the DataTable column keys.
ROLLOUT_SORTS: dict[str, str] = {
    "updated": "t.updated_at",
    "project": "COALESCE(t.cwd, '')",
    "source": "t.source_kind || ':' || t.session_source",
    "size": "t.bytes",
    "status": STATUS_SQL,
    "usage": "COALESCE(o.usage_count, 0)",
    "last_use": "COALESCE(o.last_usage, 0)",
    "preview": "t.preview",
}

# Each term must match one of these (OR short-circuits, which beats one concatenated haystack per row).
_FILTER_COLUMNS = (
    "t.preview",
    "COALESCE(t.cwd,'')",
    "t.id",
    "t.source_kind",
    "t.session_source",
    "COALESCE(t.title,'')",
)


# Statuses the job row alone decides (the first branches of STATUS_SQL): a count filters on the job's indexed
# status instead of evaluating the whole CASE, with its subqueries, for every thread.
_JOB_DECIDES = {"running": "running", "failed": "error"}


# Up to this many matches the index's rows are fetched and sorted; above, a page walks the threads in order and tests
# each (dense matches fill a page within a few hundred rows). Sorting n matches costs about what walking 46 * 100k / n
# rows does, so the two meet near 2,000 at 100k threads.
_SORT_MATCHES_UP_TO = 2000


@dataclass(frozen=True, slots=True)
class _Filter:
    """A filter text as SQL: the substring terms the index answers, and the rest (one-character terms, `status:`,
    `source:`, two-character terms too common to expand)."""

    indexed: tuple[str, ...]  # terms the index answers
    parts: tuple[str, ...]  # their FTS5 queries; "" for a term no thread holds
    other: tuple[str, ...]  # SQL conditions, AND-ed
    other_args: tuple[Any, ...]
    joins: bool  # a condition reads the job or the output (`status:`)
    scans: bool  # a condition is tested on every thread's text or stage-1 status (LIKE, STATUS_SQL)

    @property
    def match(self) -> str:
        return thread_filter.match_query(self.parts)

    def use_index(self, conn: sqlite3.Connection) -> bool:
        """Whether the indexed terms are answered through the index: few matches are fetched and sorted; many are
        left to a walk of the threads in order, which a page fills early."""
        return bool(self.indexed) and thread_filter.matches_at_most(conn, self.match, _SORT_MATCHES_UP_TO)

    @property
    def nothing(self) -> bool:
        """A term starts no trigram of the index: no thread matches."""
        return "" in self.parts

    def where(self, *, use_index: bool) -> tuple[str, list[Any]]:
        """Every condition AND-ed: the indexed terms through the index, or through LIKE (after the others, which
        then rule most rows out first)."""
        clauses, args = list(self.other), list(self.other_args)
        if self.indexed and use_index:
            clauses.append(thread_filter.subquery("t"))
            args.append(self.match)
        elif self.indexed:
            for term in self.indexed:
                clause, like_args = _like_clause(term)
                clauses.append(clause)
                args += like_args
        return (" AND ".join(clauses) or "1"), args


def _like_clause(term: str) -> tuple[str, list[Any]]:
    like = like_pattern(term)
    return "(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in _FILTER_COLUMNS) + ")", [like] * len(_FILTER_COLUMNS)


def _parse_filter(conn: sqlite3.Connection, filter_text: str, *, by_job_status: bool = False) -> _Filter:
    """Every whitespace-separated term must match one column; `status:x` and `source:x` match exactly.

    ``by_job_status``: `status:running` and `status:failed` test the job's status, the same rows by STATUS_SQL's
    first branches; a count uses it (an ordered page is faster walking the threads by date, as it stops early)."""
    indexed: list[str] = []
    parts: list[str] = []
    clauses: list[str] = []
    args: list[Any] = []
    joins = scans = False
    for term in filter_text.split():
        key, _, value = term.partition(":")
        if value and key == "status" and by_job_status and value.lower() in _JOB_DECIDES:
            clauses.append("j.status = ?")
            args.append(_JOB_DECIDES[value.lower()])
            joins = True
            continue
        if value and key == "status":
            clauses.append(f"({STATUS_SQL}) = ?")
            args.append(value.lower())
            joins = scans = True
            continue
        if value and key == "source":
            clauses.append("(t.source_kind = ? OR t.session_source = ?)")
            args += [value.lower(), value.lower()]
            continue
        part = (
            thread_filter.phrase(term)
            if len(term) >= thread_filter.MIN_CHARS
            else thread_filter.expansion(conn, term)
            if len(term) == thread_filter.MIN_CHARS - 1
            else None
        )
        if part is None:
            clause, like_args = _like_clause(term)
            clauses.append(clause)
            args += like_args
            scans = True
        else:
            indexed.append(term)
            parts.append(part)
    return _Filter(tuple(indexed), tuple(parts), tuple(clauses), tuple(args), joins, scans)


def count_listed_from_indexes(conn: sqlite3.Connection, filter_text: str = "") -> int | None:
    """``count_listed`` when indexes answer it (the filter index, the job's status, SQLite's smallest index), else
    None: a count that tests every thread (a LIKE, the stage-1 status) can follow a page instead of delaying it."""
    f = _parse_filter(conn, filter_text, by_job_status=True)
    return None if f.scans or (f.indexed and f.other) else _count(conn, f)


def count_listed(conn: sqlite3.Connection, filter_text: str = "") -> int:
    return _count(conn, _parse_filter(conn, filter_text, by_job_status=True))


def _count(conn: sqlite3.Connection, f: _Filter) -> int:
    if f.nothing:
        return 0
    if f.indexed and not f.other:
        return thread_filter.count(conn, f.match)  # the index alone counts: no thread row is read
    if not f.indexed and not f.other:  # a bare COUNT(*) reads SQLite's smallest index; "WHERE 1" walks the table
        return int(conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0])
    where, args = f.where(use_index=f.use_index(conn))
    sql = f"SELECT COUNT(*) FROM threads t {_JOINS if f.joins else ''} WHERE {where}"
    return int(conn.execute(sql, args).fetchone()[0])


@dataclass(frozen=True, slots=True)
class ListedThread:
    """A thread as the rollout list and detail show it: its row, its stage-1 status and what explains it."""

    id: str
    updated_at: int
    cwd: str
    source_kind: str
    session_source: str
    bytes: int
    status: str
    ingest_status: str
    ingest_reason: str | None
    never: str | None  # why it can never be extracted (NEVER_ELIGIBLE_SQL), if so
    last_error: str | None
    lease_until: int | None
    usage_count: int
    last_usage: int | None
    preview: str
    path: str
    title: str | None  # redacted: a summary line's or the person's own (``/rename``), else the first prompt's line
    raw_memory: str = ""
    rollout_summary: str = ""


_LISTED = f"""t.id, t.updated_at, COALESCE(t.cwd, '') AS cwd, t.source_kind, t.session_source, t.bytes,
    {STATUS_SQL} AS status, t.ingest_status, t.ingest_reason, {NEVER_ELIGIBLE_SQL} AS never,
    j.last_error, j.lease_until, COALESCE(o.usage_count, 0) AS usage_count, o.last_usage, t.preview, t.path, t.title"""


def list_page(
    conn: sqlite3.Connection, filter_text: str, sort: str, descending: bool, offset: int, limit: int
) -> list[ListedThread]:
    """One page of threads. The page's ids are chosen first, then only those rows are decorated."""
    f = _parse_filter(conn, filter_text)
    if f.nothing:
        return []
    where, args = f.where(use_index=f.use_index(conn))
    order = ROLLOUT_SORTS.get(sort, ROLLOUT_SORTS["updated"])
    direction = "DESC" if descending else "ASC"
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT t.id FROM threads t {_JOINS} WHERE {where} "
            f"ORDER BY {order} {direction}, t.id {direction} LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
    ]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT {_LISTED} FROM threads t {_JOINS} WHERE t.id IN ({marks})", ids).fetchall()
    by_id = {r[0]: ListedThread(*r) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def listed(conn: sqlite3.Connection, thread_id: str) -> ListedThread | None:
    """One thread with its stage-1 status and output, for the rollout detail screen."""
    r = conn.execute(
        f"SELECT {_LISTED}, COALESCE(o.raw_memory, ''), COALESCE(o.rollout_summary, '')"
        f" FROM threads t {_JOINS} WHERE t.id = ?",
        (thread_id,),
    ).fetchone()
    return None if r is None else ListedThread(*r)


def exists(conn: sqlite3.Connection, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM threads WHERE id=?", (thread_id,)).fetchone() is not None


def titles_and_previews(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> dict[str, tuple[str | None, str]]:
    """id -> (title, preview) of the given threads that exist (500 ids per query)."""
    out: dict[str, tuple[str | None, str]] = {}
    ids = list(dict.fromkeys(thread_ids))
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for tid, title, preview in conn.execute(f"SELECT id, title, preview FROM threads WHERE id IN ({marks})", chunk):
            out[tid] = (title, preview)
    return out


def any_exists(conn: sqlite3.Connection, thread_ids: tuple[str, ...]) -> bool:
    marks = ", ".join("?" * len(thread_ids))
    return conn.execute(f"SELECT 1 FROM threads WHERE id IN ({marks})", thread_ids).fetchone() is not None


def forget_file_of(conn: sqlite3.Connection, thread_id: str) -> None:
    """Drop the ingest record of the file holding ``thread_id``, so the next ingest reads it again."""
    path = conn.execute("SELECT path FROM threads WHERE id=?", (thread_id,)).fetchone()
    if path is not None:
        conn.execute("DELETE FROM ingest_files WHERE path=?", (path[0],))


def mark_files_duplicate(conn: sqlite3.Connection, paths: Iterable[str], reason: str) -> None:
    """These files hold a thread another file already holds: skipped, holding no thread."""
    conn.executemany(
        "UPDATE ingest_files SET status='skipped', reason=?, thread_id=NULL WHERE path=?", [(reason, p) for p in paths]
    )


def mark_thread_skipped(conn: sqlite3.Connection, thread_id: str, path: str, reason: str) -> None:
    """The file that held ``thread_id`` no longer yields it: the thread stays, marked skipped with why."""
    conn.execute(
        "UPDATE threads SET ingest_status='skipped', ingest_reason=? WHERE id=? AND path=?", (reason, thread_id, path)
    )


def files_with_reasons(conn: sqlite3.Connection) -> dict[str, str]:
    """Path -> the stored ingest reason of every file whose thread has one (a warning, a missing history base):
    what a source may ask to read again once what was missing appears (``IngestRun.read_again``)."""
    return dict(
        conn.execute(
            "SELECT f.path, t.ingest_reason FROM ingest_files f JOIN threads t ON t.id = f.thread_id AND t.path = f.path"
            " WHERE t.ingest_reason IS NOT NULL"
        ).fetchall()
    )


# Walks the partial index idx_threads_memory_off (the few threads whose memory is off), in id order.
OPTED_OUT_SQL = (
    "SELECT t.id FROM threads t WHERE t.memory_mode != 'enabled'"
    " AND NOT EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id)"
    " AND EXISTS (SELECT 1 FROM stage1_outputs o WHERE o.thread_id = t.id) ORDER BY t.id"
)


def opted_out_with_output(conn: sqlite3.Connection) -> list[str]:
    """Threads whose memory is off now but that still have an output (not yet forgotten)."""
    return [r[0] for r in conn.execute(OPTED_OUT_SQL).fetchall()]


def set_titles(conn: sqlite3.Connection, source_kind: str, titles: list[tuple[str, str]]) -> int:
    """(title, thread_id) for threads of ``source_kind``, never for a forgotten one; returns the rows changed."""
    # the statements' own rows (rowcount), not total_changes, which counts what the triggers wrote too
    return conn.executemany(
        "UPDATE threads SET title=? WHERE id=? AND source_kind=? AND title IS NOT ?"
        " AND id NOT IN (SELECT thread_id FROM forgotten_threads)",
        [(title, tid, source_kind, title) for title, tid in titles],
    ).rowcount


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """What ``memtui status`` counts of the rollout index."""

    threads: int
    by_source: dict[str, int]  # "source_kind:session_source" -> threads
    archived: int
    files: int
    skipped_files: int
    skipped_by_reason: dict[str, int]
    skipped_lines: int


def index_counts(conn: sqlite3.Connection) -> IndexCounts:
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    by_source = {
        f"{r[0]}:{r[1]}": r[2]
        for r in conn.execute("SELECT source_kind, session_source, COUNT(*) FROM threads GROUP BY 1, 2 ORDER BY 1, 2")
    }
    skipped_by_reason = {
        r[0] or "unknown": r[1]
        for r in conn.execute("SELECT reason, COUNT(*) FROM ingest_files WHERE status='skipped' GROUP BY 1")
    }
    return IndexCounts(
        threads=one("SELECT COUNT(*) FROM threads"),
        by_source=by_source,
        archived=one("SELECT COUNT(*) FROM threads WHERE archived=1"),
        files=one("SELECT COUNT(*) FROM ingest_files"),
        skipped_files=one("SELECT COUNT(*) FROM ingest_files WHERE status='skipped'"),
        skipped_by_reason=skipped_by_reason,
        skipped_lines=one("SELECT COALESCE(SUM(skipped_lines),0) FROM ingest_files"),
    )


def forget_words(conn: sqlite3.Connection, thread_id: str) -> int:
    """A forgotten rollout keeps its row (ids, counts) without its first words and title."""
    return conn.execute("UPDATE threads SET preview='', title=NULL WHERE id=?", (thread_id,)).rowcount


@dataclass(frozen=True, slots=True)
class ThreadToIndex:
    id: str
    path: str
    source_kind: str
    cwd: str
    stamp: str  # bytes:updated_at:path, what the index records


def needing_message_index(conn: sqlite3.Connection) -> list[ThreadToIndex]:
    """Indexed, not forgotten rollouts whose messages are new or changed since they were indexed."""
    rows = conn.execute(
        "SELECT t.id, t.path, t.source_kind, COALESCE(t.cwd, '') AS cwd, t.bytes || ':' || t.updated_at || ':' || t.path"
        " AS stamp FROM threads t LEFT JOIN search_sources s ON s.key = 'thread:' || t.id"
        " WHERE t.ingest_status = 'indexed' AND (s.stamp IS NULL OR s.stamp != t.bytes || ':' || t.updated_at || ':'"
        " || t.path) AND NOT EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id)"
    ).fetchall()
    return [ThreadToIndex(r[0], r[1], r[2], r[3], r[4]) for r in rows]


@dataclass(frozen=True, slots=True)
class Located:
    """Where a thread's rollout is and what Phase 1 needs to read it."""

    id: str
    source_kind: str
    path: str
    cwd: str | None
    updated_at: int


def locate(conn: sqlite3.Connection, thread_id: str) -> Located | None:
    row = conn.execute(
        "SELECT id, source_kind, path, cwd, updated_at FROM threads WHERE id = ?", (thread_id,)
    ).fetchone()
    return None if row is None else Located(row[0], row[1], row[2], row[3], row[4])


def projects(conn: sqlite3.Connection) -> set[str]:
    """Every cwd an indexed thread ran in."""
    return {r[0] for r in conn.execute("SELECT DISTINCT cwd FROM threads WHERE cwd IS NOT NULL")}


def memory_enabled_among(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> set[str]:
    """Of ``thread_ids``, the indexed threads whose memory is on (nobody opted the session out)."""
    return _memory_mode_among(conn, thread_ids, "=")


def memory_disabled_among(conn: sqlite3.Connection, thread_ids: Sequence[str]) -> set[str]:
    """Of ``thread_ids``, the indexed threads a person turned memory off for."""
    return _memory_mode_among(conn, thread_ids, "!=")


def _memory_mode_among(conn: sqlite3.Connection, thread_ids: Sequence[str], op: str) -> set[str]:
    ids = orjson.dumps(sorted(set(thread_ids))).decode()
    sql = f"SELECT id FROM threads WHERE id IN (SELECT value FROM json_each(?)) AND memory_mode {op} 'enabled'"
    return {r[0] for r in conn.execute(sql, (ids,))}
