"""One navigation model: j/k (and g/G) move every list, table and pane on every screen; enter opens; number keys
reach their screen from anywhere, closing what was opened on top of it. Pilot at 80x24."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.containers import ScrollableContainer
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Input, OptionList, TextArea

from memtui.tui.screens.detail import RolloutDetailScreen
from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.search import SearchScreen
from memtui.tui.widgets.evidence_pane import EvidencePane
from tests.tui.conftest import app_for, settle
from tests.tui.homes import ANSWER, T_DOCS

NARROW = (80, 24)


async def _keys(pilot: Pilot, *keys: str) -> None:
    await settle(pilot)
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def _citations(pilot: Pilot) -> None:
    await _keys(pilot, "5")
    pilot.app.screen.set_answer(ANSWER)  # type: ignore[attr-defined]


async def _detail(pilot: Pilot) -> None:
    pilot.app.open_rollout(T_DOCS)  # type: ignore[attr-defined]


async def _search(pilot: Pilot) -> None:
    pilot.app.open_search("checkout")  # type: ignore[attr-defined]


async def _file(pilot: Pilot) -> None:
    pilot.app.open_cited("MEMORY.md", 1, 3)  # type: ignore[attr-defined]


async def _log(pilot: Pilot) -> None:
    for n in range(3):
        pilot.app.notify(f"note {n}")
    await _keys(pilot, "ctrl+n")


PLACES: dict[str, Callable[[Pilot], Awaitable[None]]] = {
    "rollouts": lambda p: _keys(p),
    "jobs": lambda p: _keys(p, "2"),
    "review": lambda p: _keys(p, "3"),
    "memory": lambda p: _keys(p, "4"),
    "citations": _citations,
    "history": lambda p: _keys(p, "6"),
    "rollout_detail": _detail,
    "search": _search,
    "file_view": _file,
    "task_log": lambda p: _log(p),
    "help": lambda p: _keys(p, "f1"),
}


def _position(widget: Widget) -> tuple[object, bool]:
    """Where the widget's cursor (or scroll) is, and whether j can move it at all."""
    if isinstance(widget, DataTable):
        if widget.cursor_type == "none":
            return widget.scroll_y, widget.max_scroll_y > 0
        return widget.cursor_row, widget.row_count >= 2
    if isinstance(widget, OptionList):
        enabled = sum(not widget.get_option_at_index(i).disabled for i in range(widget.option_count))
        return widget.highlighted, enabled >= 2
    if isinstance(widget, TextArea):
        return widget.cursor_location, widget.document.line_count >= 2
    return widget.scroll_y, widget.max_scroll_y > 0


def _lists(screen: Widget) -> list[Widget]:
    """The screen's focusable lists, tables and read-only panes (editable text takes j and k as letters)."""
    out = []
    for widget in screen.query("*"):
        if not (widget.focusable and widget.display and widget.visible):
            continue
        if isinstance(widget, Input) or (isinstance(widget, TextArea) and not widget.read_only):
            continue
        if isinstance(widget, DataTable | OptionList | TextArea | ScrollableContainer):
            out.append(widget)
    return out


@pytest.mark.parametrize("place", list(PLACES))
async def test_every_focusable_list_moves_with_j_and_k(place: str, snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await PLACES[place](pilot)
        await settle(pilot)
        screen = app.screen
        lists = _lists(screen)
        assert lists, f"{place}: no focusable list"
        moved = 0
        for widget in lists:
            bindings = widget._bindings.key_to_bindings
            assert {"j", "k", "g", "G"} <= set(bindings), f"{place}: {widget!r} lacks j/k/g/G"
            widget.focus()
            await pilot.pause()
            if not _position(widget)[1]:
                continue
            await pilot.press("g")  # from the top: j goes down, k comes back
            await pilot.pause()
            start = _position(widget)[0]
            await pilot.press("j")
            await pilot.pause()
            assert _position(widget)[0] != start, f"{place}: j did not move {widget!r}"
            await pilot.press("k")
            await pilot.pause()
            assert _position(widget)[0] == start, f"{place}: k did not move {widget!r} back"
            await pilot.press("G")
            await pilot.pause()
            assert _position(widget)[0] != start, f"{place}: G did not move {widget!r}"
            moved += 1
            assert app.screen is screen, f"{place}: j/k on {widget!r} left the screen"
        assert moved, f"{place}: nothing to move (the fixture home should fill at least one list)"


async def test_v_j_enter_opens_the_second_evidence_entry(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await _keys(pilot, "3")
        pane = app.screen.query_one(EvidencePane)
        assert len(pane.evidence) >= 2
        second = pane.evidence[1]
        await _keys(pilot, "v", "j", "enter")
        detail = app.screen
        assert isinstance(detail, RolloutDetailScreen) and detail.thread_id == second.thread_id


async def test_history_table_moves_with_j_k_g_and_G(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await _keys(pilot, "6")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#decisions", DataTable)
        assert table.has_focus and table.row_count >= 3
        await _keys(pilot, "j")
        assert table.cursor_row == 1
        await _keys(pilot, "G")
        assert table.cursor_row == table.row_count - 1
        await _keys(pilot, "g")
        assert table.cursor_row == 0


async def test_a_number_key_returns_through_the_stack(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await _keys(pilot, "3", "v", "enter")  # a rollout opened from the review's evidence
        assert isinstance(app.screen, RolloutDetailScreen)
        await _keys(pilot, "3")
        assert isinstance(app.screen, ReviewScreen) and len(app.screen_stack) == 1
        # from a search opened over the review, through the rollout it opened, to the Rollouts screen and back
        app.open_search("checkout")
        await _keys(pilot)
        assert isinstance(app.screen, SearchScreen)
        await _keys(pilot, "down", "enter")
        assert not isinstance(app.screen, SearchScreen)
        await _keys(pilot, "1")
        assert app.current_mode == "rollouts" and len(app.screen_stack) == 1
        await _keys(pilot, "3")
        assert isinstance(app.screen, ReviewScreen) and len(app.screen_stack) == 1
        # help closes on the way; a question (a dialog) keeps the key until it is answered
        await _keys(pilot, "f1", "6")
        assert isinstance(app.screen, HistoryScreen)
        await _keys(pilot, "3", "x")
        dialog = app.screen
        await _keys(pilot, "escape")
        assert isinstance(app.screen, ReviewScreen) and dialog is not app.screen
