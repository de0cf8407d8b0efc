"""Typed shapes at the centre: run outcomes and skip reasons as enums the CLI and the TUI branch on (never on the
words), job records and status as typed objects over the same rows, hunk decisions as one shape from the screen to
the approve that commits them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memtui.adapters.memroot.baseline import head_commit
from memtui.services.context import open_context
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import Phase2Result, run_phase2
from memtui.services.phase2.outcome import Outcome, SkipReason
from memtui.state import global_job
from memtui.state.jobs import GLOBAL, GLOBAL_KEY, JobRecord, JobStatus, read_job
from memtui.state.status import Status, collect_status, read_status
from memtui.tui.tasks import COOLDOWN, NO_MEMORIES, describe_phase2
from tests.conftest import FROZEN_NOW
from tests.test_gate_crash import _awaiting_run


@pytest.mark.parametrize("skip", list(SkipReason))
def test_every_skip_reason_renders_its_message_and_the_screen_needs_no_words(skip: SkipReason) -> None:
    result = Phase2Result.skipped(skip, run_id=7)
    assert result.outcome is Outcome.SKIPPED and result.reason == skip.message(7) and result.reason
    said = result.message()
    assert said == f"skipped: {skip.message(7)}"
    # The screen decides from the code alone: the words may change (or be translated) without changing it.
    reworded = result.model_copy(update={"reason": "ignored words"})
    expected = {
        SkipReason.COOLDOWN: COOLDOWN,
        SkipReason.NOTHING_TO_CONSOLIDATE: NO_MEMORIES,
        SkipReason.AWAITING_REVIEW: "run #7 is awaiting review: approve or reject it first (screen 3)",
    }.get(skip, "ignored words")
    assert describe_phase2(reworded).summary.startswith(expected)


def test_json_values_stay_the_strings_they_were(frozen_clock: int) -> None:
    ctx = open_context()
    result = run_phase2(ctx, offline=True)
    ctx.close()
    assert result.skip is SkipReason.NOTHING_TO_CONSOLIDATE
    dumped = json.loads(json.dumps(result.model_dump(mode="json")))
    assert dumped["outcome"] == "skipped" and dumped["skip"] == "nothing_to_consolidate"
    assert dumped["reason"].startswith("nothing to consolidate: no memories yet")
    assert [o.value for o in Outcome] == ["no_changes", "awaiting_review", "approved", "failed", "skipped", "busy"]


def test_job_records_and_status_are_typed_over_the_same_rows(frozen_clock: int) -> None:
    ctx = open_context()
    conn = ctx.conn
    assert global_job.read_global_job(conn) is None
    assert read_status(conn).phase2.status == "never_run"
    claim = global_job.try_claim_global_phase2_job(conn, review.worker_id(), 3600, 0)
    assert claim.claimed
    job = global_job.read_global_job(conn)
    assert isinstance(job, JobRecord) and job.status is JobStatus.RUNNING and job.running
    assert job == read_job(conn, GLOBAL, GLOBAL_KEY) and job.ownership_token == claim.token
    assert global_job.lease_live(job) and not global_job.lease_live(job, now=(job.lease_until or 0) + 1)
    status = read_status(conn)
    assert isinstance(status, Status) and status.phase2.status is JobStatus.RUNNING
    # ``memtui status --json``: the same keys and values as before the typed model
    st = collect_status(conn)
    assert list(st) == [
        "threads",
        "threads_by_source",
        "archived_threads",
        "files",
        "skipped_files",
        "skipped_files_by_reason",
        "skipped_lines",
        "stage1",
        "stage1_outcomes",
        "stage1_failures",
        "tokens",
        "redactions",
        "outputs",
        "phase2",
        "watermark",
        "citations",
    ]
    assert st["phase2"] == {
        "status": "running",
        "last_error": None,
        "awaiting_review": False,
        "awaiting_run_id": None,
        "last_run": None,
    }
    assert st["tokens"] == {"prompt": 0, "completion": 0}
    assert list(st["stage1"]) == ["pending", "running", "done", "error", "stale_lease", "retry_exhausted"]
    ctx.close()


AMEND_THEN_DIE = """
import os, signal, sys
from memtui.state import global_job
def die(*args, **kwargs):  # the first step after approve's commit
    os.kill(os.getpid(), signal.SIGKILL)
global_job.mark_global_phase2_job_succeeded = die
from memtui.services.context import open_context
from memtui.services.phase2 import review
review.approve(open_context(), run_id=int(sys.argv[1]), amendments={sys.argv[2]: sys.argv[3]})
"""


def test_an_amended_approve_killed_after_its_commit_is_finished_from_its_typed_intent(frozen_clock: int) -> None:
    """The approve's decisions cross the kill as one typed record; the amendment's hunk id resolves again."""
    from memtui.services.review import decide

    ctx = open_context()
    root = ctx.paths.memory_root
    run = _awaiting_run(ctx)
    p = decide.plan(root, run.diff, [], None, reviewed_text=review._reviewed_text(root, run))
    hunk = next(h for h in p.hunks if h.file == "MEMORY.md" and "dry-run" in h.new_text())
    amended = hunk.new_text().replace("dry-run", "dry-run (checked by a person)")
    ctx.close()
    proc = subprocess.run(
        [sys.executable, "-c", AMEND_THEN_DIE, str(run.id), hunk.id[:8], amended],
        env={**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ctx = open_context()
    intent = ctx.conn.execute("SELECT value FROM meta WHERE key=?", (review.INTENT_KEY.format(run.id),)).fetchone()
    decided = review.ApproveIntent.model_validate_json(intent[0])
    assert decided.amendments == {hunk.id[:8]: amended} and decided.except_ids == []
    assert review.review_state(ctx).run is None  # the next start finishes it
    done = review.get_run(ctx.conn, run.id)
    assert done.status == "approved" and done.new_commit == head_commit(root)
    assert "dry-run (checked by a person)" in (Path(root) / "MEMORY.md").read_text(encoding="utf-8")
    kinds = [r[0] for r in ctx.conn.execute("SELECT kind FROM decisions WHERE run_id=?", (run.id,))]
    assert kinds == ["partial_approve"]  # an amended hunk makes the approve a partial one
    ctx.close()


def test_a_stale_lease_is_a_flag_on_the_row_not_words_the_screen_matches() -> None:
    from memtui.tui.screens.rollouts import status_cell

    assert status_cell("running", "", lease_expired=True).plain == "stale lease"
    # the words alone no longer decide: a reason that reads the same is shown as it is
    assert status_cell("running", "lease expired").plain.endswith("lease expired")
