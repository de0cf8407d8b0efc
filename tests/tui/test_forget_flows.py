"""Pilot tests: a decision taken in the UI refreshes the search index at once (the rejected text leaves the index
and its FTS5 segments without waiting for a search from the CLI)."""

from __future__ import annotations

from pathlib import Path

from memtui import search
from memtui.context import open_context
from memtui.tui.screens.dialogs import TextPromptModal
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
        search.refresh_memory_index(ctx.conn, root)  # the pending run's files are indexed, as a search would
    finally:
        ctx.close()
    assert _memory_docs(ui_home) > 0
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
    assert _memory_docs(ui_home) == 0  # the old main kept them until the next search from the CLI
