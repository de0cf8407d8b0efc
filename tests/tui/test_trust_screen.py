"""The review shows each hunk's trust classes and flags; `t` lets a hunk's tool-only lines reach agents, recorded in
the history. Snapshots at 80x24, 120x36 and 200x50 (refresh with ``--snapshot-update`` and look at the SVGs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memtui.tui.widgets.diff_view import DiffView
from memtui.tui.widgets.trust_line import TrustLine
from tests.tui.conftest import app_for, settle
from tests.tui.trust_home import add_trust_run

SIZES = {"80x24": (80, 24), "120x36": (120, 36), "200x50": (200, 50)}


@pytest.fixture
def trust_home(snapshot_home: Path) -> Path:
    add_trust_run(snapshot_home)
    return snapshot_home


async def _review(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)


@pytest.mark.parametrize("size", list(SIZES))
def test_review_shows_trust_classes_and_flags(size: str, trust_home: Path, snap_compare: Any) -> None:
    assert snap_compare(app_for(trust_home), terminal_size=SIZES[size], run_before=_review)


async def test_the_review_lists_classes_flags_and_reveals_hidden_text(trust_home: Path) -> None:
    app = app_for(trust_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _review(pilot)
        shown = str(app.screen.query_one(TrustLine).render())
        assert "trust: user 1, observed 1, tool 2, agent 1 · 4 flag(s)" in shown
        assert "line 9: only tool output" in shown and "possible injection (shell) from item 14" in shown
        assert "line 8: the run wrote 3 hidden character(s) here; removed" in shown
        (view,) = app.screen.query_one("#diff", DiffView).hunks
        plain = view.base.plain
        assert "⟨U+200B⟩" in plain and "⟨U+202E⟩" in plain and "\u200b" not in plain
        await pilot.press("t")
        await settle(pilot)
        assert app.screen.trusted == {view.hunk.id}
        assert "tool lines go to agents" in str(view.border_subtitle)
        await pilot.press("t")
        await settle(pilot)
        assert app.screen.trusted == set()


async def test_approving_after_t_passes_the_hunk_as_approved_for_agents(trust_home: Path, monkeypatch) -> None:
    import memtui.tui.screens.review as review_screen
    from memtui.tui.screens.dialogs import ConfirmModal
    from memtui.tui.tasks import TaskOutcome

    calls: list[dict[str, Any]] = []

    def fake_approve_task(run_id, *args, **kwargs):
        calls.append(kwargs)
        return lambda ctx, progress, cancel: TaskOutcome("recorded", "approve not run in this test")

    monkeypatch.setattr(review_screen, "approve_task", fake_approve_task)
    app = app_for(trust_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await _review(pilot)
        (view,) = app.screen.query_one("#diff", DiffView).hunks
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert "1 hunk(s) let their tool-only lines reach agents" in str(app.screen.query_one(".dialog-body").render())
        await pilot.press("y")
        await settle(pilot)
    assert calls and calls[0]["decisions"].trusted_ids == (view.hunk.id,)
