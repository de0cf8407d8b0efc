"""Every screen and dialog at 80x24: History stacks its panes, help shows whole keys and ids, dialogs keep their
buttons in view (toasts never cover them), and an unknown keymap id is said at start-up."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.widgets import Button, DataTable, Label, Static

from memtui.tui.app import make_app
from memtui.tui.screens.help import HelpScreen
from memtui.tui.widgets.diff_view import DiffView
from tests.tui.conftest import app_for, settle

NARROW = (80, 24)


async def test_history_stacks_its_panes_at_80_columns(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        table = app.screen.query_one("#decisions", DataTable)
        diff = app.screen.query_one("#version-diff", DiffView)
        assert diff.size.width >= 76  # the whole width, not the 6 columns left beside the table
        assert diff.region.y > table.region.y and diff.size.height >= 8
        assert table.size.width >= 70 and table.row_count >= 3


async def test_help_shows_whole_keys_and_whole_binding_ids_at_80_columns(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = list(help_screen.query(".help-key").results(Label))
        actions = list(help_screen.query(".help-action").results(Static))
        assert len(keys) == len(actions) == len(help_screen.rows) >= 15
        for (key, desc, binding_id), label, action in zip(help_screen.rows, keys, actions, strict=True):
            assert label.size.width >= cell_len(key), key  # the key column fits the widest key
            text = str(action.render())
            assert binding_id in text and desc in text.replace("\n", " ")
            assert action.size.width >= cell_len(binding_id) + 2  # room for the id on a line of its own
        ids = {row[2] for row in help_screen.rows}
        assert {"memtui.rollouts", "review.approve", "review.toggle_hunk", "memtui.help"} <= ids
        # a number key closes the help on the way to its screen
        await pilot.press("6")
        await settle(pilot)
        assert app.current_mode == "history" and not isinstance(app.screen, HelpScreen)


async def test_an_unknown_keymap_id_is_said_at_start_up(snapshot_home: Path) -> None:
    app = make_app(
        home=snapshot_home,
        ingest_on_start=False,
        cursor_blink=False,
        status_refresh=False,
        keymap={"review.aprove": "A", "memtui.jobs": "f2,2"},
    )
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await settle(pilot)
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert warnings == [
            "unknown keymap id 'review.aprove' in config.toml [keymap] is ignored; did you mean 'review.approve'?"
        ]
        assert any(e.message == warnings[0] for e in app.task_log)
        await pilot.press("f2")  # the known id is applied
        await settle(pilot)
        assert app.current_mode == "jobs"


def test_memtui_config_warns_about_an_unknown_keymap_id(isolated_env: dict[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    from memtui.cli import main

    home = isolated_env["MEMTUI_HOME"]
    (home / "config.toml").write_text('[keymap]\n"memtui.hisotry" = "h"\n"review.approve" = "A"\n')
    assert main(["config"]) == 0
    err = capsys.readouterr().err
    assert f"unknown keymap id 'memtui.hisotry' in {home / 'config.toml'} [keymap] is ignored" in err
    assert "did you mean 'memtui.history'?" in err and "review.approve" not in err


async def _buttons_visible(app, pilot) -> list[Button]:  # type: ignore[no-untyped-def]
    """The dialog's buttons, each wholly on screen and not under a toast."""
    await settle(pilot)
    screen = app.screen
    width, height = app.size
    buttons = list(screen.query(Button))
    assert buttons
    for button in buttons:
        region = button.region
        assert region.width and region.height, f"{button.label} is not shown"
        assert region.right <= width and region.bottom <= height, f"{button.label} is off screen: {region}"
        for y in range(region.y, region.bottom):  # what is drawn on top at each cell of the button
            for x in range(region.x, region.right):
                top, _ = screen.get_widget_at(x, y)
                assert top is button or button in top.ancestors, f"{top!r} covers {button.label} at {x},{y}"
    return buttons


async def test_the_amend_dialog_keeps_save_and_cancel_on_screen_at_80x24(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("e")
        buttons = await _buttons_visible(app, pilot)
        assert [str(b.label) for b in buttons] == ["Use this text", "Cancel"]
        assert "ctrl+s keeps this text" in str(app.screen.query_one(".dialog-keys", Label).render())
        area = app.screen.query_one("#amend-text")
        assert area.size.height >= 3


async def test_toasts_never_cover_the_commit_dialogs_buttons(snapshot_home: Path) -> None:
    app = app_for(snapshot_home)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("4", "enter")
        await pilot.press(*"x")
        await pilot.press("ctrl+o")  # saves (a toast says so), then asks for the commit message
        await settle(pilot)
        for n in range(3):
            app.notify(f"something happened in the background, number {n}, with a long explanation", timeout=30)
        await settle(pilot)
        assert app.screen.query("Toast"), "the toasts should be up"
        buttons = await _buttons_visible(app, pilot)
        assert [str(b.label) for b in buttons] == ["Commit", "Cancel"]
