# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Rollouts: every indexed thread, filtered as you type and sorted by column, windowed from SQL.

Columns have priorities: on a narrow terminal the least useful ones are hidden (the strip under the table
shows the highlighted rollout in full), and Preview takes whatever width is left."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import Worker, get_current_worker

from memtui.core import clock
from memtui.domain.labels import label
from memtui.services import views
from memtui.services.phase1.eligibility import OlderSessions, older_sessions
from memtui.tui.format import fmt_size, fmt_time, home_path, short_path
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.cell_text import CellText
from memtui.tui.widgets.columns import NARROW, Column, apply_columns, hidden_note, layout_columns
from memtui.tui.widgets.windowed_table import WindowedTable

COLUMNS = [
    Column("updated", "Updated", 16, 0, 11),
    Column("project", "Project", 18, 1, 14),
    Column("source", "Source", 12, 6),
    Column("size", "Size", 7, 5),
    Column("status", "Stage 1", 20, 0, 14),
    Column("usage", "Uses", 6, 3),
    Column("last_use", "Last use", 10, 4),
    Column("preview", "Preview", 20, 2),  # widened to the rest of the screen
]


STATUS_STYLE = {
    "done": "green",
    "no-op": "dim",
    "failed": "bold red",
    "running": "yellow",
    "pending": "cyan",
    "skipped": "dim italic",
    "stale": "bold magenta",
}


def status_cell(status: str, reason: str, lease_expired: bool = False) -> CellText:
    if lease_expired:
        status, reason = "stale", ""  # the Jobs screen and the header say "stale lease" too
    text = f"{label(status)}: {reason}" if reason else label(status)
    return CellText(text.replace("\n", " "), STATUS_STYLE.get(status, ""), no_wrap=True, overflow="ellipsis")


PROJECT_WIDTH = next(c.width for c in COLUMNS if c.key == "project")


def project_label(cwd: str, width: int = PROJECT_WIDTH) -> str:
    """The project's last two folders in ``width`` cells, shortened so that the last one (what tells worktrees and
    sibling checkouts apart) stays whole: ``spotter-w…/fix-login``, not ``spotter-workt…`` for every worktree."""
    parts = [p for p in cwd.split("/") if p]
    if not parts:
        return cwd or "-"
    last = parts[-1]
    short = "/".join(parts[-2:]) if len(parts) > 2 else cwd
    if len(short) <= width:
        return short
    if len(last) >= width:
        return "…" + last[len(last) - width + 1 :]
    room = width - len(last) - 2  # the parent's first letters, "…/" and the last folder whole
    return f"{parts[-2][:room]}…/{last}" if room >= 2 and len(parts) > 1 else last


def project_cell(cwd: str, width: int = PROJECT_WIDTH) -> CellText:
    return CellText(project_label(cwd, width), no_wrap=True, overflow="ellipsis")


def updated_text(ts: int | None, narrow: bool, this_year: str) -> str:
    """Date and time; on a narrow screen this year's dates drop the year, other years' drop the time instead (a
    history spanning years must say which year)."""
    text = fmt_time(ts)
    if not narrow or text == "-":
        return text
    return text[5:] if text[:4] == this_year else text[:10]


def row_cells(r: views.RolloutRow, narrow: bool = False, project_width: int = PROJECT_WIDTH) -> dict[str, Any]:
    """The row's cells: ``CellText``, which paints as ``Text`` does at a fraction of its cost per keystroke."""
    return {
        "updated": CellText(updated_text(r.updated_at, narrow, fmt_time(clock.now())[:4])),
        "project": project_cell(r.cwd, project_width),
        "source": CellText(r.source, no_wrap=True, overflow="ellipsis"),
        "size": CellText(fmt_size(r.bytes), justify="right"),
        "status": status_cell(r.status, r.reason, r.lease_expired),
        "usage": CellText(str(r.usage_count) if r.usage_count else "-", justify="right"),
        "last_use": CellText(fmt_time(r.last_usage)[:10]),
        "preview": CellText(preview_text(r), no_wrap=True, overflow="ellipsis"),
    }


def preview_text(r: views.RolloutRow) -> str:
    """The rollout's own title (a ``/rename``, a thread name, a summary), when it has one, before its first words."""
    preview = r.preview.replace("\n", " ")
    return f"{r.title.replace(chr(10), ' ')} — {preview}" if r.title else preview


# What can change the backfill offer (the screen opening or coming back, or a task that indexes, extracts or forgets
# sessions): after any other reload the offer stands as it was, and its query (a walk of every older session, a
# quarter of a second at 100k) is not asked again.
OLDER_AFTER = frozenset({"mount", "resume", "external", "ingest", "phase1", "forget"})


