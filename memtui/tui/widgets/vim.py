# ruff: noqa: RUF012  (Textual declares BINDINGS as mutable class attributes)
"""The same movement keys on every list and scroll: ``j``/``k`` down/up, ``g``/``G`` top/bottom."""

from __future__ import annotations

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, OptionList

VIM_TABLE: list[BindingType] = [
    Binding("j", "cursor_down", "Down", show=False),
    Binding("k", "cursor_up", "Up", show=False),
    Binding("g", "scroll_top", "Top", show=False),
    Binding("G", "scroll_bottom", "Bottom", show=False),
]


class VimDataTable(DataTable):
    BINDINGS = VIM_TABLE

    def action_scroll_top(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_scroll_bottom(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)


class VimOptionList(OptionList):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "Top", show=False),
        Binding("G", "last", "Bottom", show=False),
    ]


class VimScroll(VerticalScroll):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        Binding("g", "scroll_home", "Top", show=False),
        Binding("G", "scroll_end", "Bottom", show=False),
    ]
