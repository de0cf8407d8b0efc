"""The offline flow end to end with real git and SQLite: awaiting review, approve, reject, cooldown, hand edits."""

from __future__ import annotations

import json

import pytest

from memtui.adapters.memroot.baseline import head_commit, run_git
from memtui.adapters.memroot.files import DIFF_FILENAME
from memtui.cli import main
from memtui.core import clock
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.state.global_job import read_global_job
from memtui.state.status import collect_status
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import DAY, add_output, context, git_commits, git_objects

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    yield c
    c.close()


def files(root):
    return {
        p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    }


def test_offline_run_awaits_review_blocks_new_runs_and_approve_commits_one_baseline(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    result = run_phase2(ctx, offline=True)
    assert result.outcome == "awaiting_review" and result.offline and result.selected == 1
    assert ("A", "MEMORY.md") in result.stat and ("A", "memory_summary.md") in result.stat
    run = review.pending_run(ctx.conn)
    assert run is not None and run.id == result.run_id and run.offline and run.selected == [(A, FROZEN_NOW - 3600)]
    assert "+# Task Group: /work/proj" in run.diff and not (root / DIFF_FILENAME).exists()
    status = collect_status(ctx.conn)
    assert status["phase2"]["awaiting_review"] and status["phase2"]["status"] == "pending"
    assert read_global_job(ctx.conn).lease_until is None

    blocked = run_phase2(ctx, offline=True, force=True)
    assert (blocked.outcome, blocked.reason) == ("skipped", f"awaiting review: run #{run.id}")
    with pytest.raises(review.ReviewError):
        review.commit_manual_edit(ctx, "not now")

    (root / DIFF_FILENAME).write_text("left over: must never be committed")
    decided = review.approve(ctx)
    assert decided.status == "approved" and decided.watermark == FROZEN_NOW - 3600
    assert not (root / DIFF_FILENAME).exists()
    assert git_commits(root) == [decided.commit] == [head_commit(root)]
    assert run_git(root, "log", "--format=%P").strip() == ""
    assert DIFF_FILENAME not in run_git(root, "ls-tree", "-r", "--name-only", "HEAD")
    assert "must never be committed" not in git_objects(root)
    flags = ctx.conn.execute(
        "SELECT selected_for_phase2, selected_for_phase2_source_updated_at FROM stage1_outputs"
    ).fetchone()
    assert tuple(flags) == (1, FROZEN_NOW - 3600)
    status = collect_status(ctx.conn)
    assert not status["phase2"]["awaiting_review"] and status["watermark"] == FROZEN_NOW - 3600
    with pytest.raises(review.ReviewError):
        review.approve(ctx)

    assert run_phase2(ctx, offline=True).reason.startswith("cooldown")
    again = run_phase2(ctx, offline=True, force=True)
    assert again.outcome == "no_changes" and review.workspace_diff(ctx) == ([], "")


def test_watermark_is_max_of_claimed_and_inputs_and_never_moves_back(ctx):
    from memtui.state.jobs import enqueue_global_consolidation

    enqueue_global_consolidation(ctx.conn, FROZEN_NOW + 999)  # claimed watermark above every input
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True)
    assert review.approve(ctx).watermark == FROZEN_NOW + 999


