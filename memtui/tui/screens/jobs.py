# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Jobs: stage-1 jobs and the Phase 2 job with leases, retries, errors, tokens and latency."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Label, Static
from textual.worker import get_current_worker

from memtui.domain.labels import JOB_STATUS, label
from memtui.services import views
from memtui.tui.format import fmt_time
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.columns import Column, apply_columns, hidden_note, layout_columns
from memtui.tui.widgets.windowed_table import WindowedTable

COLUMNS = [
    Column("kind", "Kind", 7, 0),
    Column("job", "Job", 24, 0, 18),
    Column("status", "Status", 15, 0),
    Column("left", "Left", 4, 5),
    Column("owner", "Lease owner", 11, 6),
    Column("lease", "Lease until", 11, 4),
    Column("retry", "Retry at", 11, 3),
    Column("tokens", "Tokens i/o", 11, 2),
    Column("latency", "Latency", 7, 1),
    Column("error", "Last error", 20, 0),  # widened to the rest of the screen
]


def short_time(ts: int | None) -> str:
    return fmt_time(ts)[5:] if ts else "-"


def short_project(cwd: str) -> str:
    parts = [p for p in cwd.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) > 2 else cwd


STATUS_STYLE = {
    "done": "green",
    "error": "bold red",
    "running": "yellow",
    "stale": "bold magenta",
    "pending": "cyan",
    "awaiting_review": "bold yellow",
}


def job_cells(j: views.JobRow) -> dict[str, Any]:
    kind = "Phase 2" if j.kind == views.GLOBAL else "Stage 1"
    name = "consolidation" if j.kind == views.GLOBAL else f"{j.job_key[:8]}  {short_project(j.label)}"
    tokens = "-" if j.prompt_tokens is None else f"{j.prompt_tokens:,}/{j.completion_tokens or 0:,}"
    latency = "-" if j.latency_ms is None else f"{j.latency_ms / 1000:.1f}s"
    return {
        "kind": Text(kind, style="bold" if j.kind == views.GLOBAL else ""),
        "job": Text(name, no_wrap=True, overflow="ellipsis"),
        "status": Text(label(j.status, JOB_STATUS), style=STATUS_STYLE.get(j.status, "")),
        "left": Text(str(j.retry_remaining), justify="right"),
        "owner": Text(j.worker_id or "-", no_wrap=True, overflow="ellipsis"),
        "lease": Text(short_time(j.lease_until) if j.status in ("running", "stale") else "-"),
        "retry": Text(short_time(j.retry_at)),
        "tokens": Text(tokens, justify="right"),
        "latency": Text(latency, justify="right"),
        "error": Text(j.last_error.replace("\n", " ") or "-", style="red" if j.last_error else "dim", no_wrap=True),
    }


