"""Full-text search over everything memtui knows: memory files, rollout summaries, raw memories, and the redacted
user and assistant messages of indexed rollouts.

The documents live in ``search_docs`` (state database); sqlite-utils' ``enable_fts`` builds an FTS5 index over them
with triggers, so every insert, update and delete of a document reaches the index in the same transaction. Stage-1
summaries and raw memories follow ``stage1_outputs`` through SQL triggers (schema migration, issue 14); memory files
and messages are brought up to date by ``refresh`` (incremental: a file or rollout whose stamp is unchanged is not
read again). Only redacted text enters the database.

FTS5 keeps a deleted document's terms in its segments until they are merged, so a refresh that removed text which is
gone for good runs ``optimize`` (a full merge) and truncates the WAL: deleted means gone, in the index too
(``secure_delete`` zeroes the freed pages).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import orjson
import sqlite_utils
from pydantic import BaseModel

from memtui.memroot.approved import approved
from memtui.memroot.files import DIFF_FILENAME, RAW_MEMORIES, ROLLOUT_SUMMARIES
from memtui.redact import redact_text
from memtui.scope import parse_memory
from memtui.state.db import immediate

DOCS = "search_docs"
FTS = "search_docs_fts"
PURGE_KEY = "search.purge"
TOKENIZE = "porter"
GLOBAL_SCOPE = "memtuiglobal"  # the scope column's token for text tied to no project
MAX_CHUNK_LINES = 40
MAX_MESSAGE_CHARS = 64_000
THREAD_BATCH = 200
DEFAULT_LIMIT = 20
MAX_CANDIDATES = 4_000  # candidates per query, and the document count above which a word is 'very common'; see search()
SNIPPET_CHARS = 200

Kind = Literal["memory", "summary", "raw_memory", "message"]


class SearchHit(BaseModel):
    """One ranked hit: a memory file and line, or a thread and its item / summary line."""

    kind: Kind
    source: str  # memory: path in the memory root; else the thread id
    line: int | None = None  # memory, summary, raw_memory: 1-based line of the first matching line
    item: int | None = None  # message: item N of memory_items (1-based)
    role: str | None = None
    project: str = ""
    score: float  # bm25: lower is better
    snippet: str

    @property
    def location(self) -> str:
        if self.kind == "memory":
            return f"{self.source}:{self.line}"
        if self.kind == "message":
            return f"thread {self.source} item {self.item} ({self.role})"
        what = "rollout summary" if self.kind == "summary" else "raw memory"
        return f"thread {self.source} {what} line {self.line}"


class RefreshStats(BaseModel):
    files_indexed: int = 0
    files_removed: int = 0
    threads_indexed: int = 0
    threads_removed: int = 0
    docs_added: int = 0
    docs_removed: int = 0
    purged: bool = False

    def message(self) -> str:
        return (
            f"search index: {self.files_indexed} memory file(s) and {self.threads_indexed} rollout(s) indexed, "
            f"{self.docs_added} document(s) added, {self.docs_removed} removed"
            + (" (deleted text purged from the index)" if self.purged else "")
        )


# --- the index ---------------------------------------------------------------------------------------------------


def _db(conn: sqlite3.Connection) -> sqlite_utils.Database:
    # recursive_triggers would change how REPLACE fires delete triggers on memtui's own tables: leave it off.
    return sqlite_utils.Database(conn, recursive_triggers=False)


def index_exists(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type='trigger' AND name IN (?, ?, ?)",
        (f"{DOCS}_ai", f"{DOCS}_ad", f"{DOCS}_au"),
    ).fetchone()
    return row[0] == 3


def ensure_index(conn: sqlite3.Connection) -> bool:
    """Create the FTS5 index (sqlite-utils ``enable_fts`` with triggers) when it is missing; True if created.

    Call outside a transaction (``enable_fts`` runs scripts). Two processes may race here: the loser's CREATE fails
    and is ignored; the winner rebuilds from the documents once its triggers exist, so nothing inserted in between
    is missed."""
    if index_exists(conn):
        return False
    table = _db(conn)[DOCS]
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


def purge_deleted(conn: sqlite3.Connection, *, force: bool = False) -> bool:
    """Merge the FTS segments so no deleted document's terms remain, then truncate the WAL; only when a delete
    asked for it (``meta`` flag set by triggers and refreshes) or ``force``. Returns whether it ran."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (PURGE_KEY,)).fetchone()
    if not force and not (row and row[0] == "1"):
        return False
    with immediate(conn):
        if index_exists(conn):
            conn.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('optimize')")
        conn.execute("DELETE FROM meta WHERE key=?", (PURGE_KEY,))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # old page images in the WAL go too (best effort)
    except sqlite3.OperationalError:
        pass
    return True


