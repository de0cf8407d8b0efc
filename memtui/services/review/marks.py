"""What an approve leaves before and at its commit: the meta key of its decisions and its commit's subject.

Apart from ``approving`` so that recovery's check, which every ``review show`` and TUI refresh runs, tells an
unfinished approve from a finished one without loading the approve's imports.
"""

from __future__ import annotations

from memtui.state.runs import Phase2Run

INTENT_KEY = "phase2.approving.{}"  # meta key: an approve's decisions, kept until its commit is recorded


def approve_message(run: Phase2Run) -> str:
    if run.kind == "restore":
        return f"memtui baseline: restored version {run.restore_of} (run #{run.id})"
    return f"memtui baseline: approved Phase 2 run #{run.id}"
