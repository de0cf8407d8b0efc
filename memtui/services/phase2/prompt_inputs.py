"""What the consolidation prompt must tell the agent besides its rules, computed rather than left to the model.

- renames: a rollout summary deleted in the diff whose thread reappears in an added one is the same session
  re-extracted under a new file name, not a deletion (stems change when a UUIDv4 thread is re-extracted);
- a person's edits: changed files that memtui does not generate (MEMORY.md, memory_summary.md, skills/...);
- tombstones: memory lines a person deleted, kept as hashes (``memtui/state/tombstones.py``) so a later
  re-extraction cannot bring them back after the deletion has left the diff;
- rejections since the last approval, each with the files the rejected run touched;
- ``forget:`` lines of the selected raw memories (the user's explicit deletions).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import (
    DIFF_FILENAME,
    RAW_MEMORIES,
    ROLLOUT_SUMMARIES,
    TOMBSTONES,
    is_generated_input,
)
from memtui.state import runs, tombstones
from memtui.state.tombstones import normalize_memory_line

GENERATED = frozenset({RAW_MEMORIES, DIFF_FILENAME, TOMBSTONES})  # tombstones.md: an older memtui's, moved away
_THREAD_LINE = re.compile(r"^thread_id: (\S+)", re.M)
_FORGET = re.compile(r"^\s*(?:[-*]\s*)?forget:\s*(.+?)\s*$", re.I | re.M)


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    thread_id: str


@dataclass(frozen=True)
class Rejection:
    run_id: int
    reason: str | None
    files: tuple[str, ...]


def is_generated(path: str) -> bool:
    return path in GENERATED or is_generated_input(path)


def person_edits(changes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Changed files memtui does not generate: since a failed run's writes are undone, these are a person's."""
    return [(status, path) for status, path in changes if not is_generated(path)]


def _thread_of(text: str) -> str | None:
    m = _THREAD_LINE.search(text[:4096])
    return m.group(1) if m else None


def rollout_renames(root: Path, changes: list[tuple[str, str]]) -> list[Rename]:
    """Deleted summaries whose thread id reappears in an added summary (the old text is read from the baseline)."""
    prefix = f"{ROLLOUT_SUMMARIES}/"
    deleted = [p for s, p in changes if s == "D" and p.startswith(prefix)]
    added = [p for s, p in changes if s == "A" and p.startswith(prefix)]
    if not deleted or not added:
        return []
    new_by_thread: dict[str, str] = {}
    for path in added:
        try:
            thread = _thread_of((root / path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if thread:
            new_by_thread.setdefault(thread, path)
    renames = []
    for path in deleted:
        try:
            thread = _thread_of(baseline.run_git(root, "show", f"HEAD:{path}"))
        except baseline.BaselineError:
            continue
        if thread and thread in new_by_thread:
            renames.append(Rename(path, new_by_thread[thread], thread))
    return renames


def rejections_since_last_approval(conn: sqlite3.Connection) -> list[Rejection]:
    """Rejected runs decided after the last approved one, newest first, with the files each touched."""
    import json

    out = []
    for r in runs.rejected_since_last_approval(conn):
        run_id, reason, stat, written_json, pre = r.id, r.reason, r.stat, r.written_files, r.pre_snapshot
        # The run's own writes (its journal's file list, kept when the run is decided while the gate drops the
        # pre-run content), else every file of its diff (a person's edits included).
        names = written_json if written_json is not None else pre
        written = sorted(json.loads(names)) if names and names not in ("[]", "{}", "null") else None
        paths = written if written is not None else [p for _, p in json.loads(stat or "[]")]
        files = tuple(p for p in paths if not is_generated(p))
        out.append(Rejection(int(run_id), (reason or "").strip() or None, files))
    return out


# --- tombstones ----------------------------------------------------------------------------------------------------


def _removed_lines(diff: str) -> dict[str, list[str]]:
    """Removed lines per file of a ``git diff`` (renames off)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            current, in_hunk = None, False
            continue
        if not in_hunk and line.startswith("--- "):
            continue
        if not in_hunk and line.startswith("+++ "):
            target = line[4:]
            current = target[2:] if target.startswith("b/") else None
            continue
        if line.startswith("@@"):
            in_hunk = True
            continue
        if in_hunk and line.startswith("-") and current is not None:
            out.setdefault(current, []).append(line[1:])
    return out


def record_tombstones(conn: sqlite3.Connection, root: Path, changes: list[tuple[str, str]], diff: str) -> int:
    """Ban the memory lines a person removed (bullets gone from the whole file, so moved lines do not count), by hash;
    returns how many are new. Only a person's edits are in the diff at this point."""
    edited = {p for s, p in person_edits(changes) if s == "M" and tombstones.is_source(p)}
    entries: list[tuple[str, str]] = []
    for file, lines in _removed_lines(diff).items():
        if file not in edited:
            continue
        try:
            current = {normalize_memory_line(x) for x in (root / file).read_text(encoding="utf-8").splitlines()}
        except OSError:
            continue
        entries += [
            (file, line) for line in lines if tombstones.banned_key(line) and normalize_memory_line(line) not in current
        ]
    return tombstones.add(conn, entries)


# --- forget requests -------------------------------------------------------------------------------------------------


def forget_lines(raw_memory: str) -> list[str]:
    """The ``forget:`` lines of one raw memory (what follows ``forget:``), in order."""
    return [m.group(1) for m in _FORGET.finditer(raw_memory)]
