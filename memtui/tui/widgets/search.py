# ruff: noqa: RUF012  (Textual declares BINDINGS and CSS as mutable class attributes)
"""``/`` search inside a view: the bar, and highlighting matches in Static blocks (conversation, diff).

A screen that can search composes a ``SearchBar`` and implements ``run_search(query) -> matches`` and
``show_match(index)``; ``n``/``N`` move between matches."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Static

MATCH_STYLE = "bold reverse $warning"
CURRENT_STYLE = "bold reverse $success"


def find_all(text: str, query: str) -> list[int]:
    """Start offsets of every case-insensitive match."""
    if not query:
        return []
    hay, needle = text.lower(), query.lower()
    out, start = [], hay.find(needle)
    while start != -1:
        out.append(start)
        start = hay.find(needle, start + max(len(needle), 1))
    return out


def highlight(content: Content, query: str, current: int | None = None) -> tuple[Content, int]:
    """``content`` with every match styled (``current``: the index of the one to style as current)."""
    starts = find_all(content.plain, query)
    for i, start in enumerate(starts):
        content = content.stylize(CURRENT_STYLE if i == current else MATCH_STYLE, start, start + len(query))
    return content, len(starts)


class Searchable(Static):
    """A Static whose text can be searched: it keeps its unhighlighted content."""

    def __init__(self, content: Content, **kwargs: object) -> None:
        super().__init__(content, markup=False, **kwargs)  # type: ignore[arg-type]
        self.base = content
        self.matches = 0

    def search(self, query: str, current: int | None = None) -> int:
        shown, self.matches = highlight(self.base, query, current)
        self.update(shown if query else self.base)
        return self.matches


@dataclass
class Match:
    widget: Searchable
    index: int  # which match inside the widget


def search_blocks(blocks: list[Searchable], query: str) -> list[Match]:
    matches: list[Match] = []
    for block in blocks:
        n = block.search(query)
        matches += [Match(block, i) for i in range(n)]
    return matches


class SearchBar(Horizontal):
    """The search field at the bottom of a view: enter searches, escape closes, n/N step through matches."""

    DEFAULT_CSS = """
    SearchBar { height: 1; display: none; background: $boost; }
    SearchBar.-open { display: block; }
    SearchBar > Label { width: auto; padding: 0 1; color: $text-accent; }
    SearchBar > Input { width: 1fr; border: none; height: 1; }
    SearchBar > #search-count { width: auto; min-width: 12; color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "close", "Close search", show=False)]

    @dataclass
    class Changed(Message):
        query: str

    def compose(self) -> ComposeResult:
        yield Label("/")
        yield Input(placeholder="search (enter; then n / N)", id="search-input", compact=True)
        yield Label("", id="search-count", markup=False)

    def open(self) -> None:
        self.add_class("-open")
        self.query_one(Input).focus()

    def action_close(self) -> None:
        self.remove_class("-open")
        self.post_message(self.Changed(""))
        self.query_one(Input).value = ""

    def set_count(self, text: str) -> None:
        self.query_one("#search-count", Label).update(text)

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Changed(event.value))


def searchable_widgets(root: Widget) -> list[Searchable]:
    return list(root.query(Searchable))
