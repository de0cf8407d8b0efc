# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""History: every decision on the memory (the audit trail), each kept version's diff against the current memory,
and restore, which puts a version back as a change awaiting review (never a silent rewrite)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from memtui.tui import tasks
from memtui.tui.format import fmt_size, fmt_time
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.choice import Choice, ChoiceModal
from memtui.tui.screens.dialogs import ConfirmModal
from memtui.tui.widgets.diff_view import DiffView
from memtui.tui.widgets.vim import VimDataTable

KIND_LABELS = {
    "approve": "approve",
    "partial_approve": "approve (part)",
    "reject": "reject",
    "manual_commit": "manual commit",
    "restore": "restore",
    "forget": "forget",
    "unforget": "forget undone",
    "lift": "rejection lifted",
}


class HistoryScreen(MemtuiScreen):
    TITLE_TEXT = "History"
    MODE = "history"
    LOADING, LOADER = "#history-body", "history"
    AUTO_FOCUS = "#decisions"
    BINDINGS = [
        Binding("r", "restore", "Restore version", id="history.restore"),
        Binding("l", "lift", "Lift rejection", id="history.lift"),
        Binding("enter", "show_diff", "Show diff", show=False, id="history.show_diff"),
    ]

    def __init__(self) -> None:
        super().__init__(id="history-screen")
        self.decisions: list[Any] = []
        self.rejections: list[Any] = []  # remembered rejections (``decide.RejectedHunk``), newest first

    def compose_body(self) -> ComposeResult:
        yield Static("", id="history-meta", markup=False)
        with Horizontal(id="history-body"):
            yield VimDataTable(id="decisions", cursor_type="row", zebra_stripes=True)
            with Vertical(id="history-side"):
                yield Static("", id="decision-detail", markup=False)
                yield DiffView(id="version-diff")

    def on_mount(self) -> None:
        table = self.query_one("#decisions", DataTable)
        for key, label, width in [
            ("id", "Ver", 4),
            ("at", "When", 16),
            ("kind", "Decision", 15),
            ("what", "Run / rollout", 14),
            ("hunks", "Hunks", 6),
            ("kept", "Kept", 4),
        ]:
            table.add_column(label, key=key, width=width)
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def _load(self) -> None:
        from memtui.services.history import list_decisions
        from memtui.services.review.decide import remembered_rejections
        from memtui.state.decisions import kept as snapshots_kept

        worker = get_current_worker()
        conn = self.mapp.ctx.new_conn()
        try:
            decisions = list_decisions(conn)
            kept = snapshots_kept(conn)
            rejections = remembered_rejections(conn)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, decisions, (kept.count, kept.bytes), rejections)

    def _show(self, decisions: list[Any], kept: tuple[int, int], rejections: list[Any] | None = None) -> None:
        self.decisions = decisions
        self.rejections = rejections or []
        keep = self.mapp.ctx.settings.history_versions
        self.query_one("#history-meta", Static).update(
            Content.assemble(
                (f"{len(decisions)} decisions", "bold"),
                f"  {kept[0]} versions kept ({fmt_size(kept[1])} compressed, history_versions = {keep})",
                f"  {len(self.rejections)} remembered rejection(s)" if self.rejections else "",
            )
        )
        table = self.query_one("#decisions", DataTable)
        table.clear()
        for d in decisions:
            what = f"run #{d.run_id}" if d.run_id else (d.thread_id[:12] if d.thread_id else "-")
            hunks = f"{len(d.hunks_in)}/{len(d.hunks_out)}" if d.hunks_in or d.hunks_out else "-"
            table.add_row(
                Text(str(d.id)),
                Text(fmt_time(d.at)),
                Text(KIND_LABELS.get(d.kind, d.kind), style="red" if d.kind in ("reject", "forget") else ""),
                Text(what),
                Text(hunks),
                Text("yes" if d.snapshot else "-"),
                key=str(d.id),
            )
        if decisions:
            self._show_decision(decisions[0])
        else:
            self.query_one("#decision-detail", Static).update(
                Content("No decisions yet: approve, reject or commit a change and it is recorded here.")
            )
            self.query_one(DiffView).show_diff("", empty="No versions kept yet.")
        self.refresh_bindings()

    def _selected(self) -> Any:
        table = self.query_one("#decisions", DataTable)
        if not self.decisions or table.cursor_row is None or table.cursor_row >= len(self.decisions):
            return None
        return self.decisions[table.cursor_row]

    @on(DataTable.RowHighlighted, "#decisions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        d = self._selected()
        if d is not None:
            self._show_decision(d)

    def action_show_diff(self) -> None:
        d = self._selected()
        if d is not None:
            self._show_decision(d)
            self.query_one(DiffView).focus()

    def _rejections_of(self, d: Any) -> list[Any]:
        """The remembered rejections a partial approval made (still remembered: not lifted)."""
        if d.kind != "partial_approve" or d.run_id is None:
            return []
        return [r for r in self.rejections if r.run_id == d.run_id]

    def _show_decision(self, d: Any) -> None:
        files_in = ", ".join(d.files_in) or "-"
        files_out = ", ".join(d.files_out) or "-"
        remembered = self._rejections_of(d)
        listed = "".join(
            f"\n  #{r.id} {r.file}: {r.added[0] if r.added else ''}"[:160]
            + (f" (+{len(r.added) - 1} more)" if len(r.added) > 1 else "")
            for r in remembered
        )
        self.query_one("#decision-detail", Static).update(
            Content.assemble(
                (f"#{d.id} {KIND_LABELS.get(d.kind, d.kind)}", "bold"),
                f"  {fmt_time(d.at)}  tree {(d.tree or '-')[:12]}\n",
                f"in: {files_in}\nout: {files_out}\n",
                (f"reason: {d.reason}" if d.reason else "", "$text-warning"),
                (
                    f"\nremembered: later runs keep these out (l lifts){listed}" if remembered else "",
                    "$text-warning",
                ),
            )
        )
        self._diff(d.id, d.snapshot)

    @work(thread=True, exclusive=True, group="history-diff", exit_on_error=False)
    def _diff(self, decision_id: int, has_snapshot: bool) -> None:
        from memtui.services.history import HistoryError, version_diff

        worker = get_current_worker()
        if not has_snapshot:
            text, empty = "", "This decision kept no version (it did not change the memory, or it was pruned)."
        else:
            conn = self.mapp.ctx.new_conn()
            try:
                text, empty = version_diff(conn, self.mapp.ctx.paths.memory_root, decision_id), ""
            except HistoryError as exc:
                text, empty = "", str(exc)
            finally:
                conn.close()
            empty = empty or f"Version {decision_id} is the same as the current memory."
        if not worker.is_cancelled:
            self.app.call_from_thread(self.query_one(DiffView).show_diff, text, empty)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restore":
            d = self._selected() if self.is_mounted else None
            return True if d is not None and d.snapshot else None
        if action == "lift":
            d = self._selected() if self.is_mounted else None
            return bool(d is not None and self._rejections_of(d))  # hidden when the decision remembers none
        return True

    def action_lift(self) -> None:
        """Lift a rejection the selected partial approval remembers: later runs may propose its lines again."""
        d = self._selected()
        remembered = self._rejections_of(d) if d is not None else []
        if not remembered:
            return

        def chose(value: str | None) -> None:
            if value and value != "cancel":
                self.mapp.start_task("lift", f"Lift rejection #{value}", tasks.lift_task(int(value)))

        body = (
            "Later runs keep the lines of a remembered rejection out of the file it was made in. Lift one and the "
            "next run may propose them again (the lift is recorded here)."
        )
        choices = [Choice(f"Lift #{r.id} ({r.file}, {len(r.added)} line(s))", str(r.id), "warning") for r in remembered]
        self.app.push_screen(
            ChoiceModal("Lift a rejection", body, [*choices, Choice("Cancel", "cancel")], focus="cancel"), chose
        )

    def action_restore(self) -> None:
        d = self._selected()
        if d is None or not d.snapshot:
            return
        body = (
            f"Restore version {d.id}? Its MEMORY.md, memory_summary.md and skills/ go into the workspace as a change "
            "awaiting review (Review screen): approve it in full or hunk by hunk, or reject it. Nothing is committed now."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self.mapp.start_task("restore", f"Restore version {d.id}", tasks.restore_task(d.id))

        self.app.push_screen(ConfirmModal(f"Restore version {d.id} (y/n)", body, "Restore"), decided)
