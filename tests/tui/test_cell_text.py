"""``CellText`` paints exactly what rich's ``Text`` paints in a table cell, for every kind of text a rollout row holds."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.style import Style
from rich.text import Text
from textual.renderables.styled import Styled

from memtui.tui.widgets.cell_text import CellText

TEXTS = [
    "",
    "-",
    "12.3 KB",
    "trailing spaces   ",
    "Fix the flaky checkout test on CI before the release",
    "Ünïcödé Straße",
    "中文字符的预览文本很长",
    "emoji 🚀 launch 🚀🚀🚀",
    "a\u0301 combining",
    "tab\there",
    "bell\x07 and cr\r",
    "nbsp\u00a0here",
    "zero\u200bwidth",
]
KINDS = [
    {},
    {"no_wrap": True, "overflow": "ellipsis"},
    {"justify": "right"},
    {"justify": "left", "no_wrap": True},
    {"no_wrap": True, "overflow": "crop"},
]


def _lines(console: Console, cell: object, width: int, no_wrap: bool) -> list[list[tuple[str, Style | None]]]:
    # as DataTable._render_cell renders a cell: padded, styled, one line high
    options = console.options.update_dimensions(width, 1)
    if no_wrap:
        options = options.update(no_wrap=True)
    rendered = console.render_lines(
        Styled(Padding(cell, (0, 1)), pre_style=Style(bgcolor="grey11"), post_style=Style(bold=True)),  # type: ignore[arg-type]
        options,
    )
    return [[(s.text, s.style) for s in line] for line in rendered]


@pytest.mark.parametrize("style", ["", "bold red", "dim italic"])
@pytest.mark.parametrize("kind", KINDS)
def test_cell_text_renders_and_measures_as_text_does(style: str, kind: dict) -> None:
    console = Console(width=120, color_system="truecolor", legacy_windows=False)
    for text in TEXTS:
        for width in (1, 2, 3, 6, 9, 14, 30, 80):
            for no_wrap in (True, False):
                expected = _lines(console, Text(text, style, **kind), width, no_wrap)
                assert _lines(console, CellText(text, style, **kind), width, no_wrap) == expected, (text, width)
        options = console.options
        measured = CellText(text, style, **kind).__rich_measure__(console, options)
        assert measured == Text(text, style, **kind).__rich_measure__(console, options)
        assert isinstance(measured, Measurement) and str(CellText(text, style)) == text
