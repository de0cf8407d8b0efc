"""Memory health: every approved memory block with its signals and their evidence.

- **cited**: sessions whose agent cited the block: a ``MEMORY.md`` range over its line whose text is still what was
  cited, or a citation naming a session the block came from (its ``[Task n]`` evidence). Counted once per session.
- **restated / contradicted / corrected**: sentences of the user, in interactive sessions that started after the
  block entered the approved memory and run in its project (or anywhere, for a user-level block), that
  ``health.rules`` relates to it. Each links to its transcript item; counted once per session.
- **stale**: neither cited nor restated for ``max_unused_days`` since it entered the memory (or was last verified),
  or it names a path that no longer exists in its project's working tree (checked when the project is on this
  machine).
- **last verified**: only a person's explicit confirmation renews it.

The first computation checks each block against its candidate messages from the FTS index (``search.py``: user
messages holding two of its words); after that only messages indexed since the last computation are read, against
every block, so one new session costs a few small queries however many threads there are.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from memtui.adapters.memroot.files import MEMORY_MD
from memtui.adapters.rollouts.user_words import user_words
from memtui.core import clock
from memtui.domain.health import Relation
from memtui.services import history, search
from memtui.services.citations.check import hash_lines
from memtui.services.health.blocks import Block, parse_blocks
from memtui.services.health.rules import Clause, candidate_terms, relate_message, terms
from memtui.services.phase2.prompt_inputs import normalize_memory_line
from memtui.state import citations as citation_store
from memtui.state import health as store
from memtui.state import search_index
from memtui.state.health import FindingRow, Proposal

METHOD = "offline rules"  # plus ", refined by MODEL" once a model looked at the findings (services/health/refine.py)
_PATHLIKE = re.compile(r"`([^`\s]+)`")
# a bare name with a file extension (CHANGELOG.md, src/app.ts) or a folder (vendor/, ./scripts)
_BARE_PATH = re.compile(r"(?<![\w/.:@-])((?:\./)?[\w.-]+(?:/[\w.-]+)*(?:\.[A-Za-z]\w{1,7}|/))(?![\w/])")
_FILE = re.compile(r"^(?:\./)?[\w.@-]+(?:/[\w.@-]+)*/?$")
_SEVERITY = {"contradicted": 4, "corrected": 3, "restated": 2, "stale": 1}


class Evidence(BaseModel):
    thread_id: str
    item: int
    at: int  # when the session started
    relation: str
    text: str = ""  # the user's sentence at that item, from the (redacted) search index
    project: str | None = None


class BlockHealth(BaseModel):
    id: str
    file: str
    line: int
    section: str
    project: str | None
    text: str
    since: int
    cited: int = 0  # sessions
    last_cited: int | None = None
    restated: list[Evidence] = []  # one per session
    contradicted: list[Evidence] = []
    corrected: list[Evidence] = []
    stale: bool = False
    stale_reason: str | None = None
    last_verified: int | None = None
    proposal: str | None = None

    @property
    def signals(self) -> list[str]:
        out = [name for name in ("contradicted", "corrected", "restated") if getattr(self, name)]
        if self.stale:
            out.append("stale")
        if self.cited:
            out.append("cited")
        return out

    @property
    def severity(self) -> int:
        return max((_SEVERITY.get(s, 0) for s in self.signals), default=0)

    def sort_key(self) -> tuple[int, int, int, str, int]:
        sessions = len(self.contradicted) + len(self.corrected) + len(self.restated)
        return (-self.severity, -sessions, self.cited, self.file, self.line)


class HealthReport(BaseModel):
    method: str = METHOD
    computed_at: int
    blocks: list[BlockHealth]
    scanned_blocks: int = 0  # checked against the whole index this time (new blocks)
    scanned_messages: int = 0  # messages read incrementally this time

    @property
    def contradicted(self) -> int:
        return sum(1 for b in self.blocks if b.contradicted)


# --- when a block entered the memory -------------------------------------------------------------------------------


def _since(conn: sqlite3.Connection, new: list[Block]) -> dict[str, int]:
    """For blocks seen for the first time: the time of the oldest approved version, in the unbroken run of kept
    versions up to now, that already held the line; without kept versions, the latest decision (else now)."""
    if not new:
        return {}
    decisions = {d.id: d.at for d in history.list_decisions(conn)}
    latest = max(decisions.values(), default=clock.now_s())
    wanted = {normalize_memory_line(b.text): b.id for b in new}
    since = dict.fromkeys(wanted.values(), latest)
    open_keys = set(wanted)
    for decision_id, files in sorted(history.snapshots(conn), key=lambda s: -s[0]):
        present = {normalize_memory_line(x) for x in files.get(MEMORY_MD, "").splitlines()}
        for key in list(open_keys):
            if key in present:
                since[wanted[key]] = decisions.get(decision_id, latest)
            else:
                open_keys.discard(key)
        if not open_keys:
            break
    return since


# --- scanning the user's words --------------------------------------------------------------------------------------


def _in_project(cwd: str | None, project: str | None) -> bool:
    if project is None:
        return True
    if not cwd:
        return False
    p = project.rstrip("/")
    return cwd == p or cwd.startswith(p + "/")


def _fts_phrase(term: str) -> str | None:
    words = search._TERM.findall(term)
    return '"' + " ".join(words) + '"' if words else None


def _candidate_match(block: Block) -> str | None:
    """FTS5 query for the user messages that can relate to the block: two of its words (one when it has only one
    or two), or one of its values ("npm" alone can contradict "never npm")."""
    phrases = [p for t in candidate_terms(block.clauses) if (p := _fts_phrase(t))]
    phrases = list(dict.fromkeys(phrases))
    if not phrases:
        return None
    ors = phrases if len(phrases) <= 2 else [f"({a} AND {b})" for a, b in combinations(phrases, 2)]
    return f"text : ({' OR '.join(ors)})"


def _relate(block: Block, rows: Iterable[tuple[Any, ...]], since: int) -> list[FindingRow]:
    out = []
    for _doc, thread_id, item, text, cwd, started in rows:
        if started is None or started <= since or not _in_project(cwd, block.project):
            continue
        words = user_words(text)
        if not words:
            continue
        for relation, _sentence in relate_message(block.clauses, words):
            out.append(FindingRow(block.id, thread_id, int(item), relation, int(started)))
    return out


def _scan_block(conn: sqlite3.Connection, block: Block, since: int) -> list[FindingRow]:
    match = _candidate_match(block)
    if match is None:
        return []
    return _relate(block, search_index.user_messages_matching(conn, match, since), since)


def _scan_new_messages(
    conn: sqlite3.Connection, blocks: list[Block], since: dict[str, int], after: int
) -> tuple[list[FindingRow], int]:
    rows = search_index.user_messages_after(conn, after)
    out: list[FindingRow] = []
    vocab = [(b, {t for c in b.clauses for t in c.terms}) for b in blocks]
    for row in rows:
        words = set(terms(row[3]))
        for block, known in vocab:
            if words & known:
                out += _relate(block, [row], since[block.id])
    return out, len(rows)


# --- citations ------------------------------------------------------------------------------------------------------


def _citations(conn: sqlite3.Connection, blocks: list[Block], text: str) -> dict[str, tuple[int, int | None]]:
    """block id -> (sessions that cited it, when last)."""
    lines = text.splitlines()
    by_line = {b.line: b for b in blocks}
    by_thread: dict[str, list[Block]] = {}
    for b in blocks:
        for t in b.threads:
            by_thread.setdefault(t, []).append(b)
    sessions: dict[str, set[str]] = {}
    last: dict[str, int] = {}

    def hit(b: Block, session: str, at: int) -> None:
        sessions.setdefault(b.id, set()).add(session)
        last[b.id] = max(last.get(b.id, 0), at)

    events = [(e.key, e.thread_id, e.rollout_ids, e.recorded_at) for e in citation_store.all_events(conn)]
    entries = citation_store.all_entries(conn)
    for key, thread_id, rollout_ids, at in events:
        session = thread_id or key
        for path, start, end, digest in entries.get(key, []):
            if path.lstrip("./") != MEMORY_MD or not (1 <= start <= end <= len(lines)):
                continue
            if digest is not None and digest != hash_lines(lines[start - 1 : end]):
                continue  # the cited text is no longer there: it cited something else
            for n in range(start, end + 1):
                if (cited := by_line.get(n)) is not None:
                    hit(cited, session, int(at))
        for tid in orjson.loads(rollout_ids or "[]"):
            for b in by_thread.get(tid, []):
                hit(b, session, int(at))
    return {bid: (len(s), last.get(bid)) for bid, s in sessions.items()}


# --- stale ---------------------------------------------------------------------------------------------------------


def missing_paths(block: Block, project: Path | None) -> list[str]:
    """Files and folders the block names in backticks that are not in the project's working tree (only when the
    project is on this machine; a command or a word is never taken for a path)."""
    base = project or (Path(block.project) if block.project else None)
    if base is None or not base.is_dir():
        return []
    out = []
    bare = _BARE_PATH.findall(_PATHLIKE.sub(" ", block.statement))
    for token in dict.fromkeys([*_PATHLIKE.findall(block.text), *bare]):
        if "/" not in token and "." not in token.strip("."):
            continue
        if not _FILE.match(token) or token.startswith(("http", "127.", "localhost")) or "=" in token:
            continue
        if token[0].isdigit() or token.rstrip(".").count(".") > 2:
            continue  # a version or an address, not a path
        if not (base / token).exists():
            out.append(token)
    return out


# --- the report ----------------------------------------------------------------------------------------------------


def user_words_at(conn: sqlite3.Connection, thread_id: str, item: int) -> tuple[str, str | None]:
    """(the user's words at that transcript item, the session's cwd), from the redacted search index."""
    found = search_index.user_message(conn, thread_id, item)
    return (user_words(found[0]) or "", found[1]) if found else ("", None)


def evidence_of(conn: sqlite3.Connection, finding: FindingRow, parts: list[Clause]) -> Evidence:
    """A finding with the sentence that made it (the whole message when no single sentence does any more)."""
    words, cwd = user_words_at(conn, finding.thread_id, finding.item)
    said = next((s for r, s in relate_message(parts, words) if r == finding.relation), words)
    return Evidence(
        thread_id=finding.thread_id, item=finding.item, at=finding.at, relation=finding.relation, text=said, project=cwd
    )


def compute_health(
    conn: sqlite3.Connection,
    memory_root: Path,
    *,
    unused_days: int = 30,
    project: Path | None = None,
    refresh: bool = True,
) -> HealthReport:
    """Bring the stored signals up to date and report every approved block, worst first. ``project`` keeps the
    blocks that apply there (its group, or user-level) and is the working tree checked for missing paths."""
    search.ensure_index(conn)
    if refresh:  # the rollouts' messages only: memory files are read from the baseline, never indexed from here
        search.refresh_messages(conn)
        search.purge_deleted(conn)
    text = history.baseline_files(memory_root).get(MEMORY_MD, "")
    blocks = parse_blocks(text)
    known = store.blocks(conn)
    new = [b for b in blocks if b.id not in known]
    store.sync_blocks(conn, _since(conn, new), [b.id for b in blocks])
    rows = store.blocks(conn)
    since = {b.id: rows[b.id].since for b in blocks}
    after = store.watermark(conn)
    top = search_index.last_doc_id(conn)
    unscanned = [b for b in blocks if not rows[b.id].scanned]
    scanned_before = [b for b in blocks if rows[b.id].scanned]
    found: list[FindingRow] = []
    for b in unscanned:
        found += _scan_block(conn, b, since[b.id])
    incremental, read = _scan_new_messages(conn, scanned_before, since, after) if scanned_before else ([], 0)
    store.add_findings(conn, [*found, *incremental])
    store.mark_scanned(conn, [b.id for b in unscanned])
    store.set_watermark(conn, int(top))

    all_found = [f for f in store.findings(conn) if f.block_id in since]
    cites = _citations(conn, blocks, text)
    now = clock.now_s()
    report = []
    for b in blocks:
        if project is not None and not _in_project(str(project.expanduser().resolve()), b.project):
            continue
        row = rows[b.id]
        per: dict[Relation, dict[str, Evidence]] = {r: {} for r in Relation}
        for f in all_found:
            if f.block_id != b.id or f.refined == "none":
                continue  # a model that refined the finding found no relation
            if f.refined is not None and f.refined != f.relation.value:
                f = replace(f, relation=Relation(f.refined))
            if f.thread_id not in per[f.relation]:
                per[f.relation][f.thread_id] = evidence_of(conn, f, b.clauses)
        # a person's confirmation settles the contradictions they had seen
        settled = [t for t, e in per[Relation.CONTRADICTED].items() if row.verified_at and e.at <= row.verified_at]
        for t in settled:
            del per[Relation.CONTRADICTED][t]
        cited, last_cited = cites.get(b.id, (0, None))
        restated = list(per[Relation.RESTATED].values())
        active = max([row.since, row.verified_at or 0, last_cited or 0, *(e.at for e in restated)])
        gone = missing_paths(b, project)
        stale_reason = None
        if gone:
            stale_reason = f"names {', '.join(gone)}, not in {project or b.project}"
        elif unused_days and now - active > unused_days * 86_400:
            stale_reason = f"not cited or restated for {(now - active) // 86_400} days"
        report.append(
            BlockHealth(
                id=b.id,
                file=b.file,
                line=b.line,
                section=b.section,
                project=b.project,
                text=b.text,
                since=row.since,
                cited=cited,
                last_cited=last_cited,
                restated=restated,
                contradicted=list(per[Relation.CONTRADICTED].values()),
                corrected=list(per[Relation.CORRECTED].values()),
                stale=stale_reason is not None,
                stale_reason=stale_reason,
                last_verified=row.verified_at,
                proposal=row.proposal.value if row.proposal else None,
            )
        )
    report.sort(key=BlockHealth.sort_key)
    models = sorted({f.refined_by for f in all_found if f.refined_by})
    method = f"{METHOD}, refined by {', '.join(models)}" if models else METHOD
    return HealthReport(
        method=method, computed_at=now, blocks=report, scanned_blocks=len(unscanned), scanned_messages=read
    )


def block_by_id(report: HealthReport, prefix: str) -> BlockHealth:
    """The block whose id starts with ``prefix`` (unique)."""
    hits = [b for b in report.blocks if b.id.startswith(prefix)]
    if len(hits) != 1:
        raise KeyError(f"{'no' if not hits else 'more than one'} memory block with id {prefix!r}")
    return hits[0]


__all__ = ["BlockHealth", "Evidence", "HealthReport", "Proposal", "block_by_id", "compute_health"]
