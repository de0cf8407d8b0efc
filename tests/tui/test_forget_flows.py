"""Pilot tests: a decision taken in the UI refreshes the search index at once, without waiting for a search from the
CLI. The index holds approved files only: a pending run is never in it; approving puts its text in, a reject keeps
it out."""

from __future__ import annotations

from pathlib import Path

from memtui.services import search
from memtui.services.context import open_context
from memtui.tui.screens.dialogs import ConfirmModal, TextPromptModal
from memtui.tui.screens.review import ReviewScreen
from tests.tui.conftest import SIZE, app_for, settle
from tests.tui.test_curation_flows import _review


def _memory_docs(home: Path) -> int:
    ctx = open_context(home=home)
    try:
        return ctx.conn.execute("SELECT COUNT(*) FROM search_docs WHERE kind='memory'").fetchone()[0]
    finally:
        ctx.close()


async def test_rejecting_in_the_ui_takes_the_runs_text_out_of_the_search_index(ui_home: Path) -> None:
    root = ui_home / "memories"
    ctx = open_context(home=ui_home)
    try:
        search.refresh_memory_index(ctx.conn, root)  # as a search would: the pending run's files stay out
    finally:
        ctx.close()
    assert _memory_docs(ui_home) == 0
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await _review(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press(*"not useful", "enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        assert isinstance(app.screen, ReviewScreen) and not app.screen.awaiting
    assert not (root / "MEMORY.md").exists()
    assert _memory_docs(ui_home) == 0


async def test_approving_in_the_ui_puts_the_runs_text_in_the_search_index_at_once(ui_home: Path) -> None:
    assert _memory_docs(ui_home) == 0
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await _review(pilot)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        assert isinstance(app.screen, ReviewScreen) and not app.screen.awaiting
    assert _memory_docs(ui_home) > 0  # no search ran: the approve refreshed the index
