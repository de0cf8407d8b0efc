"""TUI fixtures: one deterministic home per session, copied per test; apps without blink or background work."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed, WorkerState

from memtui import clock
from memtui.tui.app import MemtuiApp, make_app
from tests.tui.homes import FROZEN_NOW, GIT_DATE, build_ui_home

SIZE = (120, 36)


@pytest.fixture(scope="session")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("template") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_AUTHOR_DATE", GIT_DATE)
        mp.setenv("GIT_COMMITTER_DATE", GIT_DATE)
        clock.freeze(FROZEN_NOW)
        try:
            build_ui_home(home).close()
        finally:
            clock.reset()
    yield home


@pytest.fixture
def ui_home(template_home: Path, tmp_path: Path, frozen_clock: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_AUTHOR_DATE", GIT_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", GIT_DATE)
    home = tmp_path / "ui-home"
    shutil.copytree(template_home, home, symlinks=True)
    monkeypatch.setenv("MEMTUI_HOME", str(home))
    return home


def app_for(home: Path) -> MemtuiApp:
    return make_app(home=home, ingest_on_start=False, cursor_blink=False, status_refresh=False)


async def settle(pilot: Pilot) -> None:
    """Wait until no worker runs and the screen has refreshed (workers start workers: loop a few times)."""
    app = pilot.app
    for _ in range(10):
        for worker in list(app.workers):
            try:
                await worker.wait()
            except (WorkerCancelled, WorkerFailed):
                pass  # a superseded page load, or a failure the app has shown
        await pilot.pause()
        if not any(w.is_running or w.state == WorkerState.PENDING for w in app.workers):
            break
    await pilot.pause()
