"""The editor's explicit modes (view: digits switch screens; edit: keys type) with the footer showing the current
mode's keys, and the answers a person gets where the UI used to say nothing or the wrong thing. Pilot at 80x24."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.memory import MemoryScreen
from tests.tui.conftest import app_for, settle

NARROW = (80, 24)


def footer_actions(app) -> set[str]:  # type: ignore[no-untyped-def]
    return {key.action for key in app.screen.query("FooterKey")}


async def test_save_returns_to_view_mode_and_the_footer_follows_the_mode(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen) and not screen.editing
        assert "edit" in footer_actions(app) and "save" not in footer_actions(app)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.editing
        assert {"leave_editor"} <= footer_actions(app) and "edit" not in footer_actions(app)
        await pilot.press("x")
        await settle(pilot)
        assert {"save", "revert"} <= footer_actions(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not screen.editing and "edit" in footer_actions(app)
        await pilot.press("6")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
    text = (snapshot_home / "memories" / "MEMORY.md").read_text()
    assert text.startswith("x") and "6" not in text.splitlines()[0]


async def test_after_a_commit_the_editor_is_in_view_mode(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        for key in ("3", "a", "y"):  # approve the run awaiting review: a commit needs none pending
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("4", "enter", *"Ana: ")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen) and screen.editing
        await pilot.press("ctrl+o")
        await settle(pilot)
        await pilot.press("enter")  # the commit message is filled in
        await settle(pilot)
        assert not app.task_errors, app.task_errors
        assert app.screen is screen and not screen.editing
        assert "edit" in footer_actions(app) and "leave_editor" not in footer_actions(app)
        await pilot.press("6")
        await settle(pilot)
        assert app.current_mode == "history"
        area = screen.query_one("#memory-md", TextArea)
        assert area.text.startswith("Ana: ") and "6" not in area.text.splitlines()[0]


async def test_enter_in_the_search_field_opens_the_highlighted_hit(snapshot_home: Path) -> None:
    from memtui.tui.screens.search import SearchScreen

    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        app.open_search()
        await settle(pilot)
        await pilot.press(*"checkout", "enter")  # a new query: runs it
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and len(screen.hits) >= 2
        screen.query_one("#search-hits").highlighted = 1
        await pilot.press("enter")  # the same query: opens the highlighted hit
        await settle(pilot)
        assert not isinstance(app.screen, SearchScreen)
        hit = screen.hits[1]
        opened = app.screen
        if hit.kind == "memory":
            assert opened.label == hit.source  # type: ignore[attr-defined]
        else:
            assert opened.thread_id == hit.source  # type: ignore[attr-defined]


async def test_decision_keys_with_nothing_to_review_say_why(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await settle(pilot)
        for key in ("3", "x"):
            await pilot.press(key)
            await settle(pilot)
        await pilot.press(*"not now", "enter")  # reject the run: nothing awaits review any more
        await settle(pilot)
        before = len(app._notifications)
        for key in ("a", "space"):
            await pilot.press(key)
            await settle(pilot)
        said = [n.message for n in list(app._notifications)[before:]]
        assert len(said) == 2 and all(m.startswith("No consolidation awaits review") for m in said)


async def test_the_evidence_pane_says_why_a_hunk_has_none(snapshot_home: Path) -> None:
    from memtui.tui.widgets.diff_view import DiffView
    from memtui.tui.widgets.evidence_pane import EvidencePane

    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        pane = screen.query_one(EvidencePane)
        diff = screen.query_one(DiffView)
        notes = {}
        for _ in range(len(diff.hunks)):
            view = diff.current_hunk
            if not pane.evidence and view is not None:
                notes[view.hunk.file] = str(pane.get_option_at_index(0).prompt)
            await pilot.press("right_square_bracket")
            await settle(pilot)
        assert notes, "the fixture run has a hunk without evidence"
        for file, note in notes.items():
            assert not note.startswith("No evidence"), note
            if file == "raw_memories.md":
                assert "input of the run" in note


def test_the_ui_names_keys_and_screens_not_cli_commands() -> None:
    from memtui.services.phase2.restore import RestoreResult
    from memtui.tui.tasks import screen_words

    said = screen_words(RestoreResult(run_id=4, version=2, stat=[("M", "MEMORY.md")]).message())
    assert "`memtui" not in said and "--except" not in said
    assert said.endswith("review it on screen 3, then approve (all, or space leaves hunks out) or reject")