def offer_text(older: OlderSessions) -> str:
    """The backfill offer as the screen says it: how many sessions, their span, the key."""
    return (
        f"{older.words()}. b extracts them once (Phase 1 over every session, whatever its age); "
        "the next Phase 2 consolidates them."
    )


class RolloutsScreen(MemtuiScreen):
    TITLE_TEXT = "Rollouts"
    MODE = "rollouts"
    LOADING, LOADER = "#rollouts", "rollouts-page"
    AUTO_FOCUS = "#rollouts"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="rollouts.filter"),
        Binding("s", "cycle_sort", "Sort", id="rollouts.sort"),
        Binding("r", "reverse", "Reverse", id="rollouts.reverse"),
        Binding("e", "extract", "Extract now", id="rollouts.extract"),
        Binding("b", "backfill", "Extract every session (backfill)", show=False, id="rollouts.backfill"),
        Binding("v", "pager", "View file", show=False, id="rollouts.pager"),
        Binding("y", "copy_id", "Copy id", show=False, id="rollouts.copy_id"),
        Binding("F", "forget", "Forget rollout", show=False, id="rollouts.forget"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="rollouts.clear_filter"),
    ]

    table = getters.query_one("#rollouts", WindowedTable)
    position = getters.query_one("#position", Label)
    hint = getters.query_one("#empty-hint", Label)
    offer = getters.query_one("#backfill-offer", Label)
    row_detail = getters.query_one("#row-detail", Static)
    filter_input = getters.query_one("#filter", Input)

    def __init__(self) -> None:
        super().__init__(id="rollouts-screen")
        self.filter_text = ""
        self.sort = "updated"
        self.descending = True
        self.last_load_ms = 0.0
        self.loads = 0
        self.counted = True
        self.rows: dict[str, views.RolloutRow] = {}
        self.shown: list[views.RolloutRow] = []
        self.layout_cols: list[tuple[Column, int]] = []
        self.narrow = False
        self._position_text = ""
        self._detail_row: views.RolloutRow | None = None
        self._generation = 0  # numbers each load; a fetch's result is shown only if no newer load started
        self._conns: dict[Worker[None], sqlite3.Connection] = {}  # running fetches' connections, to interrupt
        self._conns_lock = threading.Lock()
        self.older: OlderSessions | None = None  # the backfill on offer (sessions older than Phase 1's window)

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="filter-bar"):
            yield Input(placeholder="Filter (text, status:failed, source:claude)", id="filter", compact=True)
            yield Label("", id="position", markup=False)
        yield Label("", id="backfill-offer", markup=False)
        yield Label("", id="empty-hint", markup=False)
        yield WindowedTable(id="rollouts")
        yield Static("", id="row-detail", markup=False)

    def on_mount(self) -> None:
        self._set_columns(self.app.size.width)
        self.table.fit_window(self.app.size.height)
        self.reload("mount")

    def on_resize(self, event: events.Resize) -> None:
        self._set_columns(event.size.width)
        if self.table.fit_window(event.size.height) > len(self.shown) and self.table.row_total > len(self.shown):
            self.load_window(self.table.absolute_row, count=False)  # taller: fetch the rows that now fit

    def _set_columns(self, width: int) -> None:
        """Show the columns that fit; rebuild the table only when the set changes, else just resize."""
        visible = layout_columns(COLUMNS, width, "preview")
        self.narrow = width < NARROW
        rebuilt = apply_columns(self.table, self.layout_cols, visible)
        self.layout_cols = visible
        if rebuilt:
            self._update_headers()
            if self.shown:
                self._fill(self.table.window_offset, self.table.row_total, self.shown, self.table.absolute_row)

    # ---- loading --------------------------------------------------------------------------------

    def reload(self, source: str = "") -> None:
        self.load_window(self.table.absolute_row if source != "filter" else 0, count=True)
        if source.split(":", 1)[0] in OLDER_AFTER:
            self._check_older()

    @work(thread=True, exclusive=True, group="rollouts-older", exit_on_error=False)
    def _check_older(self) -> None:
        """The backfill offer: sessions older than ``max_rollout_age_days`` Phase 1 has not read (what
        ``memtui phase1`` offers, from the same query)."""
        conn = self.app.ctx.new_conn()
        try:
            older = older_sessions(conn, self.app.ctx.settings)
        finally:
            conn.close()
        self.post_message(self._Older(older))

    @dataclass
    class _Older(Message):
        bubble = False
        older: OlderSessions | None

    @on(_Older)
    def _older(self, message: _Older) -> None:
        self.older = message.older
        self.offer.display = message.older is not None
        if message.older is not None:
            self.offer.update(offer_text(message.older))

    def load_window(self, index: int, count: bool = True) -> None:
        """Fetch the window around absolute row ``index`` (and the count when the filter changed)."""
        table = self.table
        self._generation += 1
        self._fetch(
            self._generation,
            index,
            None if count else table.row_total,
            self.filter_text,
            self.sort,
            self.descending,
            table.window,
        )
        self._interrupt_superseded()

    def _interrupt_superseded(self) -> None:
        """Stop the queries of fetches a newer one replaced (a count over 100k rows) within a few SQLite steps.

        ``sqlite3_interrupt`` from this thread, not a progress handler in the worker's: a handler takes the GIL
        every few thousand steps, and each time waits for the thread painting the rows to give it up."""
        with self._conns_lock:
            for worker, conn in self._conns.items():
                if worker.is_cancelled:
                    conn.interrupt()

    @work(thread=True, exclusive=True, group="rollouts-page", exit_on_error=False)
    def _fetch(
        self, generation: int, index: int, total: int | None, filter_text: str, sort: str, descending: bool, window: int
    ) -> None:
        """Rows first, count after: a new filter paints its first window while a count that tests every thread
        runs here. A count the indexes answer comes with the rows, so the window and its total land in one paint."""
        worker = get_current_worker()
        started = time.perf_counter()
        conn = self.app.ctx.new_conn()
        with self._conns_lock:
            self._conns[worker] = conn
        try:
            if worker.is_cancelled:
                return
            if total is None and index == 0:
                rows = views.rollout_rows(conn, filter_text, sort, descending, 0, window)
                exact = len(rows) < window
                counted = None if exact else views.count_rollouts_from_indexes(conn, filter_text)
                if worker.is_cancelled:
                    return
                shown = len(rows) if counted is None else counted
                self.post_message(self._Loaded(generation, 0, shown, rows, 0, started, exact or counted is not None))
                if not exact and counted is None:
                    total = views.count_rollouts(conn, filter_text)
                    if not worker.is_cancelled:
                        self.post_message(self._Counted(generation, total))
                return
            if total is None:
                total = views.count_rollouts(conn, filter_text)
            index = min(max(index, 0), max(total - 1, 0))
            offset = max(0, min(index - window // 2, total - window))
            rows = views.rollout_rows(conn, filter_text, sort, descending, offset, window)
        except sqlite3.OperationalError:
            if worker.is_cancelled:
                return  # interrupted: superseded
            raise
        finally:
            with self._conns_lock:
                self._conns.pop(worker, None)
                conn.close()
        if not worker.is_cancelled:
            self.post_message(self._Loaded(generation, offset, total, rows, index, started))

    @dataclass
    class _Loaded(Message):
        """A fetched window, for the load numbered ``generation``."""

        bubble = False
        generation: int
        offset: int
        total: int
        rows: list[views.RolloutRow]
        index: int
        started: float
        exact: bool = True

    @dataclass
    class _Counted(Message):
        bubble = False
        generation: int
        total: int

    @on(_Loaded)
    def _loaded(self, message: _Loaded) -> None:
        if message.generation == self._generation:  # else a newer load replaced it
            self._show(message.offset, message.total, message.rows, message.index, message.started, message.exact)

    @on(_Counted)
    def _counted(self, message: _Counted) -> None:
        if message.generation == self._generation:
            self._set_total(message.total)

    def _set_total(self, total: int) -> None:
        self.table.row_total = total
        self.counted = True
        self._update_position()

    def _fill(self, offset: int, total: int, rows: list[views.RolloutRow], index: int) -> None:
        keys = [c.key for c, _ in self.layout_cols]
        width = next((w for c, w in self.layout_cols if c.key == "project"), PROJECT_WIDTH)
        cells = [(r.id, [row[k] for k in keys]) for r in rows for row in (row_cells(r, self.narrow, width),)]
        self.table.show_window(offset, total, cells, index)

    def _show(
        self, offset: int, total: int, rows: list[views.RolloutRow], index: int, started: float, exact: bool = True
    ) -> None:
        self.counted = exact
        self.rows = {r.id: r for r in rows}
        self.shown = rows
        self._fill(offset, total, rows, index)
        self._update_position()
        self.hint.display = not total
        if not total:
            self.hint.update(self.filter_hint() if self.filter_text else self.empty_hint())
        self.last_load_ms = (time.perf_counter() - started) * 1000
        self.loads += 1

    def filter_hint(self) -> str:
        return f"No rollout matches “{self.filter_text}”. Escape clears the filter."

    def empty_hint(self) -> str:
        """What a first start looks like: where memtui looked, and how to see it work on samples."""
        p = self.app.ctx.paths
        looked = ", ".join(home_path(x) for x in (p.codex_sessions, p.codex_archived, p.claude_projects))
        return (
            f"No rollouts indexed yet. memtui looked for Codex and Claude Code sessions in {looked} "
            f"(change codex_home / claude_dir in {home_path(p.home / 'config.toml')}). F5 ingests again. "
            "To see memtui at work on sample sessions, run `memtui demo` in a shell."
        )

    def _update_position(self) -> None:
        table = self.table
        of = f"{table.row_total:,}" if self.counted else f"{table.row_total:,}+"
        text = f"{table.absolute_row + 1:,} of {of}" if table.row_total else "0 rollouts"
        text += hidden_note(len(self.layout_cols), len(COLUMNS))
        if text != self._position_text:  # a load, its cursor move and its count each land here: lay out once
            self._position_text = text
            # The label keeps the widest width its text has needed (its min-width grows, right-aligned text): a
            # filter's smaller count then needs no layout, which would repaint the whole screen over two frames.
            needed = cell_len(text) + self.position.styles.padding.width
            floor = self.position.styles.min_width
            grows = floor is None or needed > floor.value
            if grows:
                self.position.styles.min_width = needed
            self.position.update(text, layout=grows)
        self._show_row_detail()

    def _show_row_detail(self) -> None:
        """The highlighted rollout in full: id, project, file, uses, and why it was skipped or failed."""
        row = self.rows.get(self.selected_thread() or "")
        if row is self._detail_row and row is not None:
            return  # the same rollout: its text is already shown
        was_empty = self._detail_row is None
        self._detail_row = row
        if row is None:
            self.row_detail.update("", layout=not was_empty)
            return
        paths = self.app.ctx.paths
        path = short_path(row.path, paths.codex_home, paths.claude_dir)
        uses = f" · used {row.usage_count}x, last {fmt_time(row.last_usage)[:10]}" if row.usage_count else ""
        third: tuple[str, str] = (
            (f"{label(row.status)}: {row.reason}", "$text-warning") if row.reason else (row.preview, "italic")
        )
        self.row_detail.update(  # always three lines (its max-height): its size changes only from or to empty
            Content.assemble(
                *(((row.title, "bold $text-accent"), " · ") if row.title else ()),
                (row.id, "bold"),
                f" · {row.source}{uses} · {row.cwd or '-'}\n",
                f"{path}\n",
                third,
            ),
            layout=was_empty,
        )

    def _update_headers(self) -> None:
        table = self.table
        for c, _ in self.layout_cols:
            arrow = (" ▼" if self.descending else " ▲") if c.key == self.sort else ""
            table.columns[c.key].label = Text(c.title + arrow, style="bold" if arrow else "")  # type: ignore[index]
        table.refresh()

    # ---- events ---------------------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.load_window(0, count=True)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.table.focus()

    @on(WindowedTable.NeedWindow)
    def _need_window(self, event: WindowedTable.NeedWindow) -> None:
        self.load_window(event.index, count=False)

    @on(DataTable.RowHighlighted, "#rollouts")
    def _highlighted(self) -> None:
        self._update_position()

    @on(DataTable.RowSelected, "#rollouts")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.app.open_rollout(event.row_key.value)

    @on(DataTable.HeaderSelected, "#rollouts")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        if key == self.sort:
            self.descending = not self.descending
        else:
            self.sort, self.descending = key, key not in ("project", "source", "preview")
        self._resort()

    # ---- actions --------------------------------------------------------------------------------

    def _resort(self) -> None:
        self._update_headers()
        self.load_window(0, count=False)

    def action_focus_filter(self) -> None:
        self.filter_input.focus()

    def action_clear_filter(self) -> None:
        if self.filter_input.value:
            self.filter_input.value = ""
        self.table.focus()

    def action_cycle_sort(self) -> None:
        keys = [c.key for c, _ in self.layout_cols]
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)] if self.sort in keys else keys[0]
        self.descending = self.sort not in ("project", "source", "preview")
        self._resort()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self._resort()

    def selected_thread(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        return str(key.value) if key.value else None

    def action_backfill(self) -> None:
        """Phase 1 over every session whatever its age (``memtui phase1 --all``), through the same service."""
        self.app.run_phase1(all_threads=True)

    def action_extract(self) -> None:
        row = self.rows.get(self.selected_thread() or "")
        if row is not None:
            self.app.extract_rollout(row.id, row.status)

    def action_pager(self) -> None:
        row = self.rows.get(self.selected_thread() or "")
        if row is not None:
            self.app.open_external(Path(row.path), pager=True)

    def action_copy_id(self) -> None:
        thread_id = self.selected_thread()
        if thread_id:
            self.app.copy_text(thread_id, "rollout id")

    def action_forget(self) -> None:
        thread_id = self.selected_thread()
        if thread_id:
            self.app.forget_rollout(thread_id)
