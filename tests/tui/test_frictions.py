"""Pilot tests of the frictions a first day found (issue 33, item 7): each failed on the code before its fix."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.content import Content
from textual.widgets import Input, OptionList

from memtui.services.context import open_context
from memtui.services.history import list_decisions
from memtui.services.phase2 import review
from memtui.services.phase2.restore import restore_version
from memtui.tui.screens.dialogs import TextPromptModal
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.rollouts import RolloutsScreen
from memtui.tui.screens.search import SearchScreen
from memtui.tui.widgets.diff_view import DiffView
from memtui.tui.widgets.evidence_pane import EvidencePane
from memtui.tui.widgets.windowed_table import WindowedTable
from tests.tui.conftest import SIZE, app_for, settle
from tests.tui.homes import DAY, FROZEN_NOW


async def _review(pilot) -> ReviewScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen) and screen.awaiting
    return screen


def _plain(title: object) -> str:
    return title.plain if isinstance(title, Content) else Content.from_markup(str(title)).plain


def _evidence_hunk(screen: ReviewScreen) -> str:
    return str(screen.query_one(EvidencePane).border_title).rsplit(" ", 1)[-1]


async def test_review_hunk_on_screen_evidence_and_space_are_the_same_hunk(snapshot_home: Path) -> None:
    """With the focus on the file list, ``[`` into a file's second hunk stays there (it used to jump to the file's
    first hunk while the evidence named the second, and space left out the first under the second's evidence)."""
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        diff = screen.query_one("#diff", DiffView)
        ids = [v.hunk.id for v in diff.hunks]
        assert [v.hunk.file for v in diff.hunks][:3] == ["MEMORY.md", "MEMORY.md", "memory_summary.md"]
        await pilot.press("]", "]")
        await settle(pilot)
        screen.query_one("#files", OptionList).focus()
        await pilot.pause()
        await pilot.press("[")
        await settle(pilot)
        assert diff.current_hunk is not None and diff.current_hunk.hunk.id == ids[1]
        assert _evidence_hunk(screen) == ids[1]
        await pilot.press("space")
        await settle(pilot)
        assert screen.rejected == {ids[1]}
        # picking a file in the list moves to its first hunk, and the evidence follows
        await pilot.press("down")
        await settle(pilot)
        assert diff.current_hunk is not None and diff.current_hunk.hunk.id == ids[2]
        assert _evidence_hunk(screen) == ids[2]


async def test_review_scrolling_moves_the_current_hunk_with_the_view(snapshot_home: Path) -> None:
    """j/G scroll the diff; the hunk space acts on is never one scrolled off screen."""
    app = app_for(snapshot_home)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _review(pilot)
        diff = screen.query_one("#diff", DiffView)
        diff.focus()
        await pilot.press("G")
        await settle(pilot)
        view = diff.current_hunk
        assert view is not None and view.index > 0
        assert view.region.overlaps(diff.scrollable_content_region)
        assert _evidence_hunk(screen) == view.hunk.id
        await pilot.press("space")
        assert screen.rejected == {view.hunk.id}


async def test_esc_leaves_the_evidence_pane(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.focused, EvidencePane)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is screen.query_one("#diff", DiffView)
        assert isinstance(app.screen, ReviewScreen)


async def test_a_hunks_decision_shows_on_its_top_border(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        view = screen.query_one("#diff", DiffView).current_hunk
        assert view is not None
        assert _plain(view.border_title).startswith("✓ goes in")
        await pilot.press("space")
        assert _plain(view.border_title).startswith("✗ left out")
        assert view.hunk.id in str(view.border_title)


async def test_rejecting_a_restore_speaks_of_the_restore(ui_home: Path) -> None:
    """x on a restore run asks about the restore, not about "the agent's edits" (no agent made it)."""
    ctx = open_context(home=ui_home)
    review.approve(ctx)
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- a line Ana added later\n")
    review.commit_manual_edit(ctx, "Ana's line")
    version = next(d.id for d in list_decisions(ctx.conn) if d.kind == "approve")
    restore_version(ctx, version)
    ctx.close()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        assert screen.run is not None and screen.run.kind == "restore"
        await pilot.press("x")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, TextPromptModal)
        assert "agent" not in modal.body and f"restore of version {version}" in modal.body


async def test_search_enter_moves_to_the_hits_and_one_focus_edge_shows(snapshot_home: Path) -> None:
    """After enter, j/k/G move through the hits (they used to type into the query: ``TZ=UTCGjG``), and only the
    focused one of box and list draws the focus edge."""
    app = app_for(snapshot_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_search()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        box = screen.query_one("#search-input", Input)
        hits = screen.query_one("#search-hits", OptionList)
        assert box.has_focus
        await pilot.press(*"checkout", "enter")
        await settle(pilot)
        assert len(screen.hits) > 2 and hits.has_focus
        await pilot.press("j", "j")
        assert hits.highlighted == 2
        await pilot.press("G")
        assert hits.highlighted == len(screen.hits) - 1
        await pilot.press("k")
        assert hits.highlighted == len(screen.hits) - 2
        assert box.value == "checkout"
        edges = {w.id: w.styles.border_left[0] for w in (box, hits)}
        assert edges["search-hits"] == "tall" and edges["search-input"] != "tall", edges
        await pilot.press("slash")  # back to the query
        await pilot.pause()
        assert box.has_focus
        edges = {w.id: w.styles.border_left[0] for w in (box, hits)}
        assert edges["search-input"] == "tall" and edges["search-hits"] != "tall", edges


def _forgotten(home: Path) -> list[tuple[str, str | None]]:
    ctx = open_context(home=home)
    try:
        return [tuple(r) for r in ctx.conn.execute("SELECT thread_id, reason FROM forgotten_threads")]
    finally:
        ctx.close()


async def test_f_forgets_the_highlighted_rollout_from_the_list(ui_home: Path) -> None:
    ctx = open_context(home=ui_home)
    review.approve(ctx)
    ctx.close()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RolloutsScreen)
        thread_id = screen.selected_thread()
        assert thread_id
        await pilot.press("F")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, TextPromptModal) and f"Forget rollout {thread_id}" in modal.body
        await pilot.press(*"private", "enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert _forgotten(ui_home) == [(thread_id, "private")]


async def test_forget_with_a_run_awaiting_review_says_so_before_asking(ui_home: Path) -> None:
    app = app_for(ui_home)  # the home holds a run awaiting review
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot)
        assert isinstance(app.screen, RolloutsScreen)  # no reason asked for
        note = app.task_log[-1]
        assert note.severity == "warning" and "awaits review" in note.message and "approve or reject" in note.message
    assert _forgotten(ui_home) == []