def _flag_purge(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (PURGE_KEY,))


def _replace_docs(
    conn: sqlite3.Connection, source: str, kinds: tuple[str, ...], docs: list[tuple[Any, ...]], stats: RefreshStats
) -> None:
    """Swap one source's documents; flag a purge when text that was indexed is no longer there."""
    marks = ",".join("?" * len(kinds))
    old = conn.execute(
        f"SELECT kind, loc, role, project, text FROM {DOCS} WHERE source=? AND kind IN ({marks})", (source, *kinds)
    ).fetchall()
    new = {(d[0], d[2], d[3], d[4], d[5]) for d in docs}
    if {tuple(r) for r in old} == new:
        return
    kept_texts = {d[5] for d in docs}
    if any(r["text"] not in kept_texts for r in old):
        _flag_purge(conn)  # some indexed text is gone for good: its terms must leave the FTS segments too
    conn.execute(f"DELETE FROM {DOCS} WHERE source=? AND kind IN ({marks})", (source, *kinds))
    conn.executemany(f"INSERT INTO {DOCS} (kind, source, loc, role, project, text) VALUES (?,?,?,?,?,?)", docs)
    stats.docs_removed += len(old)
    stats.docs_added += len(docs)


# --- memory files ------------------------------------------------------------------------------------------------


def indexed_memory_file(rel: str) -> bool:
    """The memory root's Markdown files a person or agent reads: MEMORY.md, memory_summary.md, skills/... The
    synced inputs (rollout_summaries/, raw_memories.md) are indexed from the database, the diff file not at all."""
    parts = rel.split("/")
    if not rel.endswith(".md") or any(p.startswith(".") for p in parts):
        return False
    return not (parts[0] == ROLLOUT_SUMMARIES or (len(parts) == 1 and rel in (DIFF_FILENAME, RAW_MEMORIES)))


def chunk_lines(text: str) -> list[tuple[int, str]]:
    """(first line, text) chunks: a heading or a blank line starts a new chunk, at most MAX_CHUNK_LINES each."""
    chunks: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), 1):
        heading = line.startswith("#")
        if buf and (not line.strip() or heading or len(buf) >= MAX_CHUNK_LINES):
            chunks.append((start, "\n".join(buf)))
            buf = []
        if line.strip():
            if not buf:
                start = number
            buf.append(line)
    if buf:
        chunks.append((start, "\n".join(buf)))
    return chunks


def _file_docs(rel: str, text: str) -> list[tuple[Any, ...]]:
    projects: dict[int, str] = {}
    if rel == "MEMORY.md":
        for g in parse_memory(text):
            for n in range(g.line_start, g.line_end + 1):
                projects[n] = g.cwd or ""
    return [("memory", rel, start, None, projects.get(start, ""), chunk) for start, chunk in chunk_lines(text)]


