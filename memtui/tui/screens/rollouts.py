# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Rollouts: every indexed thread, filtered as you type and sorted by column, windowed from SQL."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import get_current_worker

from memtui import views
from memtui.tui import ops
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.windowed_table import WindowedTable

COLUMNS: list[tuple[str, str, int]] = [
    ("updated", "Updated", 16),
    ("project", "Project", 18),
    ("source", "Source", 12),
    ("size", "Size", 6),
    ("status", "Stage 1", 20),
    ("usage", "Uses", 4),
    ("last_use", "Last use", 10),
    ("preview", "Preview", 40),  # widened to the rest of the screen on resize
]
FIXED_WIDTH = sum(w + 2 for _, _, w in COLUMNS[:-1]) + 4

STATUS_STYLE = {
    "done": "green",
    "no-op": "dim",
    "failed": "bold red",
    "running": "yellow",
    "pending": "cyan",
    "skipped": "dim italic",
}


def status_cell(status: str, reason: str) -> Text:
    label = f"{status}: {reason}" if reason else status
    return Text(label.replace("\n", " "), style=STATUS_STYLE.get(status, ""), no_wrap=True, overflow="ellipsis")


def project_cell(cwd: str) -> Text:
    parts = [p for p in cwd.split("/") if p]
    short = "/".join(parts[-2:]) if len(parts) > 2 else cwd
    return Text(short or "-", no_wrap=True, overflow="ellipsis")


def row_cells(r: views.RolloutRow) -> list[Any]:
    return [
        Text(ops.fmt_time(r.updated_at)),
        project_cell(r.cwd),
        Text(r.source, no_wrap=True, overflow="ellipsis"),
        Text(ops.fmt_size(r.bytes), justify="right"),
        status_cell(r.status, r.reason),
        Text(str(r.usage_count) if r.usage_count else "-", justify="right"),
        Text(ops.fmt_time(r.last_usage)[:10]),
        Text(r.preview.replace("\n", " "), no_wrap=True, overflow="ellipsis"),
    ]


