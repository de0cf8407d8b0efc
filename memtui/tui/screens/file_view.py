# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""A memory file, read-only, scrolled to a line range with the range selected and the cursor on its first line.

A range past the end of the file is said in the title and nothing is selected (a citation that points
nowhere must not look valid). ``/`` searches the file; ``e`` opens it in ``$EDITOR`` (MEMORY.md and
memory_summary.md open in memtui's own editor)."""

from __future__ import annotations

from pathlib import Path

from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static, TextArea
from textual.widgets.text_area import Document, Selection

from memtui.core.hidden import reveal
from memtui.tui.screens.base import SEARCH_BINDINGS, MemtuiScreen
from memtui.tui.widgets.search import find_all

LANGUAGES = {".md": "markdown", ".json": "json", ".toml": "toml", ".py": "python", ".yaml": "yaml"}


class ReadOnlyText(TextArea):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "cursor_document_start", "Top", show=False),
        Binding("G", "cursor_document_end", "Bottom", show=False),
    ]

    def action_cursor_document_start(self) -> None:
        self.move_cursor((0, 0))

    def action_cursor_document_end(self) -> None:
        self.move_cursor((self.document.line_count - 1, 0))


class FileViewScreen(MemtuiScreen):
    TITLE_TEXT = "File"
    MODE = ""
    AUTO_FOCUS = "#file-text"
    SEARCH_ROOT = "#file-text"
    BINDINGS = [
        Binding("escape,q", "back", "Back", id="file.back"),
        Binding("e", "edit", "Edit", id="file.edit"),
        Binding("y", "copy_citation", "Copy citation", id="file.copy"),
        *SEARCH_BINDINGS,
    ]

    area = getters.query_one("#file-text", ReadOnlyText)
    title_bar = getters.query_one("#file-title", Static)

    def __init__(
        self, path: Path, label: str, line_start: int | None = None, line_end: int | None = None, note: str = ""
    ) -> None:
        super().__init__()
        self.path, self.label = path, label
        self.line_start, self.line_end, self.note = line_start, line_end, note
        self.offsets: list[int] = []
        self.out_of_range = False

    def compose_body(self) -> ComposeResult:
        yield Static(Content(self.heading()), id="file-title", markup=False)
        yield ReadOnlyText(
            "",
            id="file-text",
            read_only=True,
            show_line_numbers=True,
            language=LANGUAGES.get(self.path.suffix),
            soft_wrap=False,
        )

    def heading(self) -> str:
        where = f":{self.line_start}-{self.line_end}" if self.line_start else ""
        note = f"  |note=[{self.note}]" if self.note else ""
        return f"{self.label}{where}{note}"

    def on_mount(self) -> None:
        self.area.cursor_blink = self.app.cursor_blink
        self.load()

    def load(self) -> None:
        try:
            self.area.load_text(reveal(self.path.read_text(encoding="utf-8")))
        except OSError as exc:
            self.title_bar.update(Content(f"{self.label}: cannot read ({exc})"))
            return
        if self.line_start:
            self.call_after_refresh(self.jump)

    def reload(self, source: str = "") -> None:
        if source == "external":
            self.load()

    def jump(self) -> None:
        """Select the cited lines and leave the cursor on the first one (selection runs end -> start)."""
        area = self.area
        count = area.document.line_count
        start = self.line_start or 1
        end = max(self.line_end or start, start)
        if start > count or start < 1:
            self.out_of_range = True
            self.title_bar.update(
                Content.assemble(
                    self.heading(),
                    (f"  · lines {start}-{end} are past the end: the file has {count} lines", "bold $text-error"),
                )
            )
            return
        last = min(end, count) - 1
        if end > count:
            self.title_bar.update(
                Content.assemble(self.heading(), (f"  · the file ends at line {count}", "bold $text-warning"))
            )
        area.selection = Selection(start=(last, len(area.document.get_line(last))), end=(start - 1, 0))
        area.scroll_cursor_visible(center=True, animate=False)

    # ---- search: the TextArea's own selection marks the current match --------------------------------

    def run_search(self, query: str) -> int:
        self.offsets = find_all(self.area.text, query) if query else []
        self.matches = []  # (the base class's Static matches are not used here)
        return len(self.offsets)

    def show_match(self, index: int) -> None:
        if not self.offsets:
            return
        self.match_index = index % len(self.offsets)
        start = self.offsets[self.match_index]
        doc = self.area.document
        if not isinstance(doc, Document):  # a plain-text area's document: always one here
            return
        begin = doc.get_location_from_index(start)
        end = doc.get_location_from_index(start + len(self.search_query))
        self.area.selection = Selection(start=begin, end=end)
        self.area.scroll_cursor_visible(center=True, animate=False)
        from memtui.tui.widgets.search import SearchBar

        self.query_one(SearchBar).set_count(f"{self.match_index + 1} of {len(self.offsets)}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            return bool(self.offsets)
        return super().check_action(action, parameters)

    # ---- actions --------------------------------------------------------------------------------------

    def action_back(self) -> None:
        self.dismiss()

    def action_edit(self) -> None:
        from memtui.tui.screens.memory import FILES

        if self.label in FILES.values():
            self.dismiss()
            self.app.open_memory_file(self.label)
            return
        line = self.area.cursor_location[0] + 1
        if self.app.open_external(self.path, line=line):
            self.load()

    def action_copy_citation(self) -> None:
        """``path:start-end`` of the selection (or the cursor line): the form agents cite memory in."""
        sel = self.area.selection
        first, last = sorted((sel.start[0], sel.end[0]))
        self.app.copy_text(f"{self.label}:{first + 1}-{last + 1}", "citation")
