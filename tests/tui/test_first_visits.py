"""A first visit to a screen shows at once that the key was taken: the new screen, with a loading sign over the part
its data fills, while that data loads in a worker (issue 33.7). The loads are held on a gate, not timed."""

from __future__ import annotations

import html
import threading
from pathlib import Path

import pytest
from textual.screen import Screen
from textual.widgets import LoadingIndicator

from memtui.services.context import Context
from memtui.tui.screens.health import HealthScreen
from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.jobs import JobsScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.rollouts import RolloutsScreen
from tests.support.waiting import HANG_GUARD
from tests.tui.conftest import SIZE, app_for, settle, wait_for


class Gate:
    """Holds every state connection a worker thread opens (each screen's loader opens one) until ``open``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release = threading.Event()
        self.reached = threading.Event()  # a loader is waiting at the gate
        real = Context.new_conn

        def new_conn(ctx: Context):  # type: ignore[no-untyped-def]
            if threading.current_thread() is not threading.main_thread():
                self.reached.set()
                assert self.release.wait(HANG_GUARD), "the test never opened the gate"
            return real(ctx)

        monkeypatch.setattr(Context, "new_conn", new_conn)

    def open(self) -> None:
        self.release.set()


def _painted_loading(screen: Screen) -> bool:
    """The screen as painted shows Textual's loading indicator: its five dots, or its words without animations."""
    painted = html.unescape(screen.app.export_screenshot())
    return painted.count("\u25cf") >= 5 or "Loading..." in painted


def _shows_loading(screen: Screen, selector: str) -> bool:
    part = screen.query_one(selector)
    return bool(part.loading) and isinstance(part._cover_widget, LoadingIndicator)


@pytest.mark.parametrize(
    ("key", "screen_type", "part"),
    [
        ("2", JobsScreen, "#jobs"),
        ("3", ReviewScreen, "#review-body"),
        ("6", HistoryScreen, "#history-body"),
        ("7", HealthScreen, "#health-body"),
    ],
)
async def test_a_first_visit_paints_the_new_screen_with_a_loading_sign(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch, key: str, screen_type: type[Screen], part: str
) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # the first screen loaded, the screen modules warmed
        gate = Gate(monkeypatch)
        try:  # the gate opens before the app closes (it waits for its workers)
            await pilot.press(key)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, screen_type)  # the key was taken: the new screen is up...
            assert _shows_loading(screen, part)  # ...saying its data is on the way
            assert _painted_loading(screen)
            assert gate.reached.wait(HANG_GUARD)  # and the data is really still loading, held at the gate
            assert _shows_loading(screen, part)
        finally:
            gate.open()
        await settle(pilot)
        assert not _shows_loading(screen, part)
        assert not _painted_loading(screen)


async def test_the_first_screen_shows_its_loading_sign_until_the_rows_arrive(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(monkeypatch)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        try:  # the gate opens before the app closes (it waits for its workers)
            await wait_for(pilot, lambda: isinstance(app.screen, RolloutsScreen) and app.screen.is_mounted)
            await pilot.pause()
            assert _shows_loading(app.screen, "#rollouts")
            assert _painted_loading(app.screen)
        finally:
            gate.open()
        await settle(pilot)
        assert not _shows_loading(app.screen, "#rollouts")
        assert app.screen.query_one("#rollouts").row_total > 0
