"""The paper trail: an audit record for every decision, and bounded snapshots of approved versions for undo.

A decision (approve, partial approve, reject, manual commit, restore, forget) records when, which run, the files and
hunks that went in and were left out, the reason and the baseline tree it produced. After each decision that moves
the baseline, the consolidated memory files (MEMORY.md, memory_summary.md, skills/) are kept as one zstd-compressed
snapshot in the state database; ``history_versions`` bounds how many (0 keeps none). Snapshots are the only place
past memory content may live, so ``purge`` drops them all and forgetting a rollout drops the ones that hold it.

``restore N`` never rewrites the memory silently: it writes version N's files into the workspace as a run awaiting
review, which a person approves (in full or hunk by hunk) or rejects like any consolidation.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import orjson
import zstandard
from pydantic import BaseModel

from memtui import clock
from memtui.memroot.files import MEMORY_MD, MEMORY_SUMMARY
from memtui.phase2 import baseline
from memtui.review.hunks import unified_diff
from memtui.state.db import checkpoint_wal

DecisionKind = Literal["approve", "partial_approve", "reject", "manual_commit", "restore", "forget", "unforget"]
SKILLS_DIR = "skills/"
ZSTD_LEVEL = 9


class HistoryError(RuntimeError):
    """The history request cannot be served (no such version, a run awaits review...); the message says why."""


class HunkRef(BaseModel):
    id: str
    file: str
    hash: str
    amended: bool = False
    trusted: bool = False  # a person let its tool-only or flagged lines into what agents load


class Decision(BaseModel):
    id: int
    at: int
    kind: str
    run_id: int | None = None
    thread_id: str | None = None
    files_in: list[str] = []
    files_out: list[str] = []
    hunks_in: list[HunkRef] = []
    hunks_out: list[HunkRef] = []
    reason: str | None = None
    tree: str | None = None
    commit_id: str | None = None
    snapshot: bool = False  # whether this version can still be shown and restored

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Decision:
        d: dict[str, Any] = dict(row)
        for key in ("files_in", "files_out", "hunks_in", "hunks_out"):
            d[key] = json.loads(d.get(key) or "[]")
        d["snapshot"] = bool(d.pop("has_snapshot", 0))
        return cls(**d)


def is_snapshot_path(rel: str) -> bool:
    """The consolidated files a version is made of (synced inputs are rebuilt from the state, never restored)."""
    return rel in (MEMORY_MD, MEMORY_SUMMARY) or rel.startswith(SKILLS_DIR)


def checkpoint(conn: sqlite3.Connection) -> None:
    """Deleted rows are zeroed (every connection runs ``secure_delete``); this also empties the WAL of old frames."""
    checkpoint_wal(conn)


# ---- audit records ------------------------------------------------------------------------------------------


def record_decision(
    conn: sqlite3.Connection,
    kind: DecisionKind,
    *,
    run_id: int | None = None,
    thread_id: str | None = None,
    files_in: Iterable[str] = (),
    files_out: Iterable[str] = (),
    hunks_in: Iterable[HunkRef] = (),
    hunks_out: Iterable[HunkRef] = (),
    reason: str | None = None,
    tree: str | None = None,
    commit: str | None = None,
) -> int:
    cur = conn.execute(
        "INSERT INTO decisions (at, kind, run_id, thread_id, files_in, files_out, hunks_in, hunks_out, reason,"
        " tree, commit_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            clock.now_s(),
            kind,
            run_id,
            thread_id,
            json.dumps(sorted(set(files_in))),
            json.dumps(sorted(set(files_out))),
            json.dumps([h.model_dump() for h in hunks_in]),
            json.dumps([h.model_dump() for h in hunks_out]),
            (reason or "").strip() or None,
            tree,
            commit,
        ),
    )
    return int(cur.lastrowid or 0)


_SELECT = "SELECT d.*, (SELECT 1 FROM history_snapshots s WHERE s.decision_id = d.id) AS has_snapshot FROM decisions d"


def list_decisions(conn: sqlite3.Connection, limit: int = 500) -> list[Decision]:
    """Newest first."""
    rows = conn.execute(f"{_SELECT} ORDER BY d.id DESC LIMIT ?", (limit,)).fetchall()
    return [Decision.from_row(r) for r in rows]


def get_decision(conn: sqlite3.Connection, decision_id: int) -> Decision | None:
    row = conn.execute(f"{_SELECT} WHERE d.id = ?", (decision_id,)).fetchone()
    return Decision.from_row(row) if row else None


# ---- snapshots ----------------------------------------------------------------------------------------------


def baseline_files(root: Path) -> dict[str, str]:
    """The consolidated memory files as committed in the baseline (not the working tree: a person's unsaved edit
    is not an approved version)."""
    if not baseline.is_usable(root):
        return {}
    names = baseline.run_git(root, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")
    out: dict[str, str] = {}
    for rel in names:
        if rel and is_snapshot_path(rel):
            out[rel] = baseline.run_git(root, "cat-file", "blob", f"HEAD:{rel}")
    return out


def baseline_tree(root: Path) -> str | None:
    if not baseline.is_usable(root):
        return None
    return baseline.run_git(root, "rev-parse", "HEAD^{tree}").strip()


def _pack(files: dict[str, str]) -> tuple[bytes, int]:
    raw = orjson.dumps(files, option=orjson.OPT_SORT_KEYS)
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(raw), len(raw)


def _unpack(data: bytes) -> dict[str, str]:
    return dict(orjson.loads(zstandard.ZstdDecompressor().decompress(data)))


def take_snapshot(conn: sqlite3.Connection, root: Path, decision_id: int, keep: int) -> bool:
    """Keep the baseline's memory files as version ``decision_id``, then prune to the ``keep`` newest."""
    if keep > 0:
        files = baseline_files(root)
        data, raw_bytes = _pack(files)
        conn.execute(
            "INSERT OR REPLACE INTO history_snapshots (decision_id, tree, created_at, files, raw_bytes, data)"
            " VALUES (?,?,?,?,?,?)",
            (decision_id, baseline_tree(root), clock.now_s(), len(files), raw_bytes, data),
        )
    prune(conn, keep)
    return keep > 0