def test_approve_leaves_no_trace_of_deleted_inputs_in_git(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- private-marker-7731 appears only here")
    run_phase2(ctx, offline=True)
    review.approve(ctx)
    assert "private-marker-7731" in git_objects(root)
    ctx.conn.execute("DELETE FROM stage1_outputs WHERE thread_id=?", (A,))
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    result = run_phase2(ctx, offline=True, force=True)
    assert any(s == "D" and p.startswith("rollout_summaries/") for s, p in result.stat), result.stat
    review.approve(ctx)
    assert "private-marker-7731" not in git_objects(root)
    assert "private-marker-7731" not in "".join(v.decode() for v in files(root).values())


def test_reject_restores_the_workspace_and_keeps_a_pre_run_hand_edit(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True)
    review.approve(ctx)
    memory = root / "MEMORY.md"
    edited = memory.read_text().replace("# Memory\n", "# Memory\n\n- my own rule: always run ruff\n")
    memory.write_text(edited)  # a person's edit, before the next run
    assert review.workspace_diff(ctx)[0] == [("M", "MEMORY.md")]
    add_output(ctx.conn, B, FROZEN_NOW - 60, cwd="/work/other")
    clock.freeze(FROZEN_NOW + 7 * 3600)
    before = files(root)
    result = run_phase2(ctx, offline=True)
    assert result.outcome == "awaiting_review"
    run = review.pending_run(ctx.conn)
    assert "+- my own rule: always run ruff" in run.input_diff  # the hand edit is part of what the run was given
    assert "/work/other" in memory.read_text() and "my own rule" in memory.read_text()
    decided = review.reject(ctx, "do not merge the other project")
    assert decided.status == "rejected" and sorted(decided.restored) == ["MEMORY.md", "memory_summary.md"]
    after = files(root)
    assert {k: v for k, v in after.items() if k.endswith("MEMORY.md") or k == "memory_summary.md"} == {
        k: v for k, v in before.items() if k.endswith("MEMORY.md") or k == "memory_summary.md"
    }  # the agent's writes are gone, the hand edit is kept
    assert len(after) == len(before) + 1  # the synced inputs stay synced (one more summary)
    assert "/work/other" in (root / "raw_memories.md").read_text()
    assert memory.read_text() == edited
    assert review.get_run(ctx.conn, run.id).reason == "do not merge the other project"
    assert review.pending_run(ctx.conn) is None
    assert run_phase2(ctx, offline=True).outcome == "awaiting_review"  # a rejection starts no cooldown


def test_reject_keeps_a_file_edited_after_the_run(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True)
    (root / "MEMORY.md").write_text("# Memory\n\nrewritten by a person during review\n")
    decided = review.reject(ctx, None)
    assert decided.kept == ["MEMORY.md"] and decided.restored == ["memory_summary.md"]
    assert "during review" in (root / "MEMORY.md").read_text() and not (root / "memory_summary.md").exists()


def test_auto_approve_and_manual_edit_commit(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    result = run_phase2(ctx, offline=True, auto_approve=True)
    assert result.outcome == "approved" and result.commit == review.baseline_commit(ctx)
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "\n- hand-written note\n")
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    (root / "raw_memories.md").write_text("pretend a newer sync happened\n")
    commit = review.commit_manual_edit(ctx, "edit from the TUI")
    assert commit == review.baseline_commit(ctx) and len(git_commits(root)) == 1
    assert review.workspace_diff(ctx)[0] == [("M", "raw_memories.md")]  # pending input stays for the next Phase 2


def test_offline_keeps_hand_written_memory_outside_generated_block(ctx):
    root = ctx.paths.memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# My notes\n\n- written before memtui ever ran\n")
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True, auto_approve=True)
    text = (root / "MEMORY.md").read_text()
    assert text.startswith("# My notes\n\n- written before memtui ever ran\n") and "# Task Group: /work/proj" in text
    (root / "MEMORY.md").write_text(text + "\n- added below the block\n")
    add_output(ctx.conn, B, FROZEN_NOW - 60, cwd="/work/b")
    run_phase2(ctx, offline=True, force=True, auto_approve=True)
    text = (root / "MEMORY.md").read_text()
    assert "written before memtui" in text and "added below the block" in text and "# Task Group: /work/b" in text
    assert text.count("memtui:offline:begin") == 1
    summary = (root / "memory_summary.md").read_text()
    assert summary.startswith("v1\n<!-- memtui:offline:begin") and "\n## User Profile\n" in summary
    for heading in ("## User preferences", "## General Tips", "## What's in Memory", "### /work/b", "### /work/proj"):
        assert heading in summary


def test_stale_inputs_drop_out_of_the_workspace(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True, auto_approve=True)
    clock.freeze(FROZEN_NOW + 31 * DAY)
    result = run_phase2(ctx, offline=True)
    assert result.selected == 0 and any(s == "D" for s, _ in result.stat)
    assert list((root / "rollout_summaries").iterdir()) == []
    assert "No raw memories yet." in (root / "raw_memories.md").read_text()


def test_cli_phase2_and_review(ctx, capsys):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert main(["review", "approve"]) == 1
    assert "no Phase 2 run is awaiting review" in capsys.readouterr().err
    assert main(["phase2", "--offline", "--json"]) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert payload["outcome"] == "awaiting_review" and "selection: 1 memories" in captured.err
    assert main(["review", "show", "--stat"]) == 0
    assert "A MEMORY.md\n" in capsys.readouterr().out
    assert main(["review", "show"]) == 0
    assert "+# Task Group: /work/proj" in capsys.readouterr().out
    assert main(["phase2", "--offline"]) == 0
    assert "skipped: awaiting review" in capsys.readouterr().out
    assert main(["review", "reject", "--reason", "too terse"]) == 0
    assert "rejected run" in capsys.readouterr().out
    assert main(["phase2", "--offline", "--auto-approve"]) == 0
    assert "approved" in capsys.readouterr().out
    assert main(["phase2", "--offline"]) == 0
    assert "skipped: cooldown" in capsys.readouterr().out
    assert main(["phase2", "--offline", "--force"]) == 0
    assert "no changes" in capsys.readouterr().out
