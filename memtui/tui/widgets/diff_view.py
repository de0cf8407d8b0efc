# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""A unified diff shown hunk by hunk, syntax-highlighted, with a current hunk (lazygit-style navigation).

Hunks come from the domain parser (``memtui.services.review.hunks``), so the ids the UI marks are the ids the CLI takes.
"""

from __future__ import annotations

from pygments.token import Token
from rich.table import Table
from rich.text import Text
from textual.content import Content
from textual.highlight import HighlightTheme, highlight
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from memtui.adapters.memroot.files import is_generated_input
from memtui.adapters.redact import PLACEHOLDER
from memtui.core.hidden import reveal
from memtui.services.review.hunks import FileDiff, Hunk, parse_diff, unified_diff
from memtui.tui.widgets.search import Searchable, find_all
from memtui.tui.widgets.text import REDACTION_STYLE, mark_hidden
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


def amended_display(hunk: Hunk, amended: str) -> str:
    """The hunk as a diff of the baseline's lines against the reviewer's text (what will be committed)."""
    body = unified_diff("x", "".join(hunk.old_lines), amended, context=10**6).split("\n")[3:]
    while body and not body[0].startswith("@@"):
        body.pop(0)
    return "\n".join([f"{hunk.header}  (amended)", *body[1:]]).rstrip("\n")


def side_by_side(hunk_text: str) -> Table:
    """A hunk as two columns, old on the left and new on the right; changed lines are paired in order."""
    table = Table.grid(expand=True, padding=(0, 1))
    table.add_column(ratio=1, overflow="fold")
    table.add_column(ratio=1, overflow="fold")
    lines = reveal(hunk_text).splitlines()
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


FIRST_HUNKS = 8  # mounted before the first paint: more than a tall terminal shows
MOUNT_BATCH = 16  # mounted per refresh after it
SHOWN_LINES = 300  # a longer hunk shows this many lines until `o` (every refresh re-renders a hunk's whole text)


class HunkView(Searchable):
    DEFAULT_CSS = """
    HunkView { padding: 0 1; border: round $panel; border-title-color: $text-muted; }
    HunkView.-current { border: round $accent; border-title-color: $text-accent; background: $boost; }
    HunkView.-rejected { border: round $error; border-subtitle-color: $text-error; color: $text-muted; }
    HunkView.-rejected.-current { border: double $error; }
    HunkView.-amended { border: round $warning; border-subtitle-color: $text-warning; }
    HunkView.-amended.-current { border: double $warning; }
    """

    def __init__(self, hunk: Hunk, index: int, of_file: tuple[int, int], split: bool = False) -> None:
        super().__init__(Content(""))
        self.hunk = hunk
        self.index = index
        self.split = split
        self.rejected = False
        self.amended: str | None = None
        self.decided = False  # a decision is shown only where the screen takes decisions (a run awaiting review)
        self.base_title = Content(f"{hunk.path}  hunk {of_file[0]}/{of_file[1]}  {hunk.id}")
        self.title_extra = Content("")  # what the screen adds after the name (the trust summary)
        self._text = hunk.text  # what is shown: the hunk, or the reviewer's amended text
        self._base: Content | None = None  # highlighted when first needed: a 256-hunk run paints its first at once
        self.filled = False
        self.expanded = False
        self._show_title()

    @property
    def hidden_lines(self) -> int:
        """How many lines of the text are not shown (a long hunk before `o`)."""
        if self.expanded:
            return 0
        lines = self._text.count("\n") + 1
        return lines - SHOWN_LINES if lines > SHOWN_LINES + SHOWN_LINES // 10 else 0

    def _shown_text(self) -> str:
        if not self.hidden_lines:
            return self._text
        return "\n".join(self._text.split("\n", SHOWN_LINES)[:SHOWN_LINES])

    def show_all(self) -> bool:
        """Show every line; False when all were shown already."""
        if not self.hidden_lines:
            return False
        self.expanded, self._base = True, None
        self.fill()
        return True

    @property
    def base(self) -> Content:
        if self._base is None:
            content = self._content(self._shown_text())
            if hidden := self.hidden_lines:
                more = f"\n… {hidden:,} more line{'s' if hidden != 1 else ''} in this hunk: o shows them all"
                content = Content.assemble(content, (more, "bold $text-warning"))
            self._base = content
        return self._base

    @base.setter
    def base(self, content: Content) -> None:
        self._base = content

    def fill(self) -> None:
        """Render the text (highlighted, or side by side): done as the hunk is mounted, not when it is made."""
        self.filled = True
        self.update(side_by_side(self._shown_text()) if self.split else self.base)

    @staticmethod
    def _content(text: str) -> Content:
        return mark_hidden(mark_placeholders(highlight(reveal(text), language="diff", theme=DiffTheme)))

    def search(self, query: str, current: int | None = None) -> int:
        if query and self.hidden_lines and find_all(self._text, query):
            self.show_all()  # a match may lie in the lines not shown: show them, so every match is on screen
        if not self.split:
            return super().search(query, current)
        self.matches = len(find_all(self.base.plain, query))
        return self.matches

    def decision_word(self) -> Content:
        """The decision in a word or two, for the top border (where the eye is when a hunk comes on screen)."""
        if not self.decided:
            return Content("")
        if self.rejected:
            return Content.styled("✗ left out", "bold $text-error")
        if self.amended is not None:
            return Content.styled("✎ amended", "bold $text-warning")
        return Content.styled("✓ goes in", "$text-success")

    def set_title_extra(self, extra: Content) -> None:
        self.title_extra = extra
        self._show_title()

    def _show_title(self) -> None:
        word = self.decision_word()
        self.border_title = Content.assemble(*((word, "  ") if word else ()), self.base_title, self.title_extra)

    def set_decision(self, rejected: bool, amended: str | None) -> None:
        """Show whether the hunk goes in, is left out, or goes in with the reviewer's text: on the top border, and
        with the key that changes it on the bottom one."""
        self.rejected, self.amended, self.decided = rejected, amended, True
        self.set_class(rejected, "-rejected")
        self.set_class(amended is not None and not rejected, "-amended")
        from memtui.services.review.decide import remembered_if_left_out  # (when shown: not at start-up)

        if rejected and is_generated_input(self.hunk.file):
            self.border_subtitle = Content("✗ left out for now: the next run renders it again (space: take it)")
        elif rejected and remembered_if_left_out(self.hunk):
            self.border_subtitle = Content("✗ left out, remembered: later runs keep it out (space: take it)")
        elif rejected:
            self.border_subtitle = Content("✗ left out for now: it adds no line to remember (space: take it)")
        elif amended is not None:
            self.border_subtitle = Content("✎ amended: your text goes in")
        else:
            self.border_subtitle = Content("✓ goes in")
        self._show_title()
        text = amended_display(self.hunk, amended) if amended is not None else self.hunk.text
        if text != self._text:
            self._text, self._base = text, None
            if self.filled:
                self.fill()


class DiffView(VimScroll, can_focus=True):
    """All files' hunks in one scroll; ``current`` is the hunk the keys move between.

    ``split`` shows each hunk side by side (old | new), for wide terminals."""

    DEFAULT_CSS = """
    DiffView { padding: 0 1; }
    DiffView > .file-header { text-style: bold; color: $text-primary; background: $panel; padding: 0 1; }
    DiffView > .empty { color: $text-muted; padding: 1 2; }
    """

    current: reactive[int] = reactive(0, init=False)

    class CurrentChanged(Message):
        """The current hunk changed (keys, a jump, scrolling, a new diff): what shows it follows."""

        def __init__(self, diff: DiffView, index: int) -> None:
            super().__init__()
            self.diff, self.index = diff, index

        @property
        def control(self) -> DiffView:
            return self.diff

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.files: list[FileDiff] = []
        self.hunks: list[HunkView] = []
        self._pending: list[Static] = []  # widgets made but not yet mounted (after the first paint)
        self._generation = 0  # which show_diff a queued batch belongs to
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
        """Show ``diff``: the widgets of the first hunks are mounted now, the rest a batch per refresh after the
        first paint (a run with 256 new summaries is hundreds of highlighted hunks), or at once when a key goes to
        one of them."""
        self.diff_text, self.empty_text = diff, empty
        self.files = parse_diff(diff)
        self.hunks = []
        self.remove_children()
        self._generation += 1
        widgets: list[Static] = []
        for f in self.files:
            widgets.append(Static(Content(f"{f.status}  {f.path}"), classes="file-header", markup=False))
            if f.binary:
                widgets.append(Static("(binary file)", classes="empty", markup=False))
            for i, hunk in enumerate(f.hunks, 1):
                view = HunkView(hunk, len(self.hunks), (i, len(f.hunks)), self.split)
                self.hunks.append(view)
                widgets.append(view)
        if not widgets:
            widgets.append(Static(Content(empty), classes="empty", markup=False))
        first = next(
            (n + 1 for n, w in enumerate(widgets) if isinstance(w, HunkView) and w.index == FIRST_HUNKS - 1), None
        )
        self._pending = widgets[first:] if first is not None else []
        self._mount(widgets[:first] if first is not None else widgets)
        if self._pending:
            self.call_after_refresh(self._mount_more, self._generation)
        self.set_reactive(DiffView.current, 0)
        if self.hunks:
            self.hunks[0].add_class("-current")
        self.post_message(self.CurrentChanged(self, 0))

    def _mount(self, widgets: list[Static]) -> None:
        for w in widgets:
            if isinstance(w, HunkView):
                w.fill()
        self.mount_all(widgets)

    def _mount_more(self, generation: int) -> None:
        if generation != self._generation or not self._pending:
            return
        batch, self._pending = self._pending[:MOUNT_BATCH], self._pending[MOUNT_BATCH:]
        self._mount(batch)
        if self._pending:
            self.call_after_refresh(self._mount_more, generation)

    def action_scroll_end(self) -> None:
        """``G`` goes to the end of the whole diff, not of the part mounted so far."""
        if self._pending:
            self._pending, rest = [], self._pending
            self._mount(rest)
            self.call_after_refresh(self.action_scroll_end)
            return
        super().action_scroll_end()

    def _mount_through(self, view: HunkView) -> bool:
        """Mount every widget up to ``view`` now; True when it was still waiting (its region is not known yet)."""
        if view not in self._pending:
            return False
        at = self._pending.index(view) + 1
        batch, self._pending = self._pending[:at], self._pending[at:]
        self._mount(batch)
        return True

    def watch_current(self, old: int, new: int) -> None:
        if 0 <= old < len(self.hunks):
            self.hunks[old].remove_class("-current")
        if 0 <= new < len(self.hunks):
            view = self.hunks[new]
            view.add_class("-current")
            if not self._following_scroll:
                if self._mount_through(view):
                    self.call_after_refresh(self.scroll_to_widget, view, animate=False, top=True)
                else:
                    self.scroll_to_widget(view, animate=False, top=True)
        self.post_message(self.CurrentChanged(self, new))

    _following_scroll = False

    def watch_scroll_y(self, old: float, new: float) -> None:
        """Scrolling (j/k, page keys, the wheel) that takes the current hunk off screen makes the hunk at the top
        of the view the current one: the hunk the keys act on is always one the person sees."""
        super().watch_scroll_y(old, new)
        self.call_after_refresh(self._follow_scroll)

    def _follow_scroll(self) -> None:
        view = self.current_hunk
        if view is None or not self.is_mounted:
            return
        visible = self.scrollable_content_region
        if view.region and view.region.overlaps(visible):
            return
        for candidate in self.hunks:
            if candidate.region.overlaps(visible):
                self._following_scroll = True
                try:
                    self.current = candidate.index
                finally:
                    self._following_scroll = False
                return

    def next_hunk(self) -> None:
        if self.hunks:
            self.current = min(self.current + 1, len(self.hunks) - 1)

    def previous_hunk(self) -> None:
        if self.hunks:
            self.current = max(self.current - 1, 0)

    @property
    def current_hunk(self) -> HunkView | None:
        return self.hunks[self.current] if 0 <= self.current < len(self.hunks) else None

    def jump_to_file(self, path: str) -> None:
        """The first hunk of ``path``, unless the current hunk is already one of that file's."""
        current = self.current_hunk
        if current is not None and current.hunk.path == path:
            return
        for view in self.hunks:
            if view.hunk.path == path:
                self.current = view.index
                return
        if self._pending:  # a file with no hunks (binary, mode only) may still wait to be mounted
            self._pending, rest = [], self._pending
            self._mount(rest)
            self.call_after_refresh(self.jump_to_file, path)
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
