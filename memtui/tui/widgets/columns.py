"""Table columns that fit the terminal: the least useful are hidden first, one flexible column takes the rest."""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import DataTable

NARROW = 100  # below this many columns a table uses the narrow widths


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    priority: int  # 0 is never hidden; otherwise the highest number goes first
    narrow: int = 0  # width on a narrow terminal (0: the same)


def layout_columns(columns: list[Column], width: int, flex: str, flex_min: int = 20) -> list[tuple[Column, int]]:
    """The columns that fit ``width`` with their widths; ``flex`` gets what is left (at least ``flex_min``)."""
    narrow = width < NARROW
    cols = [(c, (c.narrow or c.width) if narrow else c.width) for c in columns]
    avail = width - 3  # scrollbar and margins

    def need(cs: list[tuple[Column, int]]) -> int:
        return sum((flex_min if c.key == flex else w) + 2 for c, w in cs)

    while need(cols) > avail:
        droppable = [x for x in cols if x[0].priority]
        if not droppable:
            break
        cols.remove(max(droppable, key=lambda x: x[0].priority))
    fixed = sum(w + 2 for c, w in cols if c.key != flex)
    return [(c, max(flex_min, avail - fixed - 2) if c.key == flex else w) for c, w in cols]


def apply_columns(table: DataTable, shown: list[tuple[Column, int]], visible: list[tuple[Column, int]]) -> bool:
    """Give ``table`` the ``visible`` columns: resize in place when the set is what ``shown`` has, else rebuild.

    Returns True when the columns were rebuilt (the caller refills its rows)."""
    if [c.key for c, _ in visible] == [c.key for c, _ in shown] and table.columns:
        for c, w in visible:
            table.columns[c.key].width = w  # type: ignore[index]
        table.refresh(layout=True)
        return False
    table.clear(columns=True)
    for c, w in visible:
        table.add_column(c.title, key=c.key, width=w)
    return True


def hidden_note(shown: int, total: int) -> str:
    hidden = total - shown
    return f" · {hidden} col{'s' if hidden > 1 else ''} hidden" if hidden else ""
