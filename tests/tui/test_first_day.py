"""The first day in the terminal UI (issue 33.1): on a history older than Phase 1's window the Rollouts screen offers
the backfill (how many sessions, their span, the key), ``b`` runs it through the service ``memtui phase1 --all``
calls, and the next Phase 2 consolidates every eligible session."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label

import memtui.services.phase1.run as phase1_run
from memtui.services.context import open_context
from memtui.state import runs
from memtui.tui.screens.rollouts import RolloutsScreen
from tests.fixtures.history import older, recent, write_history
from tests.tui.conftest import SIZE, app_for, settle, wait_for


@pytest.fixture
def history_home(isolated_env: dict[str, Path], frozen_clock: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
    write_history(isolated_env["CODEX_HOME"], isolated_env["CLAUDE_CONFIG_DIR"])
    return isolated_env["MEMTUI_HOME"]


def offer(app) -> Label:  # type: ignore[no-untyped-def]
    return app.screen.query_one("#backfill-offer", Label)


async def test_the_rollouts_screen_offers_the_backfill_and_b_runs_it_up_to_a_consolidation(
    history_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, object]] = []
    real = phase1_run.run_phase1

    def recorded(ctx, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw)
        return real(ctx, **kw)

    monkeypatch.setattr(phase1_run, "run_phase1", recorded)
    app = app_for(history_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RolloutsScreen)
        assert not offer(app).display, "nothing indexed yet: nothing to offer"
        await pilot.press("f5")  # ingest
        await wait_for(pilot, lambda: any(e.task == "ingest" and e.ended for e in app.task_log))
        await settle(pilot)
        await wait_for(pilot, lambda: offer(app).display)
        text = str(offer(app).render())
        assert f"{len(older())} session(s) from 2025-03-04 to 2026-06-12 older than max_rollout_age_days" in text
        assert "b extracts them" in text and "memtui " not in text

        app.run_phase1()  # the palette's Phase 1: the recent sessions, and the same offer in its outcome
        await wait_for(pilot, lambda: any(e.task == "phase1" and e.ended for e in app.task_log))
        await settle(pilot)
        entry = next(e for e in app.task_log if e.task == "phase1" and e.ended)
        assert f"{len(recent())} succeeded" in entry.message
        assert f"{len(older())} session(s) from 2025-03-04 to 2026-06-12" in entry.message, entry.message
        assert "b on the Rollouts screen (1) extracts them" in entry.message
        assert offer(app).display, "the recent ones are read, the older ones still offered"

        await pilot.press("b")
        await wait_for(pilot, lambda: sum(1 for e in app.task_log if e.task == "phase1" and e.ended) == 2)
        await settle(pilot)
        last = [e for e in app.task_log if e.task == "phase1" and e.ended][-1]
        assert f"{len(older())} succeeded" in last.message, last.message
        assert calls[-1]["all_threads"] is True and calls[0]["all_threads"] is False
        await wait_for(pilot, lambda: not offer(app).display)  # every session is read: no offer left

        app.run_phase2()
        await wait_for(pilot, lambda: any(e.task == "phase2" and e.ended for e in app.task_log))
        await settle(pilot)
        entry = next(e for e in app.task_log if e.task == "phase2" and e.ended)
        assert entry.outcome == "awaiting review", entry.message
    ctx = open_context(home=history_home)
    try:
        run = runs.pending(ctx.conn)
        assert run is not None and len(run.selected) == len(older()) + len(recent())
    finally:
        ctx.close()


async def test_phase2_with_no_memories_names_the_backfill_key(history_home: Path) -> None:
    app = app_for(history_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await wait_for(pilot, lambda: any(e.task == "ingest" and e.ended for e in app.task_log))
        app.run_phase2()
        await wait_for(pilot, lambda: any(e.task == "phase2" and e.ended for e in app.task_log))
        entry = next(e for e in app.task_log if e.task == "phase2" and e.ended)
        assert entry.outcome == "skipped"
        assert entry.message == (
            "no memories to consolidate yet: Phase 1 extracts them first (palette: Phase 1); and 11 session(s) from "
            "2025-03-04 to 2026-06-12 older than max_rollout_age_days (10 days), not read yet: b on the Rollouts "
            "screen (1) reads those too"
        )
