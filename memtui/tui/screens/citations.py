# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Citations: paste, open or pick an agent answer; check its entries; jump to the cited lines or rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import DataTable, Label, Static, TextArea
from textual.worker import get_current_worker

from memtui.domain.labels import CITATION_STATUS, label
from memtui.services import views
from memtui.tui.format import fmt_time, plural
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.dialogs import PickModal, TextPromptModal
from memtui.tui.widgets.vim import VimDataTable

STATUS_STYLE = {
    "ok": "green",
    "missing_file": "bold red",
    "out_of_range": "bold red",
    "blank_lines": "yellow",
    "stale": "yellow",
    "unchecked": "dim",
}


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    if isinstance(obj, list | tuple):
        order = ["path", "line_start", "line_end", "note"]
        return obj[order.index(name)] if name in order and order.index(name) < len(obj) else default
    return getattr(obj, name, default)


class CitationsScreen(MemtuiScreen):
    TITLE_TEXT = "Citations"
    MODE = "citations"
    AUTO_FOCUS = "#entries"  # not the editor: digits switch screens; a paste lands in the answer anyway
    BINDINGS = [
        Binding("ctrl+o", "open_answer", "Open file", id="citations.open"),
        Binding("ctrl+l", "pick_recorded", "From rollouts", id="citations.pick"),
        Binding("ctrl+j", "focus_entries", "Entries", id="citations.entries"),
        Binding("escape", "focus_entries", "Entries", show=False, id="citations.leave"),
        Binding("i", "focus_answer", "Edit answer", id="citations.answer"),
    ]

    answer = getters.query_one("#answer", TextArea)
    entries_table = getters.query_one("#entries", DataTable)
    rollouts_table = getters.query_one("#rollout-ids", DataTable)
    problems = getters.query_one("#citation-problems", Static)

    def __init__(self) -> None:
        super().__init__(id="citations-screen")
        self.entries: list[dict[str, Any]] = []
        self.rollout_ids: list[str] = []

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="citations-body"):
            with Vertical(id="answer-side"):
                yield Label(
                    "Agent answer: paste, ctrl+o open a file, ctrl+l pick one",
                    classes="section-title",
                    markup=False,
                )
                yield TextArea("", id="answer", soft_wrap=True)
            with Vertical(id="entries-side"):
                yield Label("Cited lines (enter jumps)", classes="section-title")
                yield VimDataTable(id="entries", cursor_type="row", zebra_stripes=True)
                yield Label("Cited rollouts (enter opens)", classes="section-title")
                yield VimDataTable(id="rollout-ids", cursor_type="row")
                yield Static("", id="citation-problems", markup=False)

    def on_mount(self) -> None:
        self.answer.cursor_blink = self.app.cursor_blink
        entries = self.entries_table
        for key, title, width in [
            ("status", "Status", 12),
            ("path", "Path", 18),
            ("lines", "Lines", 7),
            ("note", "Note", 60),
        ]:
            entries.add_column(title, key=key, width=width)
        rollouts = self.rollouts_table
        rollouts.add_column("Rollout id", key="id", width=38)
        rollouts.add_column("Indexed", key="known", width=8)

    def set_answer(self, text: str) -> None:
        self.answer.load_text(text)
        self._parse(text)

    @on(TextArea.Changed, "#answer")
    def _answer_changed(self, event: TextArea.Changed) -> None:
        self._parse(event.text_area.text)

    @work(thread=True, exclusive=True, group="citations", exit_on_error=False)
    def _parse(self, text: str) -> None:
        worker = get_current_worker()
        problems: list[str] = []
        entries: list[dict[str, Any]] = []
        ids: list[tuple[str, bool]] = []
        from memtui.services.citations.parse import parse_citations

        result = parse_citations(text)
        citation = result.citation
        if citation is not None:
            conn = self.app.ctx.new_conn()
            try:
                entries, ids = self._check(citation, conn, problems)
            finally:
                conn.close()
        if result.dropped_lines:
            n = result.dropped_lines
            problems.append(f"{plural(n, 'line')} in the block {'is' if n == 1 else 'are'} not citation entries")
        if result.invalid_ids:
            problems.append("invalid rollout ids: " + ", ".join(map(str, result.invalid_ids)))
        if citation is None and text.strip():
            problems.append("No <oai-mem-citation> block found in this answer.")
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, entries, ids, problems)

    def _check(
        self, citation: Any, conn: Any, problems: list[str]
    ) -> tuple[list[dict[str, Any]], list[tuple[str, bool]]]:
        """Entries with their validation status (memtui.services.citations.check) and the cited rollout ids."""
        entries = [{f: _field(e, f) for f in ("path", "line_start", "line_end", "note")} for e in citation.entries]
        from memtui.services.citations.check import check_citation

        report = check_citation(self.app.ctx.paths.memory_root, citation, conn)
        for entry, check in zip(entries, report.entries, strict=False):
            entry["status"] = str(check.status)
            if check.status == "missing_file":
                problems.append(f"{entry['path']}: no such file in the memory root")
            elif check.status != "ok":
                problems.append(f"{entry['path']}:{entry['line_start']}-{entry['line_end']}: {check.detail}")
        ids = [(c.thread_id or c.rollout_id, c.status == "ok") for c in report.ids]
        return entries, ids

    def _show(self, entries: list[dict[str, Any]], ids: list[tuple[str, bool]], problems: list[str]) -> None:
        self.entries = entries
        self.rollout_ids = [i for i, _ in ids]
        table = self.entries_table
        table.clear()
        for i, e in enumerate(entries):
            status = e.get("status", "unchecked")
            table.add_row(
                Text(label(status, CITATION_STATUS), style=STATUS_STYLE.get(status, "")),
                Text(str(e["path"]), no_wrap=True, overflow="ellipsis"),
                Text(f"{e['line_start']}-{e['line_end']}"),
                Text(str(e.get("note") or ""), no_wrap=True, overflow="ellipsis"),
                key=str(i),
            )
        rollouts = self.rollouts_table
        rollouts.clear()
        for rid, known in ids:
            rollouts.add_row(Text(rid), Text("yes" if known else "no", style="green" if known else "red"), key=rid)
        self.problems.update(Content("\n".join(problems)))

    @on(DataTable.RowSelected, "#entries")
    def _entry_selected(self, event: DataTable.RowSelected) -> None:
        entry = self.entries[int(str(event.row_key.value))]
        self.app.open_cited(
            str(entry["path"]), int(entry["line_start"]), int(entry["line_end"]), str(entry.get("note") or "")
        )

    @on(DataTable.RowSelected, "#rollout-ids")
    def _rollout_selected(self, event: DataTable.RowSelected) -> None:
        self.app.open_rollout(str(event.row_key.value))

    def on_paste(self, event: events.Paste) -> None:
        """A paste anywhere on the screen replaces the answer (the usual way an answer arrives)."""
        if not self.answer.has_focus:
            self.set_answer(event.text)

    def action_focus_answer(self) -> None:
        self.answer.focus()

    def action_focus_entries(self) -> None:
        self.entries_table.focus()

    def action_open_answer(self) -> None:
        def chosen(path: str | None) -> None:
            if not path:
                return
            try:
                self.set_answer(Path(path).expanduser().read_text(encoding="utf-8"))
            except OSError as exc:
                self.notify_literal(f"Cannot open {path}: {exc}", severity="error")

        self.app.push_screen(TextPromptModal("Open an agent answer", "Path of a text file:", "path", "Open"), chosen)

    def action_pick_recorded(self) -> None:
        self._load_recorded()

    @work(thread=True, group="citations-pick", exit_on_error=False)
    def _load_recorded(self) -> None:
        conn = self.app.ctx.new_conn()
        try:
            events = views.citation_event_rows(conn)
        finally:
            conn.close()
        choices = []
        for e in events:
            first = next((line for line in e.body.splitlines() if line.strip() and "<" not in line), "")
            text = f"{fmt_time(e.recorded_at)}  {e.origin:<7} {plural(e.entries, 'entry', 'entries')}"
            choices.append((f"{text}  {first[:60]}", e.body))
        self.app.call_from_thread(
            self.app.push_screen,
            PickModal("Citations found in ingested rollouts", choices, "No citations recorded yet."),
            lambda body: self.set_answer(body) if body else None,
        )
