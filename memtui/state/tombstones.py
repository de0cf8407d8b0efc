"""Lines a person deleted, kept as hashes: they block re-learning without holding the deleted words.

A deletion used to be copied word for word into ``tombstones.md`` in the memory root, so it was committed, indexed
and searchable, and survived forgetting the rollout it came from. Now only the sha256 of the normalised line is kept
(in ``state.sqlite``), with the rollouts whose stage-1 output held that line. After every Phase 2 run (agent or
offline) memtui removes each banned line it finds, deterministically; the agent is only told that some lines are
banned. Forgetting a rollout takes it off its tombstones, and a tombstone no remaining rollout supports goes (its line
can only come back from a rollout that is gone). A tombstone of a person's own line (no rollout held it) stays.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memtui.adapters.memroot.files import TOMBSTONES
from memtui.core import clock
from memtui.domain.tasks import TASK_REFS_AT_END
from memtui.domain.trust import markers
from memtui.state import outputs

TOMBSTONE_SOURCES = ("MEMORY.md", "memory_summary.md")  # plus anything under skills/
MIN_TOMBSTONE_CHARS = 8
_BULLET = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")
_TASK_REFS = TASK_REFS_AT_END


def normalize_memory_line(text: str) -> str:
    """A memory line reduced to what it says: no bullet, no ``[Task n]`` refs (numbering moves), no trust marker
    (memtui derives it again each run), lower case."""
    text = markers.strip(text)
    m = _BULLET.match(text)
    body = m.group(1) if m else text.strip()
    return " ".join(_TASK_REFS.sub("", body).split()).lower()


def line_hash(text: str) -> str:
    return hashlib.sha256(normalize_memory_line(text).encode("utf-8")).hexdigest()


def banned_key(line: str) -> str | None:
    """The hash a bullet line is banned by, or None for lines tombstones never cover (structure, short lines)."""
    if not _BULLET.match(line) or len(normalize_memory_line(line)) < MIN_TOMBSTONE_CHARS:
        return None
    return line_hash(line)


def is_source(rel: str) -> bool:
    return rel in TOMBSTONE_SOURCES or rel.startswith("skills/")


def hashes(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT hash FROM tombstones")}


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0])


def _supporters(conn: sqlite3.Connection, keys: set[str]) -> dict[str, list[str]]:
    """For each normalised line, the rollouts whose stage-1 output holds it."""
    out: dict[str, list[str]] = {k: [] for k in keys}
    if not keys:
        return out
    for thread_id, raw, summary in outputs.texts(conn):
        for line in f"{raw}\n{summary}".split("\n"):
            key = normalize_memory_line(line)
            if key in out and thread_id not in out[key]:
                out[key].append(thread_id)
    return out


def add(conn: sqlite3.Connection, entries: list[tuple[str, str]]) -> int:
    """Ban these ``(file, line)`` pairs; returns how many were new."""
    keys = {normalize_memory_line(line): (file, line) for file, line in entries}
    keys = {k: v for k, v in keys.items() if len(k) >= MIN_TOMBSTONE_CHARS}
    support = _supporters(conn, set(keys))
    now = clock.now_s()
    new = 0
    for key, (file, line) in keys.items():
        cur = conn.execute(
            "INSERT OR IGNORE INTO tombstones (hash, file, thread_ids, created_at) VALUES (?,?,?,?)",
            (line_hash(line), file, json.dumps(sorted(support[key])), now),
        )
        new += cur.rowcount
    return new


def migrate_file(conn: sqlite3.Connection, root: Path) -> int:
    """Move an older memtui's ``tombstones.md`` into the database and delete the file (the deletion is committed
    with the next approved baseline, which drops its words from git). Returns the lines moved."""
    path = root / TOMBSTONES
    if not path.is_file():
        return 0
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("- ") and ": " in line:
            file, _, text = line[2:].partition(": ")
            entries.append((file, f"- {text}"))
    moved = add(conn, entries)
    path.unlink()
    return moved


def forget_thread(conn: sqlite3.Connection, thread_id: str) -> int:
    """Take ``thread_id`` off every tombstone; drop those no remaining rollout supports. Returns rows dropped."""
    dropped = 0
    rows = conn.execute(
        "SELECT hash, thread_ids FROM tombstones WHERE thread_ids LIKE ?", (f'%"{thread_id}"%',)
    ).fetchall()
    for key, ids_json in rows:
        ids = [t for t in json.loads(ids_json or "[]") if t != thread_id]
        if ids:
            conn.execute("UPDATE tombstones SET thread_ids=? WHERE hash=?", (json.dumps(ids), key))
        else:
            conn.execute("DELETE FROM tombstones WHERE hash=?", (key,))
            dropped += 1
    return dropped


def enforce(conn: sqlite3.Connection, root: Path, write: Callable[[str, bytes], None]) -> int:
    """After a run: remove every banned line from the memory files through ``write`` (the run's journal, so a reject
    undoes it too). Returns the lines removed."""
    banned = hashes(conn)
    if not banned:
        return 0
    removed = 0
    files = [root / rel for rel in TOMBSTONE_SOURCES]
    if (root / "skills").is_dir():
        files += [f for f in sorted((root / "skills").rglob("*")) if f.is_file() and not f.is_symlink()]
    for path in files:
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        lines = text.split("\n")
        kept = [line for line in lines if banned_key(line) not in banned]
        if len(kept) != len(lines):
            removed += len(lines) - len(kept)
            write(path.relative_to(root).as_posix(), "\n".join(kept).encode("utf-8"))
    return removed
