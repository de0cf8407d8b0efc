"""Validate a citation against the memory agents read, and its rollout ids against the index.

Agents read the approved memory (the published copy of the baseline), so a cited range is checked there: a run
awaiting review or a person's uncommitted edit in the working tree never decides whether an agent's citation holds.
A memory root without a baseline yet (nothing approved, nothing published) is read as it stands.

A citation is only worth counting and auditing when it points at real, non-blank lines. ``stale`` means the
lines changed since the citation was recorded: recording stores a sha256 of the cited text, and the check
compares it with the most recent recorded hash for the same path and range.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memtui.adapters.memroot.approved import published_dir
from memtui.domain.citation import CitationEntry, MemoryCitation, canonical_thread_id
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


def resolve_entry_path(memory_root: Path, path: str) -> Path:
    """Where the cited file is read: paths are relative to the memory root, and a path into the root is read in its
    published approved copy when there is one (a stat, no git); other absolute paths are taken as they are."""
    p = Path(path)
    if not p.is_absolute():
        p = memory_root / p
    approved_copy = published_dir(memory_root)
    if not approved_copy.is_dir():
        return p
    try:
        return approved_copy / p.relative_to(memory_root)
    except ValueError:
        return p


def read_lines(path: Path) -> list[str] | None:
    """Lines as an agent numbers them (``\\n``-separated, CR dropped); None when not a readable file."""
    try:
        if not path.is_file():
            return None
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def hash_lines(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8", errors="surrogatepass")).hexdigest()


def cited_lines(memory_root: Path, entry: CitationEntry) -> list[str] | None:
    """The cited lines, or None when the file is missing or the range does not fit in it."""
    lines = read_lines(resolve_entry_path(memory_root, entry.path))
    if lines is None or not (1 <= entry.line_start <= entry.line_end <= len(lines)):
        return None
    return lines[entry.line_start - 1 : entry.line_end]


def recorded_hash(conn: sqlite3.Connection, entry: CitationEntry) -> str | None:
    return citation_store.recorded_hash(conn, entry.path, entry.line_start, entry.line_end)


def check_entry(memory_root: Path, entry: CitationEntry, conn: sqlite3.Connection | None = None) -> EntryCheck:
    resolved = resolve_entry_path(memory_root, entry.path)
    lines = read_lines(resolved)
    if lines is None:
        approved_copy = published_dir(memory_root)
        where = (
            f"{entry.path} is not in the approved memory agents read"
            if resolved.is_relative_to(approved_copy)
            else f"no file {resolved}"
        )
        return EntryCheck(entry, "missing_file", where, resolved)
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


def check_citation(memory_root: Path, citation: MemoryCitation, conn: sqlite3.Connection | None = None) -> CheckReport:
    """Per-entry statuses plus the resolution of every rollout id."""
    return CheckReport(
        entries=[check_entry(memory_root, e, conn) for e in citation.entries],
        ids=check_ids(conn, citation.rollout_ids),
    )