class RolloutsScreen(MemtuiScreen):
    TITLE_TEXT = "Rollouts"
    MODE = "rollouts"
    AUTO_FOCUS = "#rollouts"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="rollouts.filter"),
        Binding("s", "cycle_sort", "Sort", id="rollouts.sort"),
        Binding("r", "reverse", "Reverse", id="rollouts.reverse"),
        Binding("e", "extract", "Extract now", id="rollouts.extract"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="rollouts.clear_filter"),
    ]

    def __init__(self) -> None:
        super().__init__(id="rollouts-screen")
        self.filter_text = ""
        self.sort = "updated"
        self.descending = True
        self.last_load_ms = 0.0
        self.loads = 0
        self.rows: dict[str, views.RolloutRow] = {}

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="filter-bar"):
            yield Input(placeholder="Filter (text, status:failed, source:claude)", id="filter", compact=True)
            yield Label("", id="position", markup=False)
        yield Label("", id="empty-hint", markup=False)
        yield WindowedTable(id="rollouts")
        yield Static("", id="row-detail", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(WindowedTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        self._update_headers()
        self.reload("mount")

    def on_resize(self, event: events.Resize) -> None:
        table = self.query_one(WindowedTable)
        table.columns["preview"].width = max(20, event.size.width - FIXED_WIDTH)  # type: ignore[index]
        table.refresh(layout=True)

    # ---- loading --------------------------------------------------------------------------------

    def reload(self, source: str = "") -> None:
        table = self.query_one(WindowedTable)
        self.load_window(table.absolute_row if source != "filter" else 0, count=True)

    def load_window(self, index: int, count: bool = True) -> None:
        """Fetch the window around absolute row ``index`` (and the count when the filter changed)."""
        table = self.query_one(WindowedTable)
        self._fetch(
            index, None if count else table.row_total, self.filter_text, self.sort, self.descending, table.WINDOW
        )

    @work(thread=True, exclusive=True, group="rollouts-page", exit_on_error=False)
    def _fetch(self, index: int, total: int | None, filter_text: str, sort: str, descending: bool, window: int) -> None:
        """Rows first, count after: a new filter paints its first window before the full count is known."""
        worker = get_current_worker()
        started = time.perf_counter()
        conn = self.mapp.ctx.new_conn()
        try:
            if total is None and index == 0:
                rows = views.rollout_rows(conn, filter_text, sort, descending, 0, window)
                exact = len(rows) < window
                if worker.is_cancelled:
                    return
                self.app.call_from_thread(self._show, 0, len(rows), rows, 0, started, exact)
                if not exact:
                    total = views.count_rollouts(conn, filter_text)
                    if not worker.is_cancelled:
                        self.app.call_from_thread(self._set_total, total)
                return
            if total is None:
                total = views.count_rollouts(conn, filter_text)
            index = min(max(index, 0), max(total - 1, 0))
            offset = max(0, min(index - window // 2, total - window))
            rows = views.rollout_rows(conn, filter_text, sort, descending, offset, window)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, offset, total, rows, index, started)

    def _set_total(self, total: int) -> None:
        table = self.query_one(WindowedTable)
        table.row_total = total
        self.counted = True
        self._update_position()

    def _show(
        self, offset: int, total: int, rows: list[views.RolloutRow], index: int, started: float, exact: bool = True
    ) -> None:
        table = self.query_one(WindowedTable)
        self.counted = exact
        self.rows = {r.id: r for r in rows}
        table.show_window(offset, total, [(r.id, row_cells(r)) for r in rows], index)
        self._update_position()
        hint = self.query_one("#empty-hint", Label)
        if total:
            hint.display = False
        else:
            hint.display = True
            hint.update(
                "No rollout matches this filter."
                if self.filter_text
                else "No rollouts indexed yet. Ingest runs in the background on start (F5 runs it again); "
                "it reads Codex and Claude Code sessions from CODEX_HOME and CLAUDE_CONFIG_DIR."
            )
        self.last_load_ms = (time.perf_counter() - started) * 1000
        self.loads += 1

    def _update_position(self) -> None:
        table = self.query_one(WindowedTable)
        of = f"{table.row_total:,}" if getattr(self, "counted", True) else f"{table.row_total:,}+"
        text = f"{table.absolute_row + 1:,} of {of}" if table.row_total else "0 rollouts"
        self.query_one("#position", Label).update(text)
        self._show_row_detail()

    def _show_row_detail(self) -> None:
        """The highlighted rollout in full: id, project, file, and why it was skipped or failed."""
        row = self.rows.get(self.selected_thread() or "")
        detail = self.query_one("#row-detail", Static)
        if row is None:
            detail.update("")
            return
        paths = self.mapp.ctx.paths
        path = ops.short_path(row.path, paths.codex_home, paths.claude_dir)
        why = f"\n{row.status}: {row.reason}" if row.reason else ""
        detail.update(
            Content.assemble(
                (row.id, "bold"), f"  {row.cwd or '-'}  {path}\n", (row.preview, "italic"), (why, "$text-warning")
            )
        )

    def _update_headers(self) -> None:
        table = self.query_one(WindowedTable)
        for key, label, _ in COLUMNS:
            arrow = (" ▼" if self.descending else " ▲") if key == self.sort else ""
            table.columns[key].label = Text(label + arrow, style="bold" if arrow else "")  # type: ignore[index]
        table.refresh()

    # ---- events ---------------------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.load_window(0, count=True)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.query_one(WindowedTable).focus()

    @on(WindowedTable.NeedWindow)
    def _need_window(self, event: WindowedTable.NeedWindow) -> None:
        self.load_window(event.index, count=False)

    @on(DataTable.RowHighlighted, "#rollouts")
    def _highlighted(self) -> None:
        self._update_position()

    @on(DataTable.RowSelected, "#rollouts")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.mapp.open_rollout(event.row_key.value)

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
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        filt = self.query_one("#filter", Input)
        if filt.value:
            filt.value = ""
        self.query_one(WindowedTable).focus()

    def action_cycle_sort(self) -> None:
        keys = [k for k, _, _ in COLUMNS]
        self.sort = keys[(keys.index(self.sort) + 1) % len(keys)]
        self.descending = self.sort not in ("project", "source", "preview")
        self._resort()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self._resort()

    def selected_thread(self) -> str | None:
        table = self.query_one(WindowedTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key
        return str(key.value) if key.value else None

    def action_extract(self) -> None:
        thread_id = self.selected_thread()
        if thread_id:
            self.mapp.run_phase1(thread_id=thread_id)
