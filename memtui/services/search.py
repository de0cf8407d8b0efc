"""Full-text search over the approved memory and the person's past sessions.

Memory hits come only from the agent-facing view (``services.agent_view``): the approved baseline's files with trust,
hidden-character and scope rules applied, so no stage-1 output, run awaiting review or working-tree file is ever a
hit. Message hits are session history (labelled so, never "memory"): the redacted user and assistant messages of
indexed sessions, without hidden characters, never of a session a person opted out of or forgot, and in a scoped
search only of the project's sessions. (Stage-1 outputs are kept in the index for the review's evidence; searches
leave them out.)

The documents live in ``search_docs`` (state database); sqlite-utils' ``enable_fts`` builds an FTS5 index over them
with triggers, so every insert, update and delete of a document reaches the index in the same transaction. Stage-1
summaries and raw memories follow ``stage1_outputs`` through SQL triggers (a schema migration); memory files
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
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts.model import Transcript
from memtui.core.hidden import strip_hidden
from memtui.domain.scope import parse_memory
from memtui.domain.trust import markers
from memtui.services.agent_view import AgentView, readable
from memtui.state import search_index, threads
from memtui.state.db import immediate
from memtui.state.search_index import ensure_index, index_exists

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

    kind: Kind  # "memory": the approved memory; "message": session history (what was said, not memory)
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
            return f"session history: thread {self.source} item {self.item} ({self.role})"
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


def purge_deleted(conn: sqlite3.Connection, *, force: bool = False) -> bool:
    """Merge the FTS segments so no deleted document's terms remain, then truncate the WAL; only when a delete
    asked for it (``meta`` flag set by triggers and refreshes) or ``force``. Returns whether it ran."""
    if not force and not search_index.purge_asked(conn):
        return False
    with immediate(conn):
        search_index.merge_segments(conn)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # old page images in the WAL go too (best effort)
    except sqlite3.OperationalError:
        pass
    return True


def _replace_docs(
    conn: sqlite3.Connection, source: str, kinds: tuple[str, ...], docs: list[tuple[Any, ...]], stats: RefreshStats
) -> None:
    """Swap one source's documents; a purge is asked for when text that was indexed is no longer there."""
    removed, added = search_index.replace_docs(conn, source, kinds, docs)
    stats.docs_removed += removed
    stats.docs_added += added


# --- memory files ------------------------------------------------------------------------------------------------


def indexed_memory_file(rel: str) -> bool:
    """The files of the approved memory agents read (``agent_view.readable``): only those are memory hits."""
    return readable(rel)


# The rules a memory document was built by, with its blob: a file indexed by an earlier memtui is indexed again.
VIEW_STAMP = "view1"
SEARCHED_KINDS = ("memory", "message")  # what a search returns: the approved memory and session history


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
    known = search_index.file_stamps(conn)
    seen: set[str] = set()
    changed: list[tuple[str, str, str]] = []
    view = AgentView(root, conn=conn)  # what agents read: the approved baseline, trust and hidden text applied
    for rel in view.names():
        blob = f"{view.snapshot.files[rel]}:{VIEW_STAMP}"
        seen.add(rel)
        if known.get(rel) == blob:
            continue
        changed.append((rel, blob, redact_text(view.text(rel))))
    gone = [rel for rel in known if rel not in seen]
    if not changed and not gone:
        return stats
    with immediate(conn):
        for rel, stamp, text in changed:
            _replace_docs(conn, rel, ("memory",), _file_docs(rel, text), stats)
            search_index.set_stamp(conn, f"file:{rel}", stamp)
            stats.files_indexed += 1
        for rel in gone:
            _replace_docs(conn, rel, ("memory",), [], stats)
            search_index.drop_stamp(conn, f"file:{rel}")
            stats.files_removed += 1
    return stats


# --- rollout messages --------------------------------------------------------------------------------------------


def message_docs(thread_id: str, cwd: str, items: Transcript) -> list[tuple[Any, ...]]:
    """One document per user or assistant message, numbered as the transcript numbers items (1-based)."""
    docs = []
    for item in items:
        if item.type != "message" or item.role not in ("user", "assistant"):
            continue
        text = item.text.strip()
        if text:
            docs.append(("message", thread_id, item.number, item.role, cwd, redact_text(text[:MAX_MESSAGE_CHARS])))
    return docs


