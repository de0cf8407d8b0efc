"""Validate a citation against the memory agents read, and its rollout ids against the index.

Agents read the approved memory through the agent-facing view (``services.agent_view``), so a cited range is
checked there: a run awaiting review or a person's uncommitted edit in the working tree never decides whether an
agent's citation holds, and a path outside that view (another file, an absolute path, a ``..`` escape) is "not in
the approved memory agents read" without being read.

A citation is only worth counting and auditing when it points at real, non-blank lines. ``stale`` means the
lines changed since the citation was recorded: recording stores a sha256 of the cited text, and the check
compares it with the most recent recorded hash for the same path and range.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memtui.adapters.memroot.approved import published_dir
from memtui.domain.citation import CitationEntry, MemoryCitation, canonical_thread_id
from memtui.services.agent_view import AgentView, NotInView, OutOfScope, PathRefused
from memtui.state import citations as citation_store
from memtui.state import outputs, threads

EntryStatus = Literal["ok", "missing_file", "out_of_range", "blank_lines", "stale"]
IdStatus = Literal["ok", "unknown", "not_uuid"]


@dataclass
class EntryCheck:
    entry: CitationEntry
    status: EntryStatus
    detail: str = ""
    resolved: Path | None = None
    text_hash: str | None = None  # hash of the cited lines now; None when they cannot be read

    @property
    def valid(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, object]:
        return {**self.entry.model_dump(), "status": self.status, "detail": self.detail, "text_hash": self.text_hash}


@dataclass
class IdCheck:
    rollout_id: str
    status: IdStatus
    thread_id: str | None = None  # canonical form
    has_memory: bool = False  # a stage-1 row exists, so citing it counts as usage

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.rollout_id,
            "status": self.status,
            "thread_id": self.thread_id,
            "has_memory": self.has_memory,
        }


@dataclass
class CheckReport:
    entries: list[EntryCheck] = field(default_factory=list)
    ids: list[IdCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.valid for e in self.entries)

    @property
    def invalid_entries(self) -> list[EntryCheck]:
        return [e for e in self.entries if not e.valid]

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "entries": [e.to_json() for e in self.entries],
            "rollout_ids": [i.to_json() for i in self.ids],
        }


def entry_rel(memory_root: Path, path: str) -> str | None:
    """The memory-root-relative path a citation names, or None when it names no file of the memory. An absolute
    path counts only inside the memory root or its published copy (the folder agents are given); the test is on the
    path's text (``..`` folded, no link followed), so nothing outside is ever read or even looked at."""
    p = Path(os.path.normpath(path))
    if not p.is_absolute():
        return p.as_posix()
    for base in (published_dir(memory_root), memory_root):
        for b in dict.fromkeys((Path(os.path.normpath(base)), Path(os.path.normpath(base.expanduser().absolute())))):
            if p.is_relative_to(b):
                return p.relative_to(b).as_posix()
    return None


def read_lines(text: str) -> list[str]:
    """Lines as an agent numbers them (``\\n``-separated, CR dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def hash_lines(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8", errors="surrogatepass")).hexdigest()


def _view_lines(view: AgentView, entry: CitationEntry) -> tuple[str | None, list[str] | None, str]:
    """(path shown, the file's lines as agents read them, why not): only files of the agent-facing view are read."""
    rel = entry_rel(view.memory_root, entry.path)
    if rel is None:
        return None, None, f"{entry.path} is not in the approved memory agents read"
    try:
        return rel, read_lines(view.file(rel).text), ""
    except (NotInView, PathRefused, OutOfScope) as exc:
        why = str(exc) if isinstance(exc, OutOfScope) else f"{entry.path} is not in the approved memory agents read"
        return rel, None, why


def cited_lines(memory_root: Path, entry: CitationEntry, view: AgentView | None = None) -> list[str] | None:
    """The cited lines as agents read them, or None when the file is not in the view or the range does not fit."""
    _, lines, _ = _view_lines(view or AgentView(memory_root), entry)
    if lines is None or not (1 <= entry.line_start <= entry.line_end <= len(lines)):
        return None
    return lines[entry.line_start - 1 : entry.line_end]


def recorded_hash(conn: sqlite3.Connection, entry: CitationEntry) -> str | None:
    return citation_store.recorded_hash(conn, entry.path, entry.line_start, entry.line_end)


def check_entry(
    memory_root: Path, entry: CitationEntry, conn: sqlite3.Connection | None = None, view: AgentView | None = None
) -> EntryCheck:
    """One cited range checked against the agent-facing view (``services.agent_view``): a path outside it is
    answered "not in the approved memory" without being read, so no hash or count of other text ever comes back."""
    view = view or AgentView(memory_root)
    rel, lines, why = _view_lines(view, entry)
    resolved = published_dir(memory_root) / rel if rel is not None else None
    if lines is None:
        return EntryCheck(entry, "missing_file", why, None)
    if not (1 <= entry.line_start <= entry.line_end <= len(lines)):
        detail = f"lines {entry.line_start}-{entry.line_end} outside 1-{len(lines)}"
        if entry.line_start > entry.line_end or entry.line_start < 1:
            detail = f"bad range {entry.line_start}-{entry.line_end} (lines start at 1, start <= end)"
        return EntryCheck(entry, "out_of_range", detail, resolved)
    cited = lines[entry.line_start - 1 : entry.line_end]
    digest = hash_lines(cited)
    if not any(line.strip() for line in cited):
        return EntryCheck(entry, "blank_lines", "only blank lines cited", resolved, digest)
    before = recorded_hash(conn, entry) if conn is not None else None
    if before is not None and before != digest:
        return EntryCheck(entry, "stale", "cited lines changed since the citation was recorded", resolved, digest)
    return EntryCheck(entry, "ok", "", resolved, digest)


def check_ids(conn: sqlite3.Connection | None, rollout_ids: list[str]) -> list[IdCheck]:
    out: list[IdCheck] = []
    for rid in rollout_ids:
        tid = canonical_thread_id(rid)
        if tid is None:
            out.append(IdCheck(rid, "not_uuid"))
            continue
        if conn is None:
            out.append(IdCheck(rid, "unknown", tid))
            continue
        keys = (tid, rid.strip())
        indexed = threads.any_exists(conn, keys)
        has_memory = outputs.has_any(conn, keys)
        out.append(IdCheck(rid, "ok" if indexed else "unknown", tid, has_memory))
    return out


def check_citation(
    memory_root: Path, citation: MemoryCitation, conn: sqlite3.Connection | None = None, view: AgentView | None = None
) -> CheckReport:
    """Per-entry statuses plus the resolution of every rollout id (``view``: a scoped reader's, else the whole
    approved memory)."""
    view = view or AgentView(memory_root)
    return CheckReport(
        entries=[check_entry(memory_root, e, conn, view) for e in citation.entries],
        ids=check_ids(conn, citation.rollout_ids),
    )
