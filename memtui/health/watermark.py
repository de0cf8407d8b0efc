"""A cheap test that memory health has nothing new to tell a Phase 2 run.

Health's binding inputs depend only on the approved MEMORY.md (the baseline commit), the indexed user messages,
the health tables (blocks, proposals, confirmations, findings and their refinements) and the forgotten rollouts.
When a computation found nothing to bind, its fingerprint of those inputs is kept; a later run whose fingerprint
is the same would compute the same empty answer, so it skips the block-by-block scan. Any change to one of them
(a new message, an approve, a proposal, a forget) changes the fingerprint and the next run computes in full.
"""

from __future__ import annotations

import hashlib
import sqlite3

KEY = "health.clean_inputs"  # meta: the fingerprint of inputs whose binding inputs were empty

_PARTS = (
    "SELECT COALESCE(MAX(id), 0), COUNT(*) FROM search_docs WHERE kind = 'message'",
    "SELECT COUNT(*), COALESCE(SUM(scanned), 0) FROM health_blocks",
    "SELECT block_id, since, verified_at, proposal, proposed_at FROM health_blocks"
    " WHERE verified_at IS NOT NULL OR proposal IS NOT NULL ORDER BY block_id",
    "SELECT block_id, thread_id, item, relation, at, refined FROM health_findings ORDER BY rowid",
    "SELECT COUNT(*), COALESCE(MAX(rowid), 0) FROM forgotten_threads",
    "SELECT value FROM meta WHERE key = 'health.scanned_doc'",
)


def fingerprint(conn: sqlite3.Connection, baseline_commit: str) -> str:
    """A digest of everything health's binding inputs are computed from (after the message index is refreshed)."""
    h = hashlib.sha256(baseline_commit.encode())
    for sql in _PARTS:
        for row in conn.execute(sql):
            h.update(repr(tuple(row)).encode())
        h.update(b"\0")
    return h.hexdigest()


def is_clean(conn: sqlite3.Connection, digest: str) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
    return row is not None and row[0] == digest


def remember(conn: sqlite3.Connection, digest: str | None) -> None:
    """Keep ``digest`` as clean (``None``: the last computation had inputs to bind, so nothing is clean)."""
    if digest is None:
        conn.execute("DELETE FROM meta WHERE key = ?", (KEY,))
    else:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (KEY, digest))
