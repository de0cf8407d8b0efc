# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""A memory file, read-only, scrolled to a line range with the range selected and the cursor on its first line."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static, TextArea
from textual.widgets.text_area import Selection

from memtui.tui.screens.base import MemtuiScreen

LANGUAGES = {".md": "markdown", ".json": "json", ".toml": "toml", ".py": "python", ".yaml": "yaml"}


class FileViewScreen(MemtuiScreen):
    TITLE_TEXT = "File"
    MODE = ""
    AUTO_FOCUS = "#file-text"
    BINDINGS = [
        Binding("escape,q", "back", "Back", id="file.back"),
        Binding("e", "edit", "Edit", id="file.edit"),
    ]

    def __init__(
        self, path: Path, label: str, line_start: int | None = None, line_end: int | None = None, note: str = ""
    ) -> None:
        super().__init__()
        self.path, self.label = path, label
        self.line_start, self.line_end, self.note = line_start, line_end, note

    def compose_body(self) -> ComposeResult:
        where = f":{self.line_start}-{self.line_end}" if self.line_start else ""
        note = f"  |note=[{self.note}]" if self.note else ""
        yield Static(Content(f"{self.label}{where}{note}"), id="file-title", markup=False)
        yield TextArea(
            "",
            id="file-text",
            read_only=True,
            show_line_numbers=True,
            language=LANGUAGES.get(self.path.suffix),
            soft_wrap=False,
        )

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.cursor_blink = self.mapp.cursor_blink
        try:
            area.load_text(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            self.query_one("#file-title", Static).update(Content(f"{self.label}: cannot read ({exc})"))
            return
        if self.line_start:
            self.call_after_refresh(self.jump)

    def jump(self) -> None:
        """Select the cited lines and leave the cursor on the first one (selection runs end -> start)."""
        area = self.query_one(TextArea)
        last_row = area.document.line_count - 1
        first = min(max((self.line_start or 1) - 1, 0), last_row)
        last = min(max((self.line_end or self.line_start or 1) - 1, first), last_row)
        area.selection = Selection(start=(last, len(area.document.get_line(last))), end=(first, 0))
        area.scroll_cursor_visible(center=True, animate=False)

    def action_back(self) -> None:
        self.dismiss()

    def action_edit(self) -> None:
        self.mapp.open_memory_file(self.label, edit=True)
