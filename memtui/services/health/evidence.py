"""The user's later words behind an approved memory line, for the review's evidence pane: when a run removes or
rewrites a line that memory health found contradicted (or a person proposed to update or remove), the
contradicting item is the evidence for that hunk."""

from __future__ import annotations

import sqlite3

from memtui.domain.health import Relation
from memtui.services.health.blocks import block_id
from memtui.services.health.rules import clauses, statement_of
from memtui.services.health.signals import Evidence, evidence_of
from memtui.state import health as store

ORDER = (Relation.CONTRADICTED, Relation.CORRECTED, Relation.RESTATED)


def evidence_for_lines(conn: sqlite3.Connection, lines: list[str]) -> list[Evidence]:
    """Findings against the blocks these lines are (contradictions first, newest first; restatements only for a
    block a person proposed to change). Empty when none of the lines is a known block."""
    ids = {block_id(line): line for line in lines if line.strip().startswith(("- ", "* "))}
    if not ids:
        return []
    proposed = store.proposals(conn)
    out: list[Evidence] = []
    for f in sorted(store.findings(conn), key=lambda f: (ORDER.index(f.relation), -f.at)):
        if f.block_id in ids and (f.relation == Relation.CONTRADICTED or f.block_id in proposed):
            out.append(evidence_of(conn, f, clauses(statement_of(ids[f.block_id]))))
    return out
