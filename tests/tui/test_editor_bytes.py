"""The memory editor loses nothing: revert asks before dropping unsaved text, and a file's line separators
(U+2028, U+0085, form feeds, mixed CRLF) stay byte for byte on every line the person did not touch."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from memtui.tui.screens.choice import ChoiceModal
from memtui.tui.screens.memory import MemoryScreen
from tests.tui.conftest import SIZE, app_for, settle
from tests.tui.test_gate_flows import _type_in_memory

ODD = "# Memory\r\n\r\n- crlf line\r\n- unix line\n- page\x0cbreak\n- sep\u2028inside\n- nel\u0085here\n- last line\n"


async def test_ctrl_r_with_unsaved_edits_asks_first_and_keeps_them_unless_told(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _type_in_memory(pilot, "precious")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceModal)  # the old editor dropped the text here, with no undo
        await pilot.press("enter")  # the safe button: keep editing
        await settle(pilot)
        area = screen.query_one("#memory-md", TextArea)
        assert "precious" in area.text and screen.unsaved() == ["MEMORY.md"]
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.click("#choice-discard")
        await settle(pilot)
        assert "precious" not in area.text and not screen.unsaved()
        assert area.text == path.read_text()


async def test_separators_stay_byte_for_byte_and_save_rewrites_only_the_touched_line(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    path.write_bytes(ODD.encode())
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen) and not screen.unsaved()  # opening is not an edit
        area = screen.query_one("#memory-md", TextArea)
        row = list(area.document.lines).index("- unix line")
        area.focus()
        area.move_cursor((row, len("- unix line")))
        await pilot.pause()
        await pilot.press(*" edited")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not screen.unsaved()
    assert path.read_bytes() == ODD.replace("- unix line", "- unix line edited").encode()


def test_rebuild_keeps_every_untouched_ending() -> None:
    from memtui.adapters.memroot.lines import rebuild, split_lines

    bodies, _ = split_lines(ODD)
    assert rebuild(ODD, bodies) == ODD
    inserted = [*bodies[:3], "- new", *bodies[3:]]
    assert rebuild(ODD, inserted) == ODD.replace("- crlf line\r\n", "- crlf line\r\n- new\r\n")
    assert rebuild(ODD, [*bodies[:-2], ""]) == ODD.replace("- last line\n", "")
