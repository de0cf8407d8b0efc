"""A one-line table cell that renders the segments rich's ``Text`` renders, without its wrapping machinery.

A ``Text`` cell goes through ``wrap``, ``Lines.justify`` and a ``join`` into a new ``Text`` before it yields a
segment; for a list that repaints a screen of rows on every keystroke that is most of the paint. ``CellText``
yields the same segment directly for the common case (one printable line, not wrapped, justified by default, left
or right) and hands anything else to ``Text`` itself, so what reaches the screen is the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

_ELLIPSIS = "…"


class CellText:
    """``Text(text, style=..., justify=..., overflow=..., no_wrap=...)`` for a table cell."""

    __slots__ = ("justify", "no_wrap", "overflow", "plain", "style")

    def __init__(
        self,
        text: str,
        style: str = "",
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        no_wrap: bool | None = None,
    ) -> None:
        self.plain = text
        self.style = style
        self.justify = justify
        self.overflow = overflow
        self.no_wrap = no_wrap

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"CellText({self.plain!r}, {self.style!r})"

    def _text(self) -> Text:
        return Text(self.plain, self.style, justify=self.justify, overflow=self.overflow, no_wrap=self.no_wrap)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        justify = self.justify or options.justify or "default"
        overflow = self.overflow or options.overflow or "fold"
        no_wrap = self.no_wrap if self.no_wrap is not None else bool(options.no_wrap)
        text = self.plain
        # what Text.__init__ strips (control codes), expands (tabs) or splits (newlines) takes Text's own path
        if not (no_wrap and text.isprintable() and justify in ("default", "left", "right") and overflow != "ignore"):
            yield from self._text().__rich_console__(console, options)
            return
        width = options.max_width
        if justify == "right":
            text = text.rstrip()
        if cell_len(text) > width:  # Text.truncate
            text = set_cell_size(text, width - 1) + _ELLIPSIS if overflow == "ellipsis" else set_cell_size(text, width)
        elif justify == "right":
            text = " " * (width - cell_len(text)) + text
        elif justify == "left":
            text += " " * (width - cell_len(text))
        # Text's join turns a base style into a span over the text: a styled cell yields a styled segment (none when
        # empty), a plain one a bare segment
        if not self.style:
            yield Segment(text)
        elif text:
            yield Segment(text, console.get_style(self.style))
        yield Segment("\n")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return self._text().__rich_measure__(console, options) if not self.plain.isprintable() else _measure(self.plain)


def _measure(text: str) -> Measurement:
    """Text.__rich_measure__ for one printable line."""
    widest = cell_len(text)
    words = text.split()
    return Measurement(max(cell_len(w) for w in words) if words else widest, widest)
