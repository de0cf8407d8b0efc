# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""The task log: every task (what ran, when, how long, how it ended, the error) and every notification of
this session, newest first. It outlives the toasts; ``ctrl+n`` opens it from any screen."""

from __future__ import annotations

from rich.text import Text
from textual import getters, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import DataTable, Static

from memtui.tui.app import LogEntry
from memtui.tui.format import fmt_clock
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.vim import VimDataTable

SEVERITY_STYLE = {"information": "", "warning": "yellow", "error": "bold red"}


class TaskLogScreen(MemtuiScreen):
    TITLE_TEXT = "Task log"
    MODE = ""
    AUTO_FOCUS = "#log-table"
    BINDINGS = [
        Binding("escape,q,ctrl+n", "back", "Back", id="log.back"),
        Binding("y", "copy", "Copy message", id="log.copy"),
    ]

    table = getters.query_one("#log-table", DataTable)
    detail = getters.query_one("#log-detail", Static)

    def compose_body(self) -> ComposeResult:
        yield Static(Content("Task log: what ran this session and every notification, newest first"), id="log-title")
        yield VimDataTable(id="log-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="log-detail", markup=False)

    def on_mount(self) -> None:
        self.table.add_column("Time", key="time", width=8)
        self.table.add_column("What", key="what", width=24)
        self.table.add_column("Outcome", key="outcome", width=13)
        self.table.add_column("Took", key="took", width=6)
        self.table.add_column("Message", key="message")
        self.app.log_signal.subscribe(self, self._show)
        self._show(self.app.task_log)

    @property
    def entries(self) -> list[LogEntry]:
        return list(reversed(self.app.task_log))

    def _show(self, _log: list[LogEntry]) -> None:
        table = self.table
        row = table.cursor_row
        table.clear()
        for i, e in enumerate(self.entries):
            took = "" if e.seconds is None else f"{e.seconds:.1f}s"
            style = SEVERITY_STYLE.get(e.severity, "")
            table.add_row(
                Text(fmt_clock(e.at)),
                Text(e.title, no_wrap=True, overflow="ellipsis"),
                Text(e.outcome or e.severity.replace("information", "note"), style=style),
                Text(took, justify="right"),
                Text(e.message.replace("\n", " "), style=style, no_wrap=True, overflow="ellipsis"),
                key=str(i),
            )
        if table.row_count:
            table.move_cursor(row=min(max(row, 0), table.row_count - 1), animate=False)
        else:
            self.detail.update("Nothing has run yet this session: F5 ingests, ctrl+p runs Phase 1 and Phase 2.")
        self._show_detail()

    @on(DataTable.RowHighlighted, "#log-table")
    def _show_detail(self) -> None:
        entries = self.entries
        row = self.table.cursor_row
        if 0 <= row < len(entries):
            e = entries[row]
            self.detail.update(Content.assemble((f"{e.title}: ", "bold"), e.message or e.outcome))

    def action_back(self) -> None:
        self.dismiss()

    def action_copy(self) -> None:
        entries = self.entries
        row = self.table.cursor_row
        if 0 <= row < len(entries):
            self.app.copy_text(entries[row].message, "message")
