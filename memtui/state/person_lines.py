"""Lines a person wrote in the memory files, known by hash: forgetting a rollout never removes them.

A line counts as a person's when it arrives through a person's hands: an edit of a memory file that Phase 2 finds in
its diff (every run's own writes are undone or decided by then), a manual commit, or a hunk amended at approve. Only
sha256 of the normalised line is kept (``normalize_line`` below, the key forget matches lines by), so
this table holds no words. Forget leaves such a line in place and the review names it "mentions a forgotten
rollout" for the person to decide.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterable

from memtui.core import clock
from memtui.domain.tasks import TASK_REF_SPACED
from memtui.domain.trust import markers


def normalize_line(line: str) -> str:
    """The content of a memory line, without bullet, ``[Task n]`` tags and spacing (which renumber run to run).

    A task heading is keyed by its title (``## Task 3: X`` -> ``task: x``); other structure (headings, blank lines,
    the generated block's markers) normalises to "" and is never filtered."""
    text = line.strip()
    if task := re.match(r"^##\s+Task\s+[0-9A-Za-z]+:\s*(.+)$", text):
        return "task: " + " ".join(task.group(1).split()).lower()
    if not text or text.startswith(("#", "<!--")) or text in ("---", "v1"):
        return ""
    text = TASK_REF_SPACED.sub("", markers.strip(text))
    text = text.lstrip("-*> ").strip()
    return " ".join(text.split()).lower()


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _is_memory_file(rel: str) -> bool:
    return rel in ("MEMORY.md", "memory_summary.md") or rel.startswith("skills/")


def record(conn: sqlite3.Connection, entries: Iterable[tuple[str, str]]) -> int:
    """Remember these ``(file, line)`` pairs as a person's; returns how many are new."""
    now = clock.now_s()
    new = 0
    for file, line in entries:
        if not _is_memory_file(file) or not (key := normalize_line(line)):
            continue
        cur = conn.execute(
            "INSERT OR IGNORE INTO person_lines (hash, file, created_at) VALUES (?,?,?)", (key_hash(key), file, now)
        )
        new += cur.rowcount
    return new


def record_added(conn: sqlite3.Connection, diff: str, files: Iterable[str] | None = None) -> int:
    """The '+' lines of a ``git diff`` (limited to ``files`` when given) are a person's."""
    only = set(files) if files is not None else None
    entries: list[tuple[str, str]] = []
    current: str | None = None
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            current, in_hunk = None, False
        elif not in_hunk and line.startswith("+++ "):
            target = line[4:]
            current = target[2:] if target.startswith("b/") else None
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+") and current is not None and (only is None or current in only):
            entries.append((current, line[1:]))
    return record(conn, entries)


def hashes(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT hash FROM person_lines")}
