"""One snapshot per screen at 120x36, 80x24 and 200x50 from the fixture home (frozen clock, pinned git dates,
no cursor blink).

Create or refresh the baselines with ``pytest tests/tui --snapshot-update`` and look at the SVGs before committing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from memtui.tui.app import make_app
from tests.tui.conftest import SIZE, app_for, assert_still, settle
from tests.tui.homes import ANSWER, T_DOCS


def steps(*keys: str, then: Callable[[Pilot], Awaitable[None]] | None = None) -> Callable[[Pilot], Awaitable[None]]:
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        if then is not None:
            await then(pilot)
            await settle(pilot)

    return run_before


async def _filter(pilot: Pilot) -> None:
    pilot.app.screen.query_one("#filter", Input).value = "shop-api"
    pilot.app.screen.query_one("#rollouts", DataTable).focus()


async def _detail(pilot: Pilot) -> None:
    pilot.app.open_rollout(T_DOCS)  # type: ignore[attr-defined]
    await settle(pilot)
    await pilot.press("o")


async def _answer(pilot: Pilot) -> None:
    pilot.app.screen.set_answer(ANSWER)  # type: ignore[attr-defined]


async def _search(pilot: Pilot) -> None:
    pilot.app.open_search("checkout")  # type: ignore[attr-defined]


async def _jump(pilot: Pilot) -> None:
    await _answer(pilot)
    await settle(pilot)
    pilot.app.screen.query_one("#entries", DataTable).focus()
    await pilot.press("enter")


CASES: dict[str, Callable[[Pilot], Awaitable[None]]] = {
    "rollouts": steps(),
    "rollouts_filtered": steps(then=_filter),
    "rollout_detail": steps(then=_detail),
    "jobs": steps("2"),
    "review": steps("3", "right_square_bracket"),
    "review_reject_dialog": steps("3", "x"),
    "review_evidence": steps("3", "right_square_bracket", "space", "left_square_bracket", "v"),
    "review_partial_approve": steps("3", "right_square_bracket", "right_square_bracket", "space", "a"),
    "review_approve_dialog": steps("3", "a"),
    "review_amend_dialog": steps("3", "e"),
    "evidence_jump": steps("3", "v", "enter"),
    "history": steps("6", "down", "down"),
    "memory": steps("4"),
    "memory_editing": steps("4", "enter", "x"),
    "memory_commit_dialog": steps("4", "enter", "x", "ctrl+o"),
    "memory_unsaved_dialog": steps("4", "enter", "x", "escape", "1"),
    "citations": steps("5", then=_answer),
    "citation_jump": steps("5", then=_jump),
    "help": steps("f1"),
    "task_log": steps("ctrl+n"),
    "search": steps(then=_search),
}


SIZES = {"120x36": SIZE, "80x24": (80, 24), "200x50": (200, 50)}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("case", list(CASES))
def test_screen(case: str, size: str, snapshot_home: Path, snap_compare: Any) -> None:
    assert snap_compare(app_for(snapshot_home), terminal_size=SIZES[size], run_before=CASES[case])


def test_a_snapshot_refuses_an_app_whose_cursor_blinks_or_whose_toasts_expire(
    snapshot_home: Path, snap_compare: Any
) -> None:
    for app in (
        make_app(home=snapshot_home, cursor_blink=True, toasts_expire=False, status_refresh=False),
        make_app(home=snapshot_home, cursor_blink=False, toasts_expire=True, status_refresh=False),
    ):
        with pytest.raises(AssertionError, match="app_for"):
            snap_compare(app, terminal_size=SIZE)


async def _search_box(pilot: Pilot) -> None:
    """The search screen with its query box focused (with hits, the list has the focus)."""
    pilot.app.open_search()  # type: ignore[attr-defined]
    await settle(pilot)


@pytest.mark.parametrize("case", ["search_box", "review_amend_dialog", "review_reject_dialog", "memory_editing"])
async def test_the_focused_cursor_of_a_snapshot_never_blinks(case: str, snapshot_home: Path) -> None:
    """Whatever screen or dialog composed the focused input, the still app turns its blink off (the search and
    amend snapshots used to differ under load by the blink's phase)."""
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await (_search_box if case == "search_box" else CASES[case])(pilot)
        assert hasattr(app.focused, "cursor_blink")
        assert_still(app)
