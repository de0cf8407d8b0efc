"""Phase 2 input selection and the retention prune: Codex's, but the window counts from when a memory was made or used.

Ranking favours memories that agents actually cited (usage), then recent use; only rows whose thread is still
``enabled``/``legacy`` are visible. The final order is thread id ascending so the synced files do not churn.
``max_unused_days`` counts from when a memory was made or last used (``outputs.FRESHNESS_SQL``), not from its
session's date as Codex does; a memory made since the last consolidation read its selection is kept by retention and
taken by the next selection, whenever it runs. A first run over a year of history consolidates what it extracted
instead of expiring it.
"""

from __future__ import annotations

import sqlite3

from memtui.core import clock
from memtui.state import outputs, runs
from memtui.state.outputs import Stage1Output as Stage1Output  # the selection's row type, named where it is used

DAY = 86_400
_WHITESPACE = " \t\r\n\v\f"  # SQLite's TRIM strips only spaces by default; "blank" means all whitespace


def get_phase2_input_selection(conn: sqlite3.Connection, n: int, max_unused_days: int) -> list[Stage1Output]:
    """Top ``n`` made or used within ``max_unused_days`` (``outputs.FRESHNESS_SQL``) or made since the last
    consolidation read its selection, ranked by usage_count, last use (else source_updated_at), recency, id; returned
    sorted by thread id."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    return outputs.top_for_phase2(conn, int(n), cutoff, _WHITESPACE, runs.last_consolidated_at(conn))


def all_stage1_outputs(conn: sqlite3.Connection) -> list[Stage1Output]:
    """Every stage-1 memory, selected or not: what the offline merge may have written lines from."""
    return outputs.all_with_threads(conn)


def expired_stage1_outputs(conn: sqlite3.Connection, max_unused_days: int, limit: int = 200) -> list[str]:
    """Up to ``limit`` threads whose output is unselected and neither made nor used for ``max_unused_days``, stalest
    first; never one made since the last consolidation started (no consolidation has read it yet)."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    return outputs.expired(conn, cutoff, int(limit), runs.last_consolidated_at(conn))
