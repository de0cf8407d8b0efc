"""Phase 2 input selection and the retention prune, as Codex does them.

Ranking favours memories that agents actually cited (usage), then recent use; only rows whose thread is still
``enabled``/``legacy`` are visible. The final order is thread id ascending so the synced files do not churn.
"""

from __future__ import annotations

import sqlite3

from memtui.core import clock
from memtui.state import outputs
from memtui.state.outputs import Stage1Output as Stage1Output  # the selection's row type, named where it is used

DAY = 86_400
_WHITESPACE = " \t\r\n\v\f"  # SQLite's TRIM strips only spaces by default; "blank" means all whitespace


def get_phase2_input_selection(conn: sqlite3.Connection, n: int, max_unused_days: int) -> list[Stage1Output]:
    """Top ``n`` by usage_count, last use (else source_updated_at), recency, id; returned sorted by thread id."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    return outputs.top_for_phase2(conn, int(n), cutoff, _WHITESPACE)


def all_stage1_outputs(conn: sqlite3.Connection) -> list[Stage1Output]:
    """Every stage-1 memory, selected or not: what the offline merge may have written lines from."""
    return outputs.all_with_threads(conn)


def expired_stage1_outputs(conn: sqlite3.Connection, max_unused_days: int, limit: int = 200) -> list[str]:
    """Up to ``limit`` threads whose output is unselected and unused for ``max_unused_days``, stalest first."""
    cutoff = clock.now_s() - int(max_unused_days) * DAY
    return outputs.expired(conn, cutoff, int(limit))