async def test_a_forget_refused_after_the_reason_keeps_the_reason_and_says_why(ui_home: Path) -> None:
    """A run that comes to await review while the reason is typed: the forget is refused in words (never a raw
    ``ForgetError: …``) and the next F offers the typed reason again."""
    ctx = open_context(home=ui_home)
    review.approve(ctx)
    version = next(d.id for d in list_decisions(ctx.conn) if d.kind == "approve")
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- a line Ana added later\n")
    review.commit_manual_edit(ctx, "Ana's line")
    ctx.close()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        thread_id = app.screen.selected_thread()  # type: ignore[attr-defined]
        assert thread_id
        app.open_rollout(thread_id)  # (in the detail, where F worked before)
        await settle(pilot)
        await pilot.press("F")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal)
        ctx = open_context(home=ui_home)
        restore_version(ctx, version)  # (from another window: a run now awaits review)
        ctx.close()
        await pilot.press(*"wrong project", "enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        entry = next(e for e in reversed(app.task_log) if e.task == f"forget:{thread_id}")
        assert entry.outcome == "not done" and entry.severity == "warning"
        assert "ForgetError" not in entry.message and "awaits review" in entry.message
        assert "reason is kept" in entry.message
        ctx = open_context(home=ui_home)
        review.reject(ctx, "not now")
        ctx.close()
        await pilot.press("F")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, TextPromptModal)
        assert modal.query_one("#prompt", Input).value == "wrong project"
        await pilot.press("enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert _forgotten(ui_home) == [(thread_id, "wrong project")]


WORKTREES = ["fix-login", "add-export", "perf-pass", "docs", "release-2026-candidate"]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_rollouts_list_tells_worktrees_and_years_apart(ui_home: Path, size: tuple[int, int]) -> None:
    """Five worktrees of one project read as five (not ``spotter-workt…`` each), and a date of another year says
    which year, on a narrow terminal too."""
    conn = open_context(home=ui_home).conn
    rows = [
        (f"wt-{i}", "codex", f"/x/{i}.jsonl", f"/home/ana/code/spotter-worktrees/{name}", "cli", FROZEN_NOW - i, 0)
        for i, name in enumerate(WORKTREES)
    ]
    rows.append(("old-one", "codex", "/x/old.jsonl", "/home/ana/src/shop-api", "cli", FROZEN_NOW - 400 * DAY, 0))
    with conn:
        conn.executemany(
            "INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, ingested_at)"
            " VALUES (?,?,?,?,?,?,?)",
            rows,
        )
    conn.close()
    app = app_for(ui_home)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        width = table.columns["project"].width  # type: ignore[index]
        labels = [table.get_cell(f"wt-{i}", "project").plain for i in range(len(WORKTREES))]
        assert len(set(labels)) == len(WORKTREES), labels
        for name, text in zip(WORKTREES, labels, strict=True):
            assert len(text) <= width and (name in text or text.lstrip("…") in name), (name, text)
        year = time.gmtime(FROZEN_NOW - 400 * DAY).tm_year
        assert str(year) in table.get_cell("old-one", "updated").plain
        this_year = table.get_cell("wt-0", "updated").plain
        assert this_year != "-" and "07-10" in this_year
