"""The memory health tables (``health_blocks``, ``health_findings``): the only module with SQL against them.

They hold ids, times and item numbers, never rollout text: a finding says "thread T, item N restated block B",
and the words are read from the search index when shown, so forgetting a rollout (which drops its search
documents) leaves nothing of its text here; ``forget_thread`` drops its findings too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import StrEnum

from memtui.core import clock
from memtui.domain.health import Relation
from memtui.state import meta
from memtui.state.db import immediate

WATERMARK_KEY = "health.scanned_doc"  # the last search document (message) checked against every block


class Proposal(StrEnum):
    UPDATE = "update"
    REMOVE = "remove"


@dataclass(frozen=True)
class BlockRow:
    block_id: str
    since: int
    verified_at: int | None
    proposal: Proposal | None
    proposed_at: int | None
    scanned: bool


@dataclass(frozen=True)
class FindingRow:
    block_id: str
    thread_id: str
    item: int
    relation: Relation
    at: int
    refined: str | None = None  # a model's verdict (a relation, or "none")
    refined_by: str | None = None


def _tx(conn: sqlite3.Connection) -> AbstractContextManager[object]:
    """``BEGIN IMMEDIATE`` on its own; inside a caller's transaction, part of it."""
    return nullcontext() if conn.in_transaction else immediate(conn)


def blocks(conn: sqlite3.Connection) -> dict[str, BlockRow]:
    rows = conn.execute("SELECT block_id, since, verified_at, proposal, proposed_at, scanned FROM health_blocks")
    return {r[0]: BlockRow(r[0], int(r[1]), r[2], Proposal(r[3]) if r[3] else None, r[4], bool(r[5])) for r in rows}


def sync_blocks(conn: sqlite3.Connection, since: dict[str, int], keep: Iterable[str]) -> None:
    """Add the new blocks (``since``: block id -> when it entered the memory) and drop rows of blocks no longer in
    the approved memory, with their findings."""
    keep = set(keep)
    with _tx(conn):
        conn.executemany("INSERT OR IGNORE INTO health_blocks (block_id, since) VALUES (?, ?)", since.items())
        gone = [r[0] for r in conn.execute("SELECT block_id FROM health_blocks") if r[0] not in keep]
        conn.executemany("DELETE FROM health_blocks WHERE block_id = ?", [(g,) for g in gone])
        conn.executemany("DELETE FROM health_findings WHERE block_id = ?", [(g,) for g in gone])


def mark_scanned(conn: sqlite3.Connection, ids: Iterable[str]) -> None:
    with _tx(conn):
        conn.executemany("UPDATE health_blocks SET scanned = 1 WHERE block_id = ?", [(i,) for i in ids])


def add_findings(conn: sqlite3.Connection, found: Iterable[FindingRow]) -> int:
    with _tx(conn):
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO health_findings (block_id, thread_id, item, relation, at) VALUES (?, ?, ?, ?, ?)",
            [(f.block_id, f.thread_id, f.item, f.relation.value, f.at) for f in found],
        )
        return conn.total_changes - before


def findings(conn: sqlite3.Connection) -> list[FindingRow]:
    rows = conn.execute(
        "SELECT block_id, thread_id, item, relation, at, refined, refined_by FROM health_findings f"
        " WHERE NOT EXISTS (SELECT 1 FROM forgotten_threads g WHERE g.thread_id = f.thread_id)"
        " ORDER BY at, thread_id, item"
    )
    return [FindingRow(r[0], r[1], int(r[2]), Relation(r[3]), int(r[4]), r[5], r[6]) for r in rows]


def unrefined(conn: sqlite3.Connection, limit: int) -> list[FindingRow]:
    return [f for f in findings(conn) if f.refined is None][:limit]


def set_refined(conn: sqlite3.Connection, verdicts: Iterable[tuple[FindingRow, str, str]]) -> None:
    """(finding, verdict, model) for each finding a model looked at."""
    with _tx(conn):
        conn.executemany(
            "UPDATE health_findings SET refined = ?, refined_by = ? WHERE block_id = ? AND thread_id = ? AND item = ?"
            " AND relation = ?",
            [(v, m, f.block_id, f.thread_id, f.item, f.relation.value) for f, v, m in verdicts],
        )


def watermark(conn: sqlite3.Connection) -> int:
    value = meta.get(conn, WATERMARK_KEY)
    return int(value) if value is not None else 0


def set_watermark(conn: sqlite3.Connection, doc_id: int) -> None:
    with _tx(conn):
        meta.put(conn, WATERMARK_KEY, str(doc_id))


def confirm(conn: sqlite3.Connection, block_id: str) -> int:
    """A person's confirmation: renews last verified (and settles a proposal they had made)."""
    now = clock.now_s()
    with _tx(conn):
        n = conn.execute(
            "UPDATE health_blocks SET verified_at = ?, proposal = NULL, proposed_at = NULL WHERE block_id = ?",
            (now, block_id),
        ).rowcount
    if not n:
        raise KeyError(block_id)
    return now


def propose(conn: sqlite3.Connection, block_id: str, proposal: Proposal) -> None:
    """A person's request that the next Phase 2 run update or remove the block (a binding input there)."""
    with _tx(conn):
        n = conn.execute(
            "UPDATE health_blocks SET proposal = ?, proposed_at = ? WHERE block_id = ?",
            (proposal.value, clock.now_s(), block_id),
        ).rowcount
    if not n:
        raise KeyError(block_id)


def proposals(conn: sqlite3.Connection) -> dict[str, Proposal]:
    rows = conn.execute("SELECT block_id, proposal FROM health_blocks WHERE proposal IS NOT NULL")
    return {r[0]: Proposal(r[1]) for r in rows}


def forget_thread(conn: sqlite3.Connection, thread_id: str) -> int:
    """Drop what a forgotten rollout contributed (its findings)."""
    with _tx(conn):
        return conn.execute("DELETE FROM health_findings WHERE thread_id = ?", (thread_id,)).rowcount


def fingerprint_parts(conn: sqlite3.Connection) -> list[list[tuple[object, ...]]]:
    """What of the health tables health's binding inputs depend on, in a stable order: the block counts, a
    person's confirmations and proposals, every finding and its refinement (one list of rows per part)."""
    return [
        [tuple(r) for r in conn.execute(sql)]
        for sql in (
            "SELECT COUNT(*), COALESCE(SUM(scanned), 0) FROM health_blocks",
            "SELECT block_id, since, verified_at, proposal, proposed_at FROM health_blocks"
            " WHERE verified_at IS NOT NULL OR proposal IS NOT NULL ORDER BY block_id",
            "SELECT block_id, thread_id, item, relation, at, refined FROM health_findings ORDER BY rowid",
        )
    ]
