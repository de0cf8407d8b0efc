"""Pilot tests of curation in the UI: take, leave out and amend hunks, approve in part, follow the evidence to the
cited transcript item, restore a version through review, forget a rollout from its detail screen."""

from __future__ import annotations

import subprocess
from pathlib import Path

from textual.widgets import DataTable, TextArea

from memtui.services.context import open_context
from memtui.services.phase2 import review
from memtui.tui.screens.detail import RolloutDetailScreen
from memtui.tui.screens.dialogs import ConfirmModal, TextAreaModal, TextPromptModal
from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.widgets.diff_view import DiffView
from memtui.tui.widgets.evidence_pane import EvidencePane
from tests.tui.conftest import SIZE, app_for, settle
from tests.tui.homes import T_DOCS, T_INFRA


def head_file(root: Path, rel: str) -> str | None:
    out = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=root, capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


async def _review(pilot) -> ReviewScreen:
    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen) and screen.awaiting
    return screen


async def test_mark_amend_and_approve_in_part_commits_exactly_what_the_screen_shows(ui_home: Path) -> None:
    root = ui_home / "memories"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        diff = screen.query_one(DiffView)
        first = diff.current_hunk
        assert first is not None and first.hunk.file == "MEMORY.md"
        # amend MEMORY.md's hunk
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, TextAreaModal)
        area = app.screen.query_one(TextArea)
        amended = area.text.replace("# Memory", "# Memory (curated by Ana)", 1)
        assert amended != area.text
        area.text = amended
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert first.has_class("-amended") and "curated by Ana" in str(first.render())
        assert "amended" in str(first.border_subtitle)
        # leave raw_memories.md's hunk out (memory_summary.md is needed: a tree without it fails validation);
        # space again takes it back, a third time leaves it out
        await pilot.press("right_square_bracket", "right_square_bracket")
        second = diff.current_hunk
        assert second is not None and second.hunk.file == "raw_memories.md"
        await pilot.press("space")
        assert second.has_class("-rejected") and "left out for now" in str(second.border_subtitle)
        assert "the next run renders it again" in str(second.border_subtitle)  # a generated input: not remembered
        await pilot.press("space")
        assert not second.has_class("-rejected") and "goes in" in str(second.border_subtitle)
        await pilot.press("space")
        assert screen.decision_counts() == (len(diff.hunks) - 1, 1, 1)
        await pilot.press("a")
        await settle(pilot)  # the dialog comes after the reference check
        assert isinstance(app.screen, TextPromptModal)
        assert f"{len(diff.hunks) - 1} hunk(s) go in (1 amended), 1 left out" in app.screen.body
        assert "raw_memories.md: not published now; the next run renders it again" in app.screen.body
        assert "remembered as rejected" not in app.screen.body
        await pilot.press(*"too generic", "enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        assert isinstance(app.screen, ReviewScreen) and not app.screen.awaiting
    committed = head_file(root, "MEMORY.md")
    assert committed is not None and committed.startswith("# Memory (curated by Ana)")
    assert (root / "MEMORY.md").read_text() == committed
    assert head_file(root, "raw_memories.md") is None and not (root / "raw_memories.md").exists()
    assert head_file(root, "memory_summary.md").startswith("v1")
    conn = open_context(home=ui_home).conn
    assert tuple(conn.execute("SELECT kind, reason FROM decisions").fetchone()) == ("partial_approve", "too generic")
    assert conn.execute("SELECT COUNT(*) FROM rejected_hunks").fetchone()[0] == 0  # issue 33.2: not remembered


async def test_plain_approve_dialog_counts_hunks(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert f"{len(screen.query_one(DiffView).hunks)} hunk(s) go in, 0 left out" in app.screen.body
        await pilot.press("n")


async def test_evidence_pane_lists_the_rollouts_and_enter_opens_the_cited_item(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _review(pilot)
        pane = screen.query_one(EvidencePane)
        threads = [e.thread_id for e in pane.evidence]
        assert T_DOCS in threads and T_INFRA in threads  # MEMORY.md's hunk: every task's summary file
        docs = next(e for e in pane.evidence if e.thread_id == T_DOCS)
        assert docs.project == "/home/ana/src/shop-api" and docs.items and docs.excerpt
        rendered = "\n".join(str(pane.get_option_at_index(i).prompt) for i in range(pane.option_count))
        assert "/home/ana/src/shop-api" in rendered and docs.excerpt[:30] in rendered
        # the evidence follows the highlighted hunk: raw_memories.md has none
        while screen.query_one(DiffView).current_path != "raw_memories.md":
            await pilot.press("right_square_bracket")
        assert pane.evidence == []
        while screen.query_one(DiffView).current_path != "MEMORY.md":
            await pilot.press("left_square_bracket")
        await pilot.press("v")
        assert pane.has_focus
        pane.highlighted = threads.index(T_DOCS)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, RolloutDetailScreen) and detail.thread_id == T_DOCS
        assert detail.item == docs.items[0]
        assert detail.cited is not None and detail.cited.has_class("-cited")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)


async def test_history_restore_goes_through_review(ui_home: Path) -> None:
    root = ui_home / "memories"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await _review(pilot)
        await pilot.press("a", "y")
        await settle(pilot)
        version_one = (root / "MEMORY.md").read_text()
        ctx = open_context(home=ui_home)
        (root / "MEMORY.md").write_text(version_one + "- a line Ana added later\n")
        review.commit_manual_edit(ctx, "Ana's line")
        ctx.close()
        await pilot.press("6")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#decisions", DataTable)
        assert [d.kind for d in screen.decisions] == ["manual_commit", "approve"]
        table.move_cursor(row=1)
        await settle(pilot)
        assert "a line Ana added later" in str(
            "\n".join(v.hunk.text for v in screen.query_one(DiffView).hunks)
        )  # version 1 against the current memory: the line goes
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        # nothing committed: the restore awaits review like any run
        assert head_file(root, "MEMORY.md") == version_one + "- a line Ana added later\n"
        assert (root / "MEMORY.md").read_text() == version_one
        await pilot.press("3")
        await settle(pilot)
        rv = app.screen
        assert isinstance(rv, ReviewScreen) and rv.awaiting and rv.run is not None and rv.run.kind == "restore"
        assert "Restore of version" in str(rv.query_one("#review-meta").render())
        await pilot.press("a", "y")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert head_file(root, "MEMORY.md") == version_one


async def test_forget_from_the_rollout_detail_screen_asks_first(ui_home: Path) -> None:
    ctx = open_context(home=ui_home)
    review.approve(ctx)
    ctx.close()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(T_INFRA)
        await settle(pilot)
        await pilot.press("F")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal) and "Forget rollout" in app.screen.body
        await pilot.press("escape")  # cancelled: nothing happens
        await settle(pilot)
        conn = open_context(home=ui_home).conn
        assert conn.execute("SELECT COUNT(*) FROM forgotten_threads").fetchone()[0] == 0
        await pilot.press("F")
        await pilot.pause()
        await pilot.press(*"wrong project", "enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    row = conn.execute("SELECT thread_id, reason FROM forgotten_threads").fetchone()
    assert tuple(row) == (T_INFRA, "wrong project")
    assert conn.execute("SELECT COUNT(*) FROM stage1_outputs WHERE thread_id=?", (T_INFRA,)).fetchone()[0] == 0
