"""The user's later words behind an approved memory line, for the review's evidence pane: when a run removes or
rewrites a line that memory health found contradicted (or a person proposed to update or remove), the
contradicting item is the evidence for that hunk."""

from __future__ import annotations

import sqlite3

from memtui.health import store
from memtui.health.blocks import block_id
from memtui.health.rules import Relation, clauses, relate_message, statement_of
from memtui.health.signals import Evidence
from memtui.rollouts.user_words import user_words

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
        if f.block_id not in ids or (f.relation != Relation.CONTRADICTED and f.block_id not in proposed):
            continue
        row = conn.execute(
            "SELECT d.text, t.cwd FROM search_docs d LEFT JOIN threads t ON t.id = d.source"
            " WHERE d.kind = 'message' AND d.role = 'user' AND d.source = ? AND d.loc = ?",
            (f.thread_id, f.item),
        ).fetchone()
        words = user_words(row[0]) if row else ""
        parts = clauses(statement_of(ids[f.block_id]))
        said = next((s for r, s in relate_message(parts, words) if r == f.relation), words)
        out.append(
            Evidence(
                thread_id=f.thread_id, item=f.item, at=f.at, relation=f.relation, text=said, project=row and row[1]
            )
        )
    return out