def refresh_memory_files(conn: sqlite3.Connection, root: Path, stats: RefreshStats | None = None) -> RefreshStats:
    stats = stats or RefreshStats()
    known = {r[0][5:]: r[1] for r in conn.execute("SELECT key, stamp FROM search_sources WHERE key LIKE 'file:%'")}
    seen: set[str] = set()
    changed: list[tuple[str, str, str]] = []
    memory = approved(root)  # agents search what a person approved, never a run awaiting review
    for rel, blob in sorted(memory.files.items()):
        if not indexed_memory_file(rel):
            continue
        seen.add(rel)
        if known.get(rel) == blob:
            continue
        data = memory.read_bytes(rel)
        if data is None:
            continue
        changed.append((rel, blob, redact_text(data.decode("utf-8", errors="replace"))))
    gone = [rel for rel in known if rel not in seen]
    if not changed and not gone:
        return stats
    with immediate(conn):
        for rel, stamp, text in changed:
            _replace_docs(conn, rel, ("memory",), _file_docs(rel, text), stats)
            conn.execute("INSERT OR REPLACE INTO search_sources (key, stamp) VALUES (?, ?)", (f"file:{rel}", stamp))
            stats.files_indexed += 1
        for rel in gone:
            _replace_docs(conn, rel, ("memory",), [], stats)
            conn.execute("DELETE FROM search_sources WHERE key=?", (f"file:{rel}",))
            stats.files_removed += 1
    return stats


# --- rollout messages --------------------------------------------------------------------------------------------


