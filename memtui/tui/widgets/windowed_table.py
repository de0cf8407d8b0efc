# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""A DataTable that holds one window of a list paged from SQL.

A DataTable with 100,000 rows takes seconds to build and render, so it only ever holds ``window`` rows (at most
``WINDOW``; ``fit_window`` sizes it to the screen).
Moving the cursor past either edge (or paging, or jumping to the ends) asks the owner for the window
around an absolute row index; the owner queries SQL in a worker and calls ``show_window``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable


class WindowedTable(DataTable):
    WINDOW = 100  # rows held at once: a few screens' worth; building them is most of a filter's cost
    MIN_WINDOW = 24  # ``fit_window``: never fewer rows than this
    MARGIN = 10  # ``fit_window``: rows beyond the screen's height, so a few cursor moves need no fetch

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first", "Top", show=False, id="table.top"),
        Binding("G", "last", "Bottom", show=False, id="table.bottom"),
    ]

    @dataclass
    class NeedWindow(Message):
        """The cursor should land on absolute row ``index``; load the window around it."""

        table: WindowedTable
        index: int

        @property
        def control(self) -> WindowedTable:
            return self.table

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.window_offset = 0
        self.row_total = 0
        self.window = self.WINDOW  # rows fetched per window; an owner may hold fewer (``fit_window``)

    @property
    def absolute_row(self) -> int:
        return self.window_offset + max(self.cursor_row, 0)

    def show_window(self, offset: int, total: int, rows: Sequence[tuple[str, Sequence[Any]]], cursor: int) -> None:
        """Replace the rows with one window; ``cursor`` is the absolute index to put the cursor on."""
        self.window_offset, self.row_total = offset, total
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if rows:
            self.move_cursor(row=min(max(cursor - offset, 0), len(rows) - 1), animate=False)

    def fit_window(self, screen_height: int) -> int:
        """Hold what fits a screen of ``screen_height`` lines plus a margin, not ``WINDOW`` rows: every row held is
        built again on each filter or sort, so fewer rows make each keystroke cheaper. Returns the new size."""
        self.window = min(self.WINDOW, max(self.MIN_WINDOW, screen_height + self.MARGIN))
        return self.window

    def _need(self, index: int) -> None:
        index = min(max(index, 0), max(self.row_total - 1, 0))
        self.post_message(self.NeedWindow(self, index))

    def action_cursor_down(self) -> None:
        if (
            self.row_count
            and self.cursor_row >= self.row_count - 1
            and self.window_offset + self.row_count < self.row_total
        ):
            self._need(self.absolute_row + 1)
        else:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.cursor_row <= 0 and self.window_offset > 0:
            self._need(self.window_offset - 1)
        else:
            super().action_cursor_up()

    def action_page_down(self) -> None:
        step = max(self.scrollable_content_region.height - 1, 1)
        if self.cursor_row + step >= self.row_count and self.window_offset + self.row_count < self.row_total:
            self._need(self.absolute_row + step)
        else:
            super().action_page_down()

    def action_page_up(self) -> None:
        step = max(self.scrollable_content_region.height - 1, 1)
        if self.cursor_row - step < 0 and self.window_offset > 0:
            self._need(self.absolute_row - step)
        else:
            super().action_page_up()

    def action_first(self) -> None:
        if self.window_offset > 0:
            self._need(0)
        else:
            self.move_cursor(row=0)

    def action_last(self) -> None:
        if self.window_offset + self.row_count < self.row_total:
            self._need(self.row_total - 1)
        else:
            self.move_cursor(row=self.row_count - 1)

    action_scroll_top = action_first
    action_scroll_bottom = action_last
