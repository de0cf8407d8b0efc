"""Check and act as one step: commit and partial approve commit exactly the tree they checked, and a write that lands
between their check and their own write is refused, never overwritten (the write is injected in that window)."""

from __future__ import annotations

import pytest

from memtui.adapters.memroot import baseline
from memtui.cli import main
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.review import decide
from memtui.services.review.hunks import parse_diff
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
WINDOW_LINE = "- written by another program inside the window\n"


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    add_output(c.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(c, offline=True, auto_approve=True).outcome == "approved"
    yield c
    c.close()


def _write_in_the_window(monkeypatch, module, name, path):
    """Wrap ``module.name`` (a step between the check and the act) so an outside write lands right after it."""
    real = getattr(module, name)

    def step(*args, **kwargs):
        out = real(*args, **kwargs)
        path.write_text(path.read_text() + WINDOW_LINE)
        return out

    monkeypatch.setattr(module, name, step)


@pytest.mark.parametrize("via", ["function", "cli"])
def test_5_commit_commits_exactly_the_tree_it_checked(ctx, monkeypatch, capsys, via):
    root = ctx.paths.memory_root
    memory = root / "MEMORY.md"
    memory.write_text(memory.read_text() + "- the person's reviewed line\n")
    shown = review.review_state(ctx).own_edits
    _write_in_the_window(monkeypatch, baseline, "write_worktree_tree", memory)
    if via == "function":
        review.commit_manual_edit(ctx, "mine", expected_tree=shown.tree)
    else:
        assert main(["review", "commit", "--expect", shown.tree]) == 0, capsys.readouterr().err
    committed = baseline.run_git(root, "show", "HEAD:MEMORY.md")
    assert "the person's reviewed line" in committed
    assert "inside the window" not in committed  # the old commit staged again and committed this unseen line
    assert "inside the window" in memory.read_text()  # not lost either: it is the next pending edit
    assert [p for _, p in review.review_state(ctx).own_edits.stat] == ["MEMORY.md"]


def test_5_partial_approve_refuses_a_write_between_its_check_and_its_write(ctx, monkeypatch):
    root = ctx.paths.memory_root
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- the user deploys with make ship\n- staging runs on fridays")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    run = review.pending_run(ctx.conn)
    hunk = next(h for f in parse_diff(run.diff) for h in f.hunks if f.path == "memory_summary.md")
    summary = root / "memory_summary.md"
    head = baseline.head_commit(root)
    _write_in_the_window(monkeypatch, decide, "apply_to_tree", summary)

    with pytest.raises(review.ChangedSinceRun) as refused:
        review.approve(ctx, except_ids=[hunk.id], reason="not this")
    assert "memory_summary.md" in str(refused.value) and "changed again" in str(refused.value)
    assert "inside the window" in summary.read_text()  # the old approve overwrote it with the decided text
    assert baseline.head_commit(root) == head and review.pending_run(ctx.conn).id == run.id
