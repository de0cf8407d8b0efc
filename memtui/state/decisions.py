"""The ``decisions`` table (the audit record of every approve, reject, commit, restore and forget) and
``history_snapshots`` (the approved versions, packed by ``memtui.services.history``). The only module with SQL against them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


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


def insert(
    conn: sqlite3.Connection,
    at: int,
    kind: str,
    *,
    run_id: int | None,
    thread_id: str | None,
    files_in: Iterable[str],
    files_out: Iterable[str],
    hunks_in: Iterable[HunkRef],
    hunks_out: Iterable[HunkRef],
    reason: str | None,
    tree: str | None,
    commit: str | None,
) -> int:
    cur = conn.execute(
        "INSERT INTO decisions (at, kind, run_id, thread_id, files_in, files_out, hunks_in, hunks_out, reason,"
        " tree, commit_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            at,
            kind,
            run_id,
            thread_id,
            json.dumps(sorted(set(files_in))),
            json.dumps(sorted(set(files_out))),
            json.dumps([h.model_dump() for h in hunks_in]),
            json.dumps([h.model_dump() for h in hunks_out]),
            reason,
            tree,
            commit,
        ),
    )
    return int(cur.lastrowid or 0)


_SELECT = "SELECT d.*, (SELECT 1 FROM history_snapshots s WHERE s.decision_id = d.id) AS has_snapshot FROM decisions d"


def _rows(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row  # by name, whatever the connection's factory
    return cur.execute(sql, args).fetchall()


def newest(conn: sqlite3.Connection, limit: int = 500) -> list[Decision]:
    return [Decision.from_row(r) for r in _rows(conn, f"{_SELECT} ORDER BY d.id DESC LIMIT ?", (limit,))]


def exists(conn: sqlite3.Connection, decision_id: int) -> bool:
    return conn.execute("SELECT 1 FROM decisions WHERE id = ?", (decision_id,)).fetchone() is not None


def last_approval_of(conn: sqlite3.Connection, run_id: int) -> int | None:
    row = conn.execute(
        "SELECT id FROM decisions WHERE run_id=? AND kind IN ('approve', 'partial_approve') ORDER BY id DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return None if row is None else int(row[0])


def rename(conn: sqlite3.Connection, change: Callable[[str | None], str | None]) -> int:
    """Pass the file, hunk and reason columns through ``change`` (forget renames summary stems); rows changed."""
    cols = ("files_in", "files_out", "hunks_in", "hunks_out", "reason")
    changed = 0
    for row in conn.execute(f"SELECT id, {', '.join(cols)} FROM decisions").fetchall():
        values = [change(v) if isinstance(v, str) else v for v in row[1:]]
        if values != list(row[1:]):
            conn.execute(f"UPDATE decisions SET {', '.join(f'{c}=?' for c in cols)} WHERE id=?", (*values, row[0]))
            changed += 1
    return changed


# ---- snapshots of approved versions ------------------------------------------------------------------------------


def put_snapshot(
    conn: sqlite3.Connection, decision_id: int, tree: str | None, at: int, files: int, raw_bytes: int, data: bytes
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO history_snapshots (decision_id, tree, created_at, files, raw_bytes, data)"
        " VALUES (?,?,?,?,?,?)",
        (decision_id, tree, at, files, raw_bytes, data),
    )


def replace_snapshot_data(conn: sqlite3.Connection, decision_id: int, data: bytes, raw_bytes: int) -> None:
    conn.execute("UPDATE history_snapshots SET data=?, raw_bytes=? WHERE decision_id=?", (data, raw_bytes, decision_id))


def keep_newest_snapshots(conn: sqlite3.Connection, keep: int) -> int:
    cur = conn.execute(
        "DELETE FROM history_snapshots WHERE decision_id NOT IN"
        " (SELECT decision_id FROM history_snapshots ORDER BY decision_id DESC LIMIT ?)",
        (max(0, int(keep)),),
    )
    return cur.rowcount


def delete_all_snapshots(conn: sqlite3.Connection) -> int:
    return conn.execute("DELETE FROM history_snapshots").rowcount


def delete_snapshots(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    return sum(conn.execute("DELETE FROM history_snapshots WHERE decision_id = ?", (i,)).rowcount for i in ids)


def snapshot_data(conn: sqlite3.Connection, decision_id: int) -> bytes | None:
    row = conn.execute("SELECT data FROM history_snapshots WHERE decision_id = ?", (decision_id,)).fetchone()
    return None if row is None else bytes(row[0])


def snapshot_data_all(conn: sqlite3.Connection) -> Iterable[tuple[int, bytes]]:
    """Every snapshot's packed data, oldest first (one row at a time: they can be large)."""
    for decision_id, data in conn.execute("SELECT decision_id, data FROM history_snapshots ORDER BY decision_id"):
        yield int(decision_id), bytes(data)


@dataclass(frozen=True)
class SnapshotsKept:
    count: int
    bytes: int


def kept(conn: sqlite3.Connection) -> SnapshotsKept:
    row = conn.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM history_snapshots").fetchone()
    return SnapshotsKept(int(row[0]), int(row[1]))
