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

from memtui.state import forgotten, health, meta, search_index

KEY = "health.clean_inputs"  # meta: the fingerprint of inputs whose binding inputs were empty


def fingerprint(conn: sqlite3.Connection, baseline_commit: str) -> str:
    """A digest of everything health's binding inputs are computed from (after the message index is refreshed)."""
    scanned = meta.get(conn, health.WATERMARK_KEY)
    parts: list[list[tuple[object, ...]]] = [
        [(search_index.message_mark(conn),)],
        *health.fingerprint_parts(conn),
        [forgotten.fingerprint(conn)],
        [] if scanned is None else [(scanned,)],
    ]
    h = hashlib.sha256(baseline_commit.encode())
    for rows in parts:
        for row in rows:
            h.update(repr(tuple(row)).encode())
        h.update(b"\0")
    return h.hexdigest()


def is_clean(conn: sqlite3.Connection, digest: str) -> bool:
    return meta.get(conn, KEY) == digest


def remember(conn: sqlite3.Connection, digest: str | None) -> None:
    """Keep ``digest`` as clean (``None``: the last computation had inputs to bind, so nothing is clean)."""
    if digest is None:
        meta.delete(conn, KEY)
    else:
        meta.put(conn, KEY, digest)