def _message_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def message_docs(thread_id: str, cwd: str, items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """One document per user or assistant message, numbered as ``memory_items`` numbers items (1-based)."""
    docs = []
    for n, item in enumerate(items, 1):
        role = item.get("role")
        if item.get("type") != "message" or role not in ("user", "assistant"):
            continue
        text = _message_text(item).strip()
        if text:
            docs.append(("message", thread_id, n, role, cwd, redact_text(text[:MAX_MESSAGE_CHARS])))
    return docs


def refresh_messages(
    conn: sqlite3.Connection,
    stats: RefreshStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshStats:
    """Index the messages of rollouts that are new or changed since the last refresh; drop those of rollouts no
    longer indexed."""
    from memtui.rollouts import jsonl
    from memtui.rollouts.filter import memory_items

    stats = stats or RefreshStats()
    rows = conn.execute(
        "SELECT t.id, t.path, t.source_kind, COALESCE(t.cwd, '') AS cwd, t.bytes || ':' || t.updated_at || ':' || t.path"
        " AS stamp, s.stamp AS indexed FROM threads t LEFT JOIN search_sources s ON s.key = 'thread:' || t.id"
        " WHERE t.ingest_status = 'indexed' AND (s.stamp IS NULL OR s.stamp != t.bytes || ':' || t.updated_at || ':'"
        " || t.path) AND NOT EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id)"  # issue 11
    ).fetchall()
    stale = [
        r[0]
        for r in conn.execute(
            # joined on the thread's primary key: matching ``'thread:' || t.id`` would compare every pair of rows
            "SELECT substr(s.key, 8) FROM search_sources s LEFT JOIN threads t ON t.id = substr(s.key, 8)"
            " WHERE s.key LIKE 'thread:%' AND (t.id IS NULL OR t.ingest_status != 'indexed'"
            " OR EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id))"  # issue 11: forgotten
        )
    ]
    for start in range(0, len(rows), THREAD_BATCH):
        parsed = []
        for row in rows[start : start + THREAD_BATCH]:
            try:
                items = memory_items(Path(row["path"]), row["source_kind"])
            except (jsonl.UnreadableFile, OSError, ValueError):
                continue  # gone or unreadable: ingest reports it; try again when it changes
            parsed.append((row, message_docs(row["id"], row["cwd"], items)))
        with immediate(conn):
            for row, docs in parsed:
                _replace_docs(conn, row["id"], ("message",), docs, stats)
                conn.execute(
                    "INSERT OR REPLACE INTO search_sources (key, stamp) VALUES (?, ?)",
                    (f"thread:{row['id']}", row["stamp"]),
                )
                stats.threads_indexed += 1
        if progress is not None:
            progress(min(start + THREAD_BATCH, len(rows)), len(rows))
    if stale:
        with immediate(conn):
            for tid in stale:
                _replace_docs(conn, tid, ("message",), [], stats)
                conn.execute("DELETE FROM search_sources WHERE key=?", (f"thread:{tid}",))
                stats.threads_removed += 1
    return stats


def refresh(
    conn: sqlite3.Connection,
    memory_root: Path,
    *,
    messages: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshStats:
    """Bring the index up to date (memory files, and rollout messages unless ``messages=False``), then purge what
    was deleted."""
    ensure_index(conn)
    stats = refresh_memory_files(conn, memory_root)
    if messages:
        refresh_messages(conn, stats, progress)
    stats.purged = purge_deleted(conn)
    return stats


# --- queries -----------------------------------------------------------------------------------------------------

_TERM = re.compile(r"[^\W_]+", re.UNICODE)  # what FTS5's unicode61 tokenizer keeps as a token


def fts_query(query: str) -> str:
    """The person's words as an FTS5 query on the text column: every word must match, stemmed (quoted, so AND, OR,
    NEAR and * are plain words; prefix queries were measured 10x slower on common words)."""
    words = _TERM.findall(query)
    if not words:
        return ""
    terms = " ".join(f'"{w}"' for w in words)
    return f"text : ({terms})"


def scope_query(project: Path) -> str:
    """FTS5 phrase for 'inside this project, or tied to none': the project's path tokens at the start of the
    scope column (so /work/shop matches /work/shop/api but not /x/work/shop), or the global token."""
    tokens = " ".join(_TERM.findall(str(project).lower()))
    return f'scope : (^"{tokens}" OR "{GLOBAL_SCOPE}")' if tokens else f'scope : "{GLOBAL_SCOPE}"'


def _first_matching_line(text: str, query: str) -> int:
    """1-based line of ``text`` that holds the most query words (prefix match, so stems count); 1 if none."""
    words = [w.lower()[:5] for w in _TERM.findall(query)]
    best, best_n = 1, 0
    for n, line in enumerate(text.splitlines(), 1):
        low = line.lower()
        hits = sum(1 for w in words if w in low)
        if hits > best_n:
            best, best_n = n, hits
    return best


def _capped_df(conn: sqlite3.Connection, word: str) -> int:
    """How many documents hold ``word``, counted up to MAX_CANDIDATES (a bounded doclist walk, no bm25)."""
    row = conn.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM {FTS} WHERE {FTS} MATCH ? LIMIT {MAX_CANDIDATES})", (fts_query(word),)
    ).fetchone()
    return int(row[0])


def _snippet(text: str, line: int, width: int = SNIPPET_CHARS) -> str:
    lines = text.splitlines()
    one = " ".join(lines[line - 1].split()) if 0 < line <= len(lines) else ""
    return one if len(one) <= width else one[: width - 1] + "…"


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    project: Path | None = None,
    limit: int = DEFAULT_LIMIT,
    kinds: Iterable[str] | None = None,
) -> list[SearchHit]:
    """Hits ranked by bm25. ``project`` keeps documents of that project (its cwd or below) and those tied to none
    (memory_summary.md, user-level groups). Call ``refresh`` (or ``search_memory``) first for fresh memory files.

    FTS5's bm25 counts, for every phrase of the MATCH, all the documents holding it: a scan of the whole doclist of a
    word found nearly everywhere (50 ms per such word at 400k documents), and of the scope phrase. So the match is
    done in two steps. First the candidates: every word and the scope, unranked, newest first, at most
    MAX_CANDIDATES (cheap: FTS5 streams rowids). Then bm25 over the candidates for the query's words found in fewer
    than MAX_CANDIDATES documents; a word that common carries almost no weight in bm25 anyway. Consequences: a query
    with such a rarer word is ranked over all its matches (they are fewer than MAX_CANDIDATES); a query made only of
    very common words is ordered newest first among its newest MAX_CANDIDATES matches.
    """
    words = _TERM.findall(query)
    if not words:
        return []
    if not index_exists(conn):
        if conn.in_transaction:
            return []
        ensure_index(conn)
    match = fts_query(query)
    exact, exact_args = "", []
    if project is not None:
        p = str(project.expanduser().resolve()).rstrip("/")
        match = f"({match}) AND {scope_query(Path(p))}"
        # the phrase also takes /work/shop-api for /work/shop/api and /work/shopping for /work/shop (same tokens once
        # split and stemmed): the exact check keeps them out
        esc = p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        exact = " AND (project = '' OR project = ? OR project LIKE ? ESCAPE '\\')"
        exact_args = [p, esc + "/%"]
    if kinds is not None:
        kinds = list(kinds)
        exact += f" AND kind IN ({','.join('?' * len(kinds))})"
        exact_args += kinds
    ids = [
        r[0]
        for r in conn.execute(
            f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH ? ORDER BY rowid DESC LIMIT {MAX_CANDIDATES}", (match,)
        )
    ]
    if not ids:
        return []
    if exact:
        keep = {
            r[0]
            for r in conn.execute(
                f"SELECT id FROM {DOCS} WHERE id IN (SELECT value FROM json_each(?)){exact}",
                (orjson.dumps(ids).decode(), *exact_args),
            )
        }
        ids = [i for i in ids if i in keep]
    rare = [w for w in dict.fromkeys(words) if _capped_df(conn, w) < MAX_CANDIDATES]
    scores: dict[int, float] = {}
    if rare and ids:
        # every match of the rarer words (fewer than MAX_CANDIDATES by their definition); the candidates are among them
        scores = dict(
            conn.execute(
                f"SELECT rowid, bm25({FTS}, 1.0, 0.0) FROM {FTS} WHERE {FTS} MATCH ?", (fts_query(" ".join(rare)),)
            ).fetchall()
        )
    top = sorted(ids, key=lambda i: (scores.get(i, 0.0), -i))[:limit]
    by_id = {
        r["id"]: r
        for r in conn.execute(
            f"SELECT id, kind, source, loc, role, project, text FROM {DOCS} WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(top).decode(),),
        )
    }
    rows = [{**dict(by_id[i]), "score": scores.get(i, 0.0)} for i in top if i in by_id]
    hits = []
    for r in rows:
        kind, loc, text = r["kind"], r["loc"], r["text"]
        best = _first_matching_line(text, query)
        line = item = None
        if kind == "message":
            item = loc
        else:
            line = best + (loc - 1 if kind == "memory" else 0)
        hits.append(
            SearchHit(
                kind=kind,
                source=r["source"],
                line=line,
                item=item,
                role=r["role"],
                project=r["project"],
                score=round(float(r["score"]), 4),
                snippet=_snippet(text, best),
            )
        )
    return hits


def refresh_memory_index(conn: sqlite3.Connection, memory_root: Path) -> RefreshStats:
    """After the memory root changed (Phase 2, approve, reject, an edit): index the changed files and purge what
    they no longer hold, so deleted text does not live on in the index."""
    ensure_index(conn)
    stats = refresh_memory_files(conn, memory_root)
    stats.purged = purge_deleted(conn)
    return stats


def try_refresh_memory_index(conn: sqlite3.Connection, memory_root: Path) -> str | None:
    """``refresh_memory_index`` after a command's own work: a failure here (disk full, a locked database) must not
    turn that command's outcome into an error. Returns the problem, if any; the next search retries."""
    try:
        refresh_memory_index(conn, memory_root)
    except (sqlite3.Error, OSError) as exc:
        return f"the search index was not updated ({exc}); the next search retries"
    return None


def search_memory(conn: sqlite3.Connection, memory_root: Path, query: str, **kwargs: Any) -> list[SearchHit]:
    """What the CLI, the TUI and the MCP server call: refresh the memory files (cheap when unchanged), then search."""
    refresh_memory_index(conn, memory_root)
    return search(conn, query, **kwargs)
