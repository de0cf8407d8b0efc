"""Partial approvals stay consistent: leaving hunks out never commits a ``[Task n]``, a duplicate task heading or a
rollout-summary link that points nowhere (or at another group's task), and the committed tree passes the artifact
validation of a full run. The CLI refuses and names the fix; the TUI's dialog is tested in tests/tui."""

from __future__ import annotations

import pytest

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import approved
from memtui.cli import main
from memtui.services.phase2 import review
from memtui.services.phase2.workspace import validate_artifact_texts
from memtui.services.review.hunks import parse_diff
from memtui.services.review.references import dangling
from tests.test_phase2_support import context
from tests.tui.test_partial_references import dangling_run, new_task_run


@pytest.fixture
def ctx(frozen_clock):
    dangling_run()
    c = context()
    yield c
    c.close()


def _hunks(ctx) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in parse_diff(review.pending_run(ctx.conn).diff):
        out.setdefault(f.path, []).extend(h.id for h in f.hunks)
    return out


@pytest.mark.parametrize("which", [0, 1])
def test_7_leaving_out_one_of_two_dependent_hunks_is_refused_with_the_fix(ctx, capsys, which):
    root = ctx.paths.memory_root
    group, refs = _hunks(ctx)["MEMORY.md"]
    left_out, other = (group, refs) if which == 0 else (refs, group)
    head = baseline.head_commit(root)
    if which == 1:  # the bullet that points at the task may go alone: nothing then points at a missing task
        assert review.check_partial(ctx, except_ids=[left_out]).ok
        return
    assert main(["review", "approve", "--except", left_out, "--reason", "x"]) == 1
    err = capsys.readouterr().err
    assert "references dangling" in err and "[Task 77]" in err  # the old approve committed them silently
    assert f"take back hunk(s) {left_out}" in err and f"also leave out hunk(s) {other}" in err
    assert baseline.head_commit(root) == head and review.pending_run(ctx.conn) is not None

    result = review.approve(ctx, except_ids=[group, refs], reason="not the new group")  # the fix: both out
    assert result.hunks_out == 2
    memory = approved(root)
    assert dangling(memory.read_text, memory.is_file) == []
    assert validate_artifact_texts(memory.read_text("MEMORY.md"), memory.read_text("memory_summary.md")) is None


def test_leaving_out_a_new_tasks_hunk_is_accepted_and_renumbers_nothing(frozen_clock):
    """Issue 33.3: a new session's task no longer renumbers the tasks after it, so a person can say no to that one
    memory without rejecting the run."""
    new_task_run()
    ctx = context()
    root = ctx.paths.memory_root
    before = approved(root).read_text("MEMORY.md")
    hunks = _hunks(ctx)["MEMORY.md"]
    new = next(
        h
        for f in parse_diff(review.pending_run(ctx.conn).diff)
        if f.path == "MEMORY.md"
        for h in f.hunks
        if "beta" in h.text
    )
    assert review.check_partial(ctx, except_ids=[new.id]).ok, hunks
    review.approve(ctx, except_ids=[new.id], reason="I don't want this memory")
    after = approved(root).read_text("MEMORY.md")
    assert "beta" not in after and after.count("alpha rule one") == 1
    old_task = next(line for line in before.splitlines() if line.startswith("## Task "))
    assert old_task in after  # the alpha task kept its id
    ctx.close()


def test_7_a_summary_link_to_a_left_out_rollout_summary_is_refused(frozen_clock):
    new_task_run()
    ctx = context()
    hunks = _hunks(ctx)
    new_summary = next(ids[0] for path, ids in hunks.items() if path.startswith("rollout_summaries/"))
    check = review.check_partial(ctx, except_ids=[new_summary])
    assert not check.ok and {d.file for d in check.dangling} == {"MEMORY.md", "memory_summary.md"}
    assert check.take_back == [new_summary]
    with pytest.raises(review.DanglingReferences):
        review.approve(ctx, except_ids=[new_summary])
    ctx.close()


def test_7_a_tree_without_the_summary_fails_the_full_runs_validation(frozen_clock):
    from memtui.services.phase2.consolidate import run_phase2
    from tests.conftest import FROZEN_NOW
    from tests.test_phase2_support import add_output

    ctx = context()
    add_output(ctx.conn, "0194f5a6-89ab-7cde-8123-456789abcdef", FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True).outcome == "awaiting_review"  # the first run: every file is new
    summary = _hunks(ctx)["memory_summary.md"]
    with pytest.raises(review.DanglingReferences) as refused:
        review.approve(ctx, except_ids=summary)
    assert "memory_summary.md is missing" in str(refused.value) and refused.value.check.take_back == summary
    ctx.close()
