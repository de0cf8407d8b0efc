"""The global search screen (command palette) and the lint line of the review and the memory editor."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, OptionList

from memtui.tui.screens.detail import RolloutDetailScreen
from memtui.tui.screens.file_view import FileViewScreen
from memtui.tui.screens.search import SearchScreen
from memtui.tui.widgets.lint_line import LintLine
from tests.tui.conftest import SIZE, app_for, settle


async def test_search_from_the_palette_opens_the_memory_hit_at_its_line(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"search memory", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        app.screen.query_one("#search-input", Input).value = "terraform plan"
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and screen.hits
        first = screen.hits[0]
        assert first.kind == "memory" and first.source == "MEMORY.md"
        assert "terraform" in first.snippet.lower()
        assert screen.query_one("#search-hits", OptionList).option_count == len(screen.hits)
        screen.query_one("#search-hits", OptionList).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FileViewScreen)
        assert app.screen.label == "MEMORY.md" and app.screen.line_start == first.line


async def test_a_message_hit_opens_the_rollout_at_its_item(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_search("checkout")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        messages = [i for i, h in enumerate(screen.hits) if h.kind == "message"]
        index = max(messages, key=lambda i: screen.hits[i].item or 0)  # not item 1: the jump must move
        hit = screen.hits[index]
        assert hit.item is not None and hit.item > 1
        hits = screen.query_one("#search-hits", OptionList)
        hits.focus()
        hits.highlighted = index
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetailScreen)
        assert detail.thread_id == hit.source and detail.item == hit.item


async def test_search_without_a_match_says_so(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_search("nothinglikethisword")
        await settle(pilot)
        assert app.screen.hits == []  # type: ignore[attr-defined]
        assert "no match" in str(app.screen.query_one("#search-meta").render())


async def test_review_and_editor_show_the_lint_line(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, widget_id in (("3", "#review-lint"), ("4", "#memory-lint")):
            await pilot.press(key)
            await settle(pilot)
            line = app.screen.query_one(widget_id, LintLine)
            assert str(line.render()).startswith("lint: ")
