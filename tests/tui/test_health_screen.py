"""The Health screen on the demo home (an approved memory, then sessions that cite, restate, correct and contradict
it): snapshots at three sizes and one Pilot test per action."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from memtui.demo.build import build_demo_home
from memtui.services.context import Context, open_context
from memtui.services.health.signals import compute_health
from memtui.services.phase2 import review
from memtui.state.health import Proposal
from tests.tui.conftest import _copy, _template, app_for, settle, wait_for
from tests.tui.test_snapshots import SIZES, steps


def _build_demo(home: Path) -> Context:
    build_demo_home(home.parent)
    return open_context(home=home)


@pytest.fixture(scope="session")
def health_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _template(tmp_path_factory, _build_demo)


@pytest.fixture
def health_home(health_template: Path, tmp_path: Path, frozen_clock: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = _copy(health_template, tmp_path, monkeypatch)
    shutil.rmtree(home / "memories" / ".memories-views", ignore_errors=True)
    return home


def _report(home: Path) -> Any:
    ctx = open_context(home=home)
    try:
        return compute_health(ctx.conn, ctx.paths.memory_root)
    finally:
        ctx.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_health_screen(size: str, health_home: Path, snap_compare: Any) -> None:
    assert snap_compare(app_for(health_home), terminal_size=SIZES[size], run_before=steps("7"))


async def _to_health(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("7")
    await settle(pilot)


async def test_worst_first_and_enter_opens_the_evidence_at_its_item(health_home: Path) -> None:
    from memtui.tui.screens.detail import RolloutDetailScreen

    app = app_for(health_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _to_health(pilot)
        screen = app.screen
        first = screen.report.blocks[0]
        assert first.signals == ["contradicted"] and "Tuesdays" in first.text
        table = screen.query_one("#health-blocks", DataTable)
        assert table.row_count == len(screen.report.blocks)
        await pilot.press("enter")  # to the evidence
        await pilot.press("enter")  # open it
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetailScreen)
        assert (app.screen.thread_id, app.screen.item) == (first.contradicted[0].thread_id, first.contradicted[0].item)


async def test_confirm_renews_last_verified(health_home: Path) -> None:
    app = app_for(health_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _to_health(pilot)
        target = app.screen.report.blocks[0]
        assert target.last_verified is None
        await pilot.press("c")
        await settle(pilot)
    block = next(b for b in _report(health_home).blocks if b.id == target.id)
    assert block.last_verified is not None and block.contradicted == []  # what was seen is settled


@pytest.mark.parametrize(("key", "proposal"), [("u", Proposal.UPDATE), ("d", Proposal.REMOVE)])
async def test_propose_goes_to_the_next_phase2_run(health_home: Path, key: str, proposal: Proposal) -> None:
    app = app_for(health_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _to_health(pilot)
        await pilot.press("down", "down")  # the CHANGELOG line, corrected but not contradicted
        target = app.screen.report.blocks[2]
        await pilot.press(key)
        await settle(pilot)
        assert f"{proposal.value} proposed" in app.screen.query_one("#health-detail").render().plain  # type: ignore[attr-defined]
    assert next(b for b in _report(health_home).blocks if b.id == target.id).proposal == proposal.value


async def test_remove_now_commits_a_persons_edit(health_home: Path) -> None:
    import subprocess

    ctx = open_context(home=health_home)
    review.reject(ctx, "not now")  # remove-now waits for a pending review; decide it first
    ctx.close()
    app = app_for(health_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _to_health(pilot)
        target = app.screen.report.blocks[0]
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await wait_for(pilot, lambda: target.id not in {b.id for b in app.screen.report.blocks})
    committed = subprocess.run(
        ["git", "show", "HEAD:MEMORY.md"], cwd=health_home / "memories", capture_output=True, text=True, check=True
    ).stdout
    assert "Tuesdays" not in committed and "CHANGELOG.md" in committed
