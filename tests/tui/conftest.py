"""TUI fixtures: one deterministic home per session, copied per test; apps without blink or background work."""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerCancelled, WorkerFailed, WorkerState

from memtui.core import clock
from memtui.services.context import Context
from memtui.tui.app import MemtuiApp, make_app
from tests.support.waiting import HANG_GUARD
from tests.tui.homes import FROZEN_NOW, GIT_DATE, build_snapshot_home, build_ui_home

SIZE = (120, 36)


def _template(factory: pytest.TempPathFactory, build: Callable[[Path], Context]) -> Path:
    home = factory.mktemp("template") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_AUTHOR_DATE", GIT_DATE)
        mp.setenv("GIT_COMMITTER_DATE", GIT_DATE)
        clock.freeze(FROZEN_NOW)
        try:
            build(home).close()
        finally:
            clock.reset()
    return home


@pytest.fixture(scope="session")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows plus a real offline Phase 2 run awaiting review (approve and reject act on it)."""
    return _template(tmp_path_factory, build_ui_home)


@pytest.fixture(scope="session")
def snapshot_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows plus fixed memory files and a fixed run awaiting review: snapshots track the UI only."""
    return _template(tmp_path_factory, build_snapshot_home)


def _copy(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_AUTHOR_DATE", GIT_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", GIT_DATE)
    home = Path(os.environ["HOME"]) / ".memtui"  # where a person's home is: the screens show it as ~/.memtui
    shutil.copytree(template, home, symlinks=True)
    monkeypatch.setenv("MEMTUI_HOME", str(home))
    return home


@pytest.fixture
def ui_home(template_home: Path, tmp_path: Path, frozen_clock: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _copy(template_home, tmp_path, monkeypatch)


@pytest.fixture
def snapshot_home(snapshot_template: Path, tmp_path: Path, frozen_clock: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    return _copy(snapshot_template, tmp_path, monkeypatch)


def app_for(home: Path) -> MemtuiApp:
    """A still app: no blinking cursor and no expiring toast (both run on the wall clock), no background work."""
    return make_app(home=home, ingest_on_start=False, cursor_blink=False, toasts_expire=False, status_refresh=False)


def assert_still(app: MemtuiApp) -> None:
    """What a screenshot of ``app`` shows depends on no timer: the focused cursor does not blink."""
    assert not app.cursor_blink and not app.toasts_expire
    focused = app.focused
    assert not getattr(focused, "cursor_blink", False), f"{focused!r} blinks"


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """The plugin's ``snap_compare`` for still apps only: every screenshot is checked to depend on no timer, so a
    snapshot cannot pass on a quiet machine and fail on a loaded one."""

    def compare(
        app: MemtuiApp, *, terminal_size: tuple[int, int], run_before: Callable[[Pilot], Awaitable[None]] | None = None
    ) -> bool:
        assert isinstance(app, MemtuiApp), "snapshots take an app made by app_for()"
        assert not app.cursor_blink and not app.toasts_expire, "snapshots take an app made by app_for()"

        async def checked(pilot: Pilot) -> None:
            if run_before is not None:
                await run_before(pilot)
            assert_still(pilot.app)  # type: ignore[arg-type]

        return snap_compare(app, terminal_size=terminal_size, run_before=checked)

    return compare


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


async def wait_for(pilot: Pilot, condition: Callable[[], object], timeout: float = HANG_GUARD) -> None:
    """Pause until ``condition()`` holds (a mount finishing on a loaded machine); ``timeout`` only stops a hang."""
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition never held")
