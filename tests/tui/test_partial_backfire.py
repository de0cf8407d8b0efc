"""Partial approval that cannot backfire, in the UI (issue 33.2): what leaving a generated input out means, said when
it is left out; no amendment of a regenerated file; the review names the rejection behind a change; the History
screen lifts it."""

from __future__ import annotations

import os
from pathlib import Path

from textual.widgets import Button, DataTable

from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.review import decide
from memtui.services.review.hunks import hunks_of
from memtui.tui.screens.choice import ChoiceModal
from memtui.tui.screens.dialogs import TextAreaModal
from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.widgets.diff_view import DiffView
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context
from tests.tui.conftest import SIZE, app_for, settle
from tests.tui.test_partial_references import new_task_run

C = "0194f5a6-89ab-7cde-8123-456789abcdf1"


async def _review(pilot) -> ReviewScreen:
    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen) and screen.awaiting
    return screen


async def test_a_generated_input_says_what_leaving_it_out_means_and_offers_no_amendment(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await _review(pilot)
        diff = screen.query_one(DiffView)
        while diff.current_path != "raw_memories.md":
            await pilot.press("right_square_bracket")
        await pilot.press("e")
        await pilot.pause()
        assert not isinstance(app.screen, TextAreaModal)  # the old screen opened the editor; the next run undid it
        assert any("raw_memories.md is rendered from the memories" in n.message for n in app._notifications)
        await pilot.press("space")
        await pilot.pause()
        assert any("keeps it out of this version only" in n.message for n in app._notifications)
        assert "left out for now" in str(diff.current_hunk.border_subtitle)


def _run_shaped_by_a_rejection() -> int:
    """A new task left out (remembered), then a run the rejection keeps it out of: returns the rejection's id."""
    new_task_run()
    ctx = context()
    beta = next(h for h in hunks_of(review.pending_run(ctx.conn).diff) if h.file == "MEMORY.md" and "beta" in h.text)
    review.approve(ctx, except_ids=[beta.id], reason="not this task")
    add_output(ctx.conn, C, FROZEN_NOW - 30, raw="- gamma rule", cwd="/work/third")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    (row,) = decide.remembered_rejections(ctx.conn)
    ctx.close()
    return row.id


async def test_the_review_names_the_rejection_behind_a_change_and_history_lifts_it(frozen_clock) -> None:
    rid = _run_shaped_by_a_rejection()
    app = app_for(Path(os.environ["MEMTUI_HOME"]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        meta = str(screen.query_one("#review-meta").render())
        assert "MEMORY.md: left out '- beta" in meta and "because you rejected it on 2026-07-10 (run 2)" in meta
        assert f"`memtui review lift {rid}`" in meta and "l lifts a rejection" in meta
        await pilot.press("6")
        await settle(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen)
        row = next(i for i, d in enumerate(history.decisions) if d.kind == "partial_approve")
        history.query_one("#decisions", DataTable).move_cursor(row=row)
        await settle(pilot)
        assert "remembered: later runs keep these out (l lifts)" in str(history.query_one("#decision-detail").render())
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal) and "Lift a rejection" in app.screen.title_text
        app.screen.query_one(f"#choice-{rid}", Button).press()
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        assert isinstance(app.screen, HistoryScreen)
        assert history.decisions[0].kind == "lift"
    ctx = context()
    assert decide.remembered_rejections(ctx.conn) == []
    ctx.close()
