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

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import orjson
import zstandard

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY
from memtui.core import clock
from memtui.services.review.hunks import unified_diff
from memtui.state import decisions
from memtui.state.db import checkpoint_wal
from memtui.state.decisions import Decision, HunkRef

DecisionKind = Literal[
    "approve", "partial_approve", "reject", "manual_commit", "restore", "forget", "unforget", "lift"
]  # lift: a remembered rejection lifted (``review.decide.lift``)
SKILLS_DIR = "skills/"
ZSTD_LEVEL = 9


class HistoryError(RuntimeError):
    """The history request cannot be served (no such version, a run awaits review...); the message says why."""


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
    return decisions.insert(
        conn,
        clock.now_s(),
        kind,
        run_id=run_id,
        thread_id=thread_id,
        files_in=files_in,
        files_out=files_out,
        hunks_in=hunks_in,
        hunks_out=hunks_out,
        reason=(reason or "").strip() or None,
        tree=tree,
        commit=commit,
    )


def list_decisions(conn: sqlite3.Connection, limit: int = 500) -> list[Decision]:
    """Newest first."""
    return decisions.newest(conn, limit)


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
        decisions.put_snapshot(conn, decision_id, baseline_tree(root), clock.now_s(), len(files), raw_bytes, data)
    prune(conn, keep)
    return keep > 0


def prune(conn: sqlite3.Connection, keep: int) -> int:
    """Drop all but the ``keep`` newest snapshots (zeroed on disk, WAL truncated)."""
    dropped = decisions.keep_newest_snapshots(conn, keep)
    if dropped:
        checkpoint(conn)
    return dropped


def purge(conn: sqlite3.Connection) -> int:
    """Drop every snapshot; the audit records stay (they hold no memory text)."""
    n = decisions.delete_all_snapshots(conn)
    checkpoint(conn)
    return n


def version_files(conn: sqlite3.Connection, decision_id: int) -> dict[str, str]:
    data = decisions.snapshot_data(conn, decision_id)
    if data is None:
        if not decisions.exists(conn, decision_id):
            raise HistoryError(f"no decision #{decision_id}; `memtui history` lists them")
        raise HistoryError(
            f"version {decision_id} has no snapshot (pruned by history_versions, purged, dropped by a forget, "
            "or the decision did not change the baseline)"
        )
    return _unpack(data)


def snapshots(conn: sqlite3.Connection) -> Iterable[tuple[int, dict[str, str]]]:
    for decision_id, data in decisions.snapshot_data_all(conn):
        yield decision_id, _unpack(data)


def drop_snapshots(conn: sqlite3.Connection, ids: Iterable[int]) -> int:
    return decisions.delete_snapshots(conn, ids)


def files_diff(current: dict[str, str], target: dict[str, str]) -> str:
    """Git-style diff from ``current`` to ``target`` over the union of their files."""
    return "".join(unified_diff(rel, current.get(rel), target.get(rel)) for rel in sorted(set(current) | set(target)))


def version_diff(conn: sqlite3.Connection, root: Path, decision_id: int) -> str:
    """What restoring version N would change: the current baseline's memory files -> version N's."""
    return files_diff(baseline_files(root), version_files(conn, decision_id))
