"""A person's lines are theirs: lines written inside the offline merge's generated block of MEMORY.md (committed or
not) are binding input; no offline run proposes removing them unless a forget request targets them. Lines of a
stage-1 memory since deleted are not mistaken for a person's (tests/test_phase2_review.py checks they leave)."""

from __future__ import annotations

import pytest

from memtui.domain.tasks import task_id
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.offline import BEGIN, END
from memtui.services.phase2.person_lines import keep_person_lines, person_lines
from memtui.services.review.hunks import parse_diff
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
TA, TB = task_id(A), task_id(B)  # the tasks' stable ids
OWN = "- deploys go out on tuesdays only, never on fridays"
GROUP_LINE = "- the person's note under the task group heading"


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    add_output(c.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one\n- alpha rule two")
    assert run_phase2(c, offline=True, auto_approve=True).outcome == "approved"
    yield c
    c.close()


def _write_own_lines(root) -> None:
    memory = root / "MEMORY.md"
    text = memory.read_text()
    assert BEGIN in text and f"- alpha rule one [Task {TA}]" in text
    text = text.replace(f"- alpha rule one [Task {TA}]\n", f"- alpha rule one [Task {TA}]\n{OWN}\n")
    text = text.replace("scope: sessions run in /work/proj\n", f"scope: sessions run in /work/proj\n{GROUP_LINE}\n")
    memory.write_text(text)


def _removed(diff: str) -> list[str]:
    return [line[1:] for f in parse_diff(diff) for h in f.hunks for line in h.text.split("\n") if line.startswith("-")]


@pytest.mark.parametrize("committed", [True, False])
def test_8_the_next_offline_run_keeps_a_persons_lines(ctx, committed):
    root = ctx.paths.memory_root
    _write_own_lines(root)
    if committed:
        review.commit_manual_edit(ctx, "my own rules")
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- beta rule", cwd="/work/other")
    result = run_phase2(ctx, offline=True, force=True)
    assert result.outcome == "awaiting_review", result
    run = review.pending_run(ctx.conn)
    removed = _removed(run.diff)
    for own in (OWN, GROUP_LINE):
        assert own not in removed  # the old offline merge proposed removing each of them
    memory = (root / "MEMORY.md").read_text()
    assert f"- alpha rule one [Task {TA}]\n{OWN}\n" in memory  # back after the line it followed
    assert GROUP_LINE in memory
    assert f"- beta rule [Task {TB}]" in memory  # and the run still did its work


def test_8_a_forget_request_still_removes_a_persons_line(ctx):
    root = ctx.paths.memory_root
    _write_own_lines(root)
    review.commit_manual_edit(ctx, "my own rules")
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- forget: the tuesday rule -> deploys go out on tuesdays only")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    assert OWN not in (root / "MEMORY.md").read_text()
    assert GROUP_LINE in (root / "MEMORY.md").read_text()


def test_person_lines_are_put_back_after_their_anchor_or_at_the_end_of_their_group():
    old = f"{BEGIN}\n# Task Group: /a\n- gen one [Task 1]\n- mine\n- mine too\n# Task Group: /b\n- gone [Task 2]\n- b's own\n{END}\n"
    machine = {"# Task Group: /a", "- gen one [Task 1]", "# Task Group: /b", "- gone [Task 2]"}
    kept = person_lines(old, lambda line: line in machine, BEGIN, END)
    assert [p.text for p in kept] == ["- mine", "- mine too", "- b's own"]
    new = f"{BEGIN}\n# Task Group: /a\n- gen one [Task 3]\n# Task Group: /b\n- other [Task 4]\n\n{END}\n"
    out = keep_person_lines(new, kept, END, lambda line: False)
    assert (
        out
        == f"{BEGIN}\n# Task Group: /a\n- gen one [Task 3]\n- mine\n- mine too\n# Task Group: /b\n- other [Task 4]\n- b's own\n\n{END}\n"
    )