def prune(conn: sqlite3.Connection, keep: int) -> int:
    """Drop all but the ``keep`` newest snapshots (zeroed on disk, WAL truncated)."""
    cur = conn.execute(
        "DELETE FROM history_snapshots WHERE decision_id NOT IN"
        " (SELECT decision_id FROM history_snapshots ORDER BY decision_id DESC LIMIT ?)",
        (max(0, int(keep)),),
    )
    if cur.rowcount:
        checkpoint(conn)
    return cur.rowcount


def purge(conn: sqlite3.Connection) -> int:
    """Drop every snapshot; the audit records stay (they hold no memory text)."""
    n = conn.execute("DELETE FROM history_snapshots").rowcount
    checkpoint(conn)
    return n


def version_files(conn: sqlite3.Connection, decision_id: int) -> dict[str, str]:
    row = conn.execute("SELECT data FROM history_snapshots WHERE decision_id = ?", (decision_id,)).fetchone()
    if row is None:
        if conn.execute("SELECT 1 FROM decisions WHERE id = ?", (decision_id,)).fetchone() is None:
            raise HistoryError(f"no decision #{decision_id}; `memtui history` lists them")
        raise HistoryError(
            f"version {decision_id} has no snapshot (pruned by history_versions, purged, dropped by a forget, "
            "or the decision did not change the baseline)"
        )
    return _unpack(row[0])


def snapshots(conn: sqlite3.Connection) -> Iterable[tuple[int, dict[str, str]]]:
    for decision_id, data in conn.execute("SELECT decision_id, data FROM history_snapshots ORDER BY decision_id"):
        yield int(decision_id), _unpack(data)


def drop_snapshots(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    n = sum(conn.execute("DELETE FROM history_snapshots WHERE decision_id = ?", (i,)).rowcount for i in ids)
    return n


def files_diff(current: dict[str, str], target: dict[str, str]) -> str:
    """Git-style diff from ``current`` to ``target`` over the union of their files."""
    return "".join(unified_diff(rel, current.get(rel), target.get(rel)) for rel in sorted(set(current) | set(target)))


def version_diff(conn: sqlite3.Connection, root: Path, decision_id: int) -> str:
    """What restoring version N would change: the current baseline's memory files -> version N's."""
    return files_diff(baseline_files(root), version_files(conn, decision_id))