class JobsScreen(MemtuiScreen):
    TITLE_TEXT = "Jobs"
    MODE = "jobs"
    LOADING, LOADER = "#jobs", "jobs-page"
    AUTO_FOCUS = "#jobs"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="jobs.filter"),
        Binding("t", "retry", "Retry now", id="jobs.retry"),
        Binding("l", "release", "Release stale lease", id="jobs.release"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="jobs.clear_filter"),
    ]

    table = getters.query_one("#jobs", WindowedTable)
    position = getters.query_one("#position", Label)
    row_detail = getters.query_one("#row-detail", Static)
    filter_input = getters.query_one("#filter", Input)

    def __init__(self) -> None:
        super().__init__(id="jobs-screen")
        self.filter_text = ""
        self.rows: dict[str, views.JobRow] = {}
        self.shown: list[views.JobRow] = []
        self.layout_cols: list[tuple[Column, int]] = []

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="filter-bar"):
            yield Input(placeholder="Filter jobs (key, status, error)", id="filter", compact=True)
            yield Label("", id="position", markup=False)
        yield Label("", id="empty-hint", markup=False)
        yield WindowedTable(id="jobs")
        yield Static("", id="row-detail", markup=False)

    def on_mount(self) -> None:
        self._set_columns(self.app.size.width)
        self.reload("mount")

    def on_resize(self, event: events.Resize) -> None:
        self._set_columns(event.size.width)

    def _set_columns(self, width: int) -> None:
        visible = layout_columns(COLUMNS, width, "error", 16)
        rebuilt = apply_columns(self.table, self.layout_cols, visible)
        self.layout_cols = visible
        if rebuilt and self.shown:
            self._fill(self.table.window_offset, self.table.row_total, self.shown, self.table.absolute_row)

    def _fill(self, offset: int, total: int, rows: list[views.JobRow], index: int) -> None:
        keys = [c.key for c, _ in self.layout_cols]
        cells = [(f"{r.kind}/{r.job_key}", [job_cells(r)[k] for k in keys]) for r in rows]
        self.table.show_window(offset, total, cells, index)

    def reload(self, source: str = "") -> None:
        table = self.table
        self._fetch(table.absolute_row, None, self.filter_text, table.WINDOW)

    @work(thread=True, exclusive=True, group="jobs-page", exit_on_error=False)
    def _fetch(self, index: int, total: int | None, filter_text: str, window: int) -> None:
        worker = get_current_worker()
        conn = self.app.ctx.new_conn()
        try:
            if total is None:
                total = views.count_jobs(conn, filter_text)
            index = min(max(index, 0), max(total - 1, 0))
            offset = max(0, min(index - window // 2, total - window))
            rows = views.job_rows(conn, filter_text, offset, window)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, offset, total, rows, index)

    def _show(self, offset: int, total: int, rows: list[views.JobRow], index: int) -> None:
        self.rows = {f"{r.kind}/{r.job_key}": r for r in rows}
        self.shown = rows
        self._fill(offset, total, rows, index)
        self._update_position()
        hint = self.query_one("#empty-hint", Label)
        hint.display = not total
        hint.update("No jobs yet: Phase 1 creates one per eligible rollout (ctrl+p, then Phase 1).")

    def _update_position(self) -> None:
        table = self.table
        text = f"{table.absolute_row + 1:,} of {table.row_total:,}" if table.row_total else "0 jobs"
        text += hidden_note(len(self.layout_cols), len(COLUMNS))
        self.position.update(text)
        self._show_row_detail()

    def _show_row_detail(self) -> None:
        """The highlighted job in full: its key, lease owner and the whole last error (the column cuts it)."""
        job = self.selected_job()
        detail = self.row_detail
        if job is None:
            detail.update("")
            return
        kind = "Phase 2 consolidation" if job.kind == views.GLOBAL else f"Stage 1 {job.job_key}"
        parts: list[str] = [label(job.status, JOB_STATUS)]
        if job.kind != views.GLOBAL and job.label:
            parts.append(job.label)
        if job.worker_id:
            parts.append(f"lease owner {job.worker_id}")
        parts.append(f"{job.retry_remaining} {'retry' if job.retry_remaining == 1 else 'retries'} left")
        error = f"\nlast error: {job.last_error}" if job.last_error else ""
        detail.update(Content.assemble((kind, "bold"), " · " + " · ".join(parts), (error, "$text-error")))

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._fetch(0, None, self.filter_text, WindowedTable.WINDOW)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.table.focus()

    @on(WindowedTable.NeedWindow)
    def _need_window(self, event: WindowedTable.NeedWindow) -> None:
        self._fetch(event.index, event.table.row_total, self.filter_text, event.table.WINDOW)

    @on(DataTable.RowHighlighted, "#jobs")
    def _highlighted(self) -> None:
        self._update_position()

    @on(DataTable.RowSelected, "#jobs")
    def _selected(self, event: DataTable.RowSelected) -> None:
        job = self.rows.get(str(event.row_key.value))
        if job and job.kind == views.STAGE1:
            self.app.open_rollout(job.job_key)
        elif job:
            self.app.switch_mode("review")

    def selected_job(self) -> views.JobRow | None:
        table = self.table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        return self.rows.get(str(key.value))

    def action_focus_filter(self) -> None:
        self.filter_input.focus()

    def action_clear_filter(self) -> None:
        self.filter_input.value = ""
        self.table.focus()

    def action_retry(self) -> None:
        job = self.selected_job()
        if job:
            self._job_action(views.retry_job_now, job, "retry scheduled now", "cannot retry a running job")

    def action_release(self) -> None:
        job = self.selected_job()
        if job:
            self._job_action(views.release_stale_lease, job, "stale lease released", "the lease has not expired")

    @work(thread=True, group="jobs-action", exit_on_error=False)
    def _job_action(self, fn: Callable[..., bool], job: views.JobRow, ok: str, refused: str) -> None:
        conn = self.app.ctx.new_conn()
        try:
            changed = fn(conn, job.kind, job.job_key)
        finally:
            conn.close()
        message = f"{job.job_key}: {ok if changed else refused}"
        self.app.call_from_thread(
            self.app.notify, message, markup=False, severity="information" if changed else "warning"
        )
        if changed:
            self.app.call_from_thread(self.app.data_changed, "jobs")
            if fn is views.retry_job_now:
                self.app.call_from_thread(self._run_now, job)

    def _run_now(self, job: views.JobRow) -> None:
        """Retry now means now: start the extraction (or the consolidation) for this job."""
        if job.kind == views.STAGE1:
            self.app.run_phase1(job.job_key)
        else:
            self.app.run_phase2()