def refresh_messages(
    conn: sqlite3.Connection,
    stats: RefreshStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshStats:
    """Index the messages of rollouts that are new or changed since the last refresh; drop those of rollouts no
    longer indexed."""
    from memtui.adapters.rollouts import jsonl
    from memtui.adapters.sources import read_transcript

    stats = stats or RefreshStats()
    rows = threads.needing_message_index(conn)
    stale = search_index.stale_threads(conn)
    for start in range(0, len(rows), THREAD_BATCH):
        parsed = []
        for row in rows[start : start + THREAD_BATCH]:
            try:
                items = read_transcript(Path(row.path), row.source_kind)
            except (jsonl.UnreadableFile, OSError, ValueError):
                continue  # gone or unreadable: ingest reports it; try again when it changes
            parsed.append((row, message_docs(row.id, row.cwd, items)))
        with immediate(conn):
            for row, docs in parsed:
                _replace_docs(conn, row.id, ("message",), docs, stats)
                search_index.set_stamp(conn, f"thread:{row.id}", row.stamp)
                stats.threads_indexed += 1
        if progress is not None:
            progress(min(start + THREAD_BATCH, len(rows)), len(rows))
    if stale:
        with immediate(conn):
            for tid in stale:
                _replace_docs(conn, tid, ("message",), [], stats)
                search_index.drop_stamp(conn, f"thread:{tid}")
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
    return search_index.capped_count(conn, fts_query(word), MAX_CANDIDATES)


def _snippet(text: str, line: int, width: int = SNIPPET_CHARS) -> str:
    """The line, folded to ``width`` characters without hidden characters; a trust marker at its end is kept
    whole (a cut body, then the marker), so a flagged line never reads as an unflagged one."""
    lines = text.splitlines()
    one = " ".join(strip_hidden(lines[line - 1]).text.split()) if 0 < line <= len(lines) else ""
    if len(one) <= width:
        return one
    body = markers.strip(one)
    if body != one and one.startswith(body):
        tail = one[len(body) :].strip()
        return body[: max(0, width - len(tail) - 2)].rstrip() + "… " + tail
    return one[: width - 1] + "…"


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    project: Path | None = None,
    limit: int = DEFAULT_LIMIT,
    kinds: Iterable[str] | None = None,
) -> list[SearchHit]:
    """Hits of the approved memory first, then the others, each ranked by bm25. ``project`` keeps documents of that project (its cwd or below) and those tied to none
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
    in_project = None
    if project is not None:
        in_project = str(project.expanduser().resolve()).rstrip("/")
        match = f"({match}) AND {scope_query(Path(in_project))}"
        # the phrase also takes /work/shop-api for /work/shop/api and /work/shopping for /work/shop (same tokens once
        # split and stemmed): the exact check keeps them out
    kinds = list(kinds) if kinds is not None else None
    ids = search_index.newest_matches(conn, match, MAX_CANDIDATES)
    if not ids:
        return []
    if in_project is not None or kinds is not None:
        keep = search_index.keep_matching(conn, ids, in_project, kinds)
        ids = [i for i in ids if i in keep]
    rare = [w for w in dict.fromkeys(words) if _capped_df(conn, w) < MAX_CANDIDATES]
    scores: dict[int, float] = {}
    if rare and ids:
        # every match of the rarer words (fewer than MAX_CANDIDATES by their definition); the candidates are among them
        scores = search_index.bm25(conn, fts_query(" ".join(rare)))
    # the approved memory first: a line of MEMORY.md that holds the query is what the person searches for, and a
    # long message that repeats the words would outscore it in bm25 (which rewards repeats, and compares documents
    # of any length); within each part, bm25
    memory = search_index.keep_matching(conn, ids, None, ["memory"]) if kinds is None or "memory" in kinds else set()
    top = sorted(ids, key=lambda i: (i not in memory, scores.get(i, 0.0), -i))[:limit]
    by_id = search_index.docs(conn, top)
    rows = [{**asdict(by_id[i]), "score": scores.get(i, 0.0)} for i in top if i in by_id]
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


def search_memory(
    conn: sqlite3.Connection,
    memory_root: Path,
    query: str,
    *,
    view: AgentView | None = None,
    limit: int = DEFAULT_LIMIT,
    **kwargs: Any,
) -> list[SearchHit]:
    """What the CLI, the TUI and the MCP server call: refresh the memory files (cheap when unchanged), then search
    the approved memory and session history under the agent-facing rules (``view``: a scoped reader's; its other
    projects' lines and sessions are never hits)."""
    refresh_memory_index(conn, memory_root)
    view = view or AgentView(memory_root, conn=conn)
    hits = search(conn, query, kinds=SEARCHED_KINDS, limit=limit * 4, **kwargs)
    unserved = search_index.unserved_threads(conn, [h.source for h in hits if h.kind == "message"])
    out = []
    for h in hits:
        if h.kind == "message":
            if h.source in unserved or (view.scope is not None and not view.scope.keeps_project(h.project)):
                continue
        elif h.line is None or not view.visible_line(h.source, h.line):
            continue
        out.append(h)
    return out[:limit]
