"""The approve dialog shows which references a partial approval would leave dangling, and takes the fix."""

from __future__ import annotations

import os
from pathlib import Path

from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.tui.screens.choice import ChoiceModal
from memtui.tui.screens.dialogs import TextPromptModal
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.widgets.diff_view import DiffView
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context
from tests.tui.conftest import SIZE, app_for, settle

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"


def renumbering_run() -> None:
    """A run that adds a task group in front of another, renumbering its task: two hunks of MEMORY.md that only
    make sense together."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one\n- alpha rule two")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- beta rule\n- beta more", cwd="/work/other")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    ctx.close()


async def test_7_the_approve_dialog_names_dangling_references_and_takes_the_fix(frozen_clock) -> None:
    renumbering_run()
    home = Path(os.environ["MEMTUI_HOME"])
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.awaiting
        first = screen.query_one(DiffView).current_hunk
        assert first is not None and first.hunk.file == "MEMORY.md"
        await pilot.press("space")  # leave out the hunk that adds the group and renumbers the heading
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ChoiceModal)
        assert "[Task 2] names no task of this file" in app.screen.body and first.hunk.id in app.screen.body
        await pilot.press("enter")  # the focused button: take the hunk back
        await settle(pilot)
        assert first.hunk.id not in screen.rejected and not first.has_class("-rejected")
        assert not isinstance(app.screen, TextPromptModal)  # nothing left out any more: the plain confirm
        await pilot.press("y")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    ctx = context()
    assert review.pending_run(ctx.conn) is None
    ctx.close()
