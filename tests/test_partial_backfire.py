"""Partial approval that cannot backfire (issue 33.2), part by part, on the offline pipeline (real git and SQLite).

The whole-run property (any single-hunk leave-out, on the demo's sessions) is tests/test_leave_out_trials.py.
"""

from __future__ import annotations

import json

import pytest

from memtui.adapters.memroot.approved import approved
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.review import decide
from memtui.services.review.hunks import hunks_of
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context
from tests.tui.test_partial_references import new_task_run

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
C = "0194f5a6-89ab-7cde-8123-456789abcdf1"


def _pending_hunks(ctx):
    return hunks_of(review.pending_run(ctx.conn).diff)


def test_a_left_out_rewording_keeps_the_old_line_in_the_next_run(frozen_clock):
    """The old line a left-out hunk would have replaced stays: the next run neither deletes it nor adds the
    rewording, and its review says which rejection kept the old line."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 7200, raw="- alpha rule one\n- the user prefers uv over pip")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one, reworded\n- the user prefers uv over pip")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    change = next(h for h in _pending_hunks(ctx) if h.file == "MEMORY.md" and "reworded" in h.text)
    assert any("alpha rule one [Task" in line for line in change.removed)
    review.approve(ctx, except_ids=[change.id], reason="the old wording is right")
    assert "- alpha rule one [Task" in approved(ctx.paths.memory_root).read_text("MEMORY.md")

    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- beta rule", cwd="/work/other")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    hunks = [h for h in _pending_hunks(ctx) if h.file == "MEMORY.md"]
    assert not any("alpha rule one" in line for h in hunks for line in h.removed)  # the old code deleted it
    assert not any(line.startswith("- alpha rule one, reworded") for h in hunks for line in h.added)
    notes = decide.acted_notes(ctx.conn, review.pending_run(ctx.conn).rejections_acted)
    assert any("reworded" in n and "memtui review lift" in n for n in notes), notes
    assert any("kept 1 approved line(s) in place of a rewording" in n for n in notes), notes
    ctx.close()


def test_structure_is_never_remembered_as_rejected(frozen_clock):
    """Leaving out a new task's hunk remembers its bullets, not its heading, task group, scope, pointer or
    keywords: a later run cannot drop a heading or move a task because of it."""
    new_task_run()
    ctx = context()
    new = next(h for h in _pending_hunks(ctx) if h.file == "MEMORY.md" and "beta" in h.text)
    review.approve(ctx, except_ids=[new.id], reason="not this task")
    (added,) = [json.loads(r[0]) for r in ctx.conn.execute("SELECT added FROM rejected_hunks")]
    assert sorted(x.split(" [Task")[0] for x in added) == [
        "- beta more",
        "- beta rule",
    ]  # the old code: its heading, group, scope too
    ctx.close()


def test_an_amendment_of_a_regenerated_file_is_not_offered(frozen_clock):
    """raw_memories.md is rendered from the memories at every run: an amendment there would be undone by the next
    run without a word, so approve refuses it and says where to make the change."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one")
    assert run_phase2(ctx, offline=True).outcome == "awaiting_review"
    raw = next(h for h in _pending_hunks(ctx) if h.file == "raw_memories.md")
    with pytest.raises(
        review.ReviewError, match=r"raw_memories\.md is rendered from the memories at every Phase 2 run"
    ):
        review.approve(ctx, amendments={raw.id: "# Raw Memories\n\n- my own text\n"})
    assert review.pending_run(ctx.conn) is not None  # nothing approved
    ctx.close()


def test_a_rejection_acts_only_in_its_own_file(frozen_clock):
    """A preference left out of memory_summary.md stays in MEMORY.md, where it was approved, in every later run."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 7200, raw="- alpha rule one")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 3600, raw="User preferences:\n- the user prefers uv over pip")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    summary = [h for h in _pending_hunks(ctx) if h.file == "memory_summary.md" and "uv over pip" in h.text]
    review.approve(ctx, except_ids=[h.id for h in summary])
    assert "uv over pip" in approved(ctx.paths.memory_root).read_text("MEMORY.md")
    add_output(ctx.conn, C, FROZEN_NOW - 60, raw="- gamma rule", cwd="/work/other")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    memory = [h for h in _pending_hunks(ctx) if h.file == "MEMORY.md"]
    assert not any("uv over pip" in line for h in memory for line in h.removed)
    ctx.close()


def test_the_review_can_say_before_approve_which_leave_outs_are_remembered():
    """What the review screen tells a person when they leave a hunk out agrees with what approve records: a memory
    file's hunk with content is remembered; a generated input's, one that only removes lines, and one that only
    adds structure are left out for now."""
    from memtui.services.review.hunks import unified_diff

    def hunk(path: str, old: str, new: str):
        (h,) = hunks_of(unified_diff(path, old, new))
        return h

    base = "# Memory\n\n## Task 1: a\n- keep this [Task 1]\n"
    assert decide.remembered_if_left_out(hunk("MEMORY.md", base, base + "- a new rule [Task 1]\n"))
    assert not decide.remembered_if_left_out(hunk("raw_memories.md", base, base + "- a new rule\n"))
    assert not decide.remembered_if_left_out(hunk("rollout_summaries/x.md", base, base + "- a new rule\n"))
    assert not decide.remembered_if_left_out(hunk("MEMORY.md", base, base.replace("- keep this [Task 1]\n", "")))
    structure = base + "\n## Task 2: b\nscope: sessions run in /w\n\n### keywords\n- b, c\n"
    assert not decide.remembered_if_left_out(hunk("MEMORY.md", base, structure))
    renumbered = base.replace("[Task 1]", "[Task 7]")
    assert not decide.remembered_if_left_out(hunk("MEMORY.md", base, renumbered))


def test_a_left_out_index_entry_takes_its_sub_bullet_along():
    """memory_summary.md's index: an entry kept out takes its `desc: see ...` line with it, so the pointer never ends
    up under another entry."""
    from memtui.services.phase2.offline import drop_rejected

    row = decide.RejectedHunk(
        id=1, run_id=2, hunk_id="h", file="memory_summary.md", content_hash="c", text="@@", added=[], reason=None,
        decided_at=FROZEN_NOW,
    )  # fmt: skip
    rejected = decide.Rejections(by_file={"memory_summary.md": {"beta task: beta": row}})
    text = (
        "#### 2026-07-10\n- alpha task: alpha\n  - desc: see rollout_summaries/a.md\n"
        "- beta task: beta\n  - desc: see rollout_summaries/b.md\n### Older Memory Topics\n- none\n"
    )
    out = drop_rejected(text, "memory_summary.md", rejected, current="v1\n")
    assert out == (
        "#### 2026-07-10\n- alpha task: alpha\n  - desc: see rollout_summaries/a.md\n### Older Memory Topics\n- none\n"
    )
    assert drop_rejected(text, "MEMORY.md", rejected, current="") == text  # another file's rejection: nothing
