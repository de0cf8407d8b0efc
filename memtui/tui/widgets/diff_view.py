# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""A unified diff shown hunk by hunk, syntax-highlighted, with a current hunk (lazygit-style navigation)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pygments.token import Token
from rich.table import Table
from rich.text import Text
from textual.content import Content
from textual.highlight import HighlightTheme, highlight
from textual.reactive import reactive
from textual.widgets import Static

from memtui.redact import PLACEHOLDER
from memtui.tui.widgets.search import Searchable, find_all
from memtui.tui.widgets.text import REDACTION_STYLE
from memtui.tui.widgets.vim import VimScroll


class DiffTheme(HighlightTheme):
    """Textual's default theme has no style for inserted/deleted lines; add them."""

    STYLES = {
        **HighlightTheme.STYLES,
        Token.Generic.Inserted: "$text-success",
        Token.Generic.Deleted: "$text-error",
        Token.Generic.Heading: "bold $text-primary",
        Token.Generic.Subheading: "$text-accent",
    }


def mark_placeholders(content: Content) -> Content:
    """Redactions stay visible in a diff too."""
    text = content.plain
    start = text.find(PLACEHOLDER)
    while start != -1:
        content = content.stylize(REDACTION_STYLE, start, start + len(PLACEHOLDER))
        start = text.find(PLACEHOLDER, start + 1)
    return content


@dataclass
class Hunk:
    path: str
    header: str
    text: str


@dataclass
class FileDiff:
    path: str
    status: str  # A | M | D
    hunks: list[Hunk] = field(default_factory=list)


def parse_diff(diff: str) -> list[FileDiff]:
    """Split ``git diff`` output into files and hunks (binary or empty files keep no hunks)."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk_lines: list[str] = []

    def flush_hunk() -> None:
        nonlocal hunk_lines
        if current is not None and hunk_lines:
            current.hunks.append(Hunk(current.path, hunk_lines[0], "\n".join(hunk_lines)))
        hunk_lines = []

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            flush_hunk()
            parts = line.split(" b/", 1)
            current = FileDiff(path=parts[1] if len(parts) == 2 else line[11:], status="M")
            files.append(current)
        elif current is None:
            continue
        elif hunk_lines:
            if line.startswith("@@"):
                flush_hunk()
                hunk_lines = [line]
            else:
                hunk_lines.append(line)
        elif line.startswith("new file mode"):
            current.status = "A"
        elif line.startswith("deleted file mode"):
            current.status = "D"
        elif line.startswith("--- /dev/null"):
            current.status = "A"
        elif line.startswith("+++ /dev/null"):
            current.status = "D"
        elif line.startswith("+++ b/"):
            current.path = line[6:]
        elif line.startswith("@@"):
            hunk_lines = [line]
    flush_hunk()
    return files


def side_by_side(hunk_text: str) -> Table:
    """A hunk as two columns, old on the left and new on the right; changed lines are paired in order."""
    table = Table.grid(expand=True, padding=(0, 1))
    table.add_column(ratio=1, overflow="fold")
    table.add_column(ratio=1, overflow="fold")
    lines = hunk_text.splitlines()
    table.add_row(Text(lines[0] if lines else "", style="bold"), Text(""))
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        for i in range(max(len(old), len(new))):
            left = Text(old[i], style="red") if i < len(old) else Text("")
            right = Text(new[i], style="green") if i < len(new) else Text("")
            table.add_row(left, right)
        old.clear()
        new.clear()

    for line in lines[1:]:
        if line.startswith("-"):
            old.append(line)
        elif line.startswith("+"):
            new.append(line)
        else:
            flush()
            table.add_row(Text(line, style="dim"), Text(line, style="dim"))
    flush()
    return table


class HunkView(Searchable):
    DEFAULT_CSS = """
    HunkView { padding: 0 1; border: round $panel; border-title-color: $text-muted; }
    HunkView.-current { border: round $accent; border-title-color: $text-accent; background: $boost; }
    """

    def __init__(self, hunk: Hunk, index: int, of_file: tuple[int, int], split: bool = False) -> None:
        super().__init__(mark_placeholders(highlight(hunk.text, language="diff", theme=DiffTheme)))
        self.hunk = hunk
        self.index = index
        self.split = split
        self.border_title = Content(f"{hunk.path}  hunk {of_file[0]}/{of_file[1]}")
        if split:
            self.update(side_by_side(hunk.text))

    def search(self, query: str, current: int | None = None) -> int:
        if not self.split:
            return super().search(query, current)
        self.matches = len(find_all(self.base.plain, query))
        return self.matches


class DiffView(VimScroll, can_focus=True):
    """All files' hunks in one scroll; ``current`` is the hunk the keys move between.

    ``split`` shows each hunk side by side (old | new), for wide terminals."""

    DEFAULT_CSS = """
    DiffView { padding: 0 1; }
    DiffView > .file-header { text-style: bold; color: $text-primary; background: $panel; padding: 0 1; }
    DiffView > .empty { color: $text-muted; padding: 1 2; }
    """

    current: reactive[int] = reactive(0, init=False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.files: list[FileDiff] = []
        self.hunks: list[HunkView] = []
        self.split = False
        self.diff_text = ""
        self.empty_text = "No changes."

    def set_split(self, split: bool) -> None:
        """Switch between unified and side-by-side, keeping the current hunk."""
        if split != self.split:
            current = self.current
            self.split = split
            self.show_diff(self.diff_text, self.empty_text)
            if self.hunks:
                self.current = min(current, len(self.hunks) - 1)

    def show_diff(self, diff: str, empty: str = "No changes.") -> None:
        self.diff_text, self.empty_text = diff, empty
        self.files = parse_diff(diff)
        self.hunks = []
        self.remove_children()
        widgets: list[Static] = []
        for f in self.files:
            widgets.append(Static(Content(f"{f.status}  {f.path}"), classes="file-header", markup=False))
            if not f.hunks:
                widgets.append(Static("(no text changes)", classes="empty", markup=False))
            for i, hunk in enumerate(f.hunks, 1):
                view = HunkView(hunk, len(self.hunks), (i, len(f.hunks)), self.split)
                self.hunks.append(view)
                widgets.append(view)
        if not widgets:
            widgets.append(Static(Content(empty), classes="empty", markup=False))
        self.mount_all(widgets)
        self.set_reactive(DiffView.current, 0)
        if self.hunks:
            self.hunks[0].add_class("-current")

    def watch_current(self, old: int, new: int) -> None:
        if 0 <= old < len(self.hunks):
            self.hunks[old].remove_class("-current")
        if 0 <= new < len(self.hunks):
            self.hunks[new].add_class("-current")
            self.scroll_to_widget(self.hunks[new], animate=False, top=True)

    def next_hunk(self) -> None:
        if self.hunks:
            self.current = min(self.current + 1, len(self.hunks) - 1)

    def previous_hunk(self) -> None:
        if self.hunks:
            self.current = max(self.current - 1, 0)

    def jump_to_file(self, path: str) -> None:
        for view in self.hunks:
            if view.hunk.path == path:
                self.current = view.index
                return
        for child in self.query(".file-header"):
            if str(child.render()).endswith(path):
                self.scroll_to_widget(child, animate=False, top=True)
                return

    @property
    def current_path(self) -> str | None:
        if 0 <= self.current < len(self.hunks):
            return self.hunks[self.current].hunk.path
        return self.files[0].path if self.files else None
