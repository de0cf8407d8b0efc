"""Pilot tests of the review gate in the UI: the editor never overwrites an unseen change (2), unsaved text is
never lost on quit or leaving (3), the review screen shows pending edits like `review show` (8), and approving
files changed since the run is a choice made after seeing them."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import Label, Static, TextArea

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.lock import memory_root_lock
from memtui.services.context import open_context
from memtui.services.phase2.review import approve
from memtui.tui.screens.choice import ChoiceModal, DiffModal
from memtui.tui.screens.dialogs import TextPromptModal
from memtui.tui.screens.memory import MemoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.widgets.diff_view import DiffView
from tests.support.waiting import HANG_GUARD
from tests.tui.conftest import SIZE, app_for, settle


def _approve_pending(home: Path) -> None:
    ctx = open_context(home=home)
    try:
        approve(ctx)
    finally:
        ctx.close()


async def _type_in_memory(pilot, text: str) -> MemoryScreen:
    await pilot.press("4")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, MemoryScreen)
    await pilot.press("enter")  # into the editor
    assert isinstance(pilot.app.focused, TextArea)
    await pilot.press(*text, "enter")
    return screen


async def test_2_save_never_overwrites_a_change_made_outside_the_editor(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _type_in_memory(pilot, "typed")
        shell = path.read_text() + "- added from a shell\n"
        path.write_text(shell)  # a change the editor has not seen
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)  # the old main saved over it silently
        assert path.read_text() == shell
        await pilot.click("#choice-diff")
        await pilot.pause()
        assert isinstance(app.screen, DiffModal)
        assert app.screen.query_one(DiffView).query("HunkView")  # the difference is there to read
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)  # back to the choice after looking
        await pilot.click("#choice-reload")
        await settle(pilot)
        assert screen.query_one("#memory-md", TextArea).text == shell and not screen.unsaved()
        # Type again, another outside change, and this time overwrite knowingly.
        assert isinstance(app.focused, TextArea)
        await pilot.press(*"mine", "enter")
        path.write_text("# replaced from a shell\n")
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.click("#choice-overwrite")
        await settle(pilot)
        assert not screen.unsaved()
    assert path.read_text().startswith("mine\n") and "- added from a shell" in path.read_text()


async def test_save_while_phase2_holds_the_root_is_refused_and_the_text_kept(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    before = path.read_text()
    holding, release = threading.Event(), threading.Event()

    def phase2():
        with memory_root_lock(ui_home / "memories", "Phase 2"):
            holding.set()
            release.wait(HANG_GUARD)  # held until the test is done

    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _type_in_memory(pilot, "during the run")
        t = threading.Thread(target=phase2)
        t.start()
        try:
            assert holding.wait(HANG_GUARD)
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert path.read_text() == before and screen.unsaved() == ["MEMORY.md"]
            assert any("not saved: busy: Phase 2" in n.message for n in app._notifications)
        finally:
            release.set()
            t.join()
        await pilot.press("ctrl+s")  # the run is over: saving works
        await settle(pilot)
        assert not screen.unsaved()
    assert path.read_text() == "during the run\n" + before


async def test_3_quit_with_unsaved_edits_asks_first(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    before = path.read_text()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type_in_memory(pilot, "unsaved")
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal) and app.return_code is None  # the old main exited here
        assert "MEMORY.md: your edits are not saved" in str(app.screen.query_one(".dialog-body", Static).render())
        await pilot.press("escape")  # cancel: keep editing
        await pilot.pause()
        assert isinstance(app.screen, MemoryScreen) and app.return_code is None
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.click("#choice-save")
        await pilot.pause()
        assert app.return_code is not None  # saved, then quit
    assert path.read_text() == "unsaved\n" + before


async def test_3_leaving_the_editor_with_unsaved_edits_asks_first(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    before = path.read_text()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _type_in_memory(pilot, "draft")
        await pilot.press("escape", "1")  # out of the text area, then to the rollouts screen
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)
        await pilot.click("#choice-cancel")
        await pilot.pause()
        assert app.screen is screen and screen.unsaved() == ["MEMORY.md"]
        await pilot.press("1")
        await pilot.pause()
        await pilot.click("#choice-discard")
        await settle(pilot)
        assert not isinstance(app.screen, MemoryScreen) and not screen.unsaved()
    assert path.read_text() == before


async def test_8_the_review_screen_shows_pending_edits_like_review_show(ui_home: Path) -> None:
    root = ui_home / "memories"
    _approve_pending(ui_home)
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- my pending edit\n")
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        meta = str(screen.query_one("#review-meta", Static).render())
        assert "Your own edits and new inputs since the baseline: 1 file." in meta  # old main: "Nothing to review"
        assert screen.own_edits.stat == [("M", "MEMORY.md")]
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press("enter")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert "- my pending edit" in baseline.run_git(root, "show", "HEAD:MEMORY.md")


async def test_approving_with_changes_since_the_run_is_a_choice_made_after_seeing_them(ui_home: Path) -> None:
    root = ui_home / "memories"
    before = baseline.head_commit(root)
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- edited during review\n")
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.awaiting
        assert screen.since_run.stat == [("M", "MEMORY.md")]
        assert "changed since the run" in str(screen.query_one("#review-meta", Static).render())
        assert screen.query_one("#since-title", Label).display and screen.query_one("#since-diff").display
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)
        await pilot.click("#choice-cancel")
        await settle(pilot)
        assert baseline.head_commit(root) == before
        await pilot.press("a")
        await pilot.pause()
        await pilot.click("#choice-include")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert baseline.head_commit(root) != before
    assert "- edited during review" in baseline.run_git(root, "show", "HEAD:MEMORY.md")


async def test_a_change_made_in_a_shell_reaches_the_editor_and_the_review(ui_home: Path) -> None:
    """The app polls the memory root: an untouched editor shows the new text, an edited one warns."""
    path = ui_home / "memories" / "MEMORY.md"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        app.watch_memory_root()  # the first poll only remembers what it saw
        path.write_text(path.read_text() + "- from a shell\n")
        app.watch_memory_root()
        await settle(pilot)
        assert screen.query_one("#memory-md", TextArea).text.endswith("- from a shell\n") and not screen.unsaved()
        await pilot.press("enter", *"typing", "enter")
        path.write_text(path.read_text() + "- and again\n")
        app.watch_memory_root()
        await settle(pilot)
        assert screen.unsaved() == ["MEMORY.md"]  # the person's text is kept...
        warnings = str(screen.query_one("#memory-warnings", Static).render())
        assert "MEMORY.md changed on disk since you opened it" in warnings  # ...and they are told
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)
