# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Health: every approved memory block, worst first, with what the user said about it since (restated,
contradicted, corrected), citations, staleness and when a person last verified it. ``enter`` on the evidence opens
the rollout at that transcript item; a person confirms a block, proposes an update or a removal (the next Phase 2
run's binding input, back as a hunk to review), or removes it now (their own edit, committed through the gate)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui.tui.format import fmt_time
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.dialogs import ConfirmModal
from memtui.tui.tasks import Progress, TaskFn, TaskOutcome
from memtui.tui.widgets.columns import Column, apply_columns, hidden_note, layout_columns
from memtui.tui.widgets.vim import VimDataTable, VimOptionList

if TYPE_CHECKING:
    from memtui.services.context import Context
    from memtui.services.health.signals import BlockHealth, HealthReport

COLUMNS = [
    Column("signals", "Signals", 30, 0, 24),
    Column("line", "Line", 5, 3),
    Column("text", "Memory", 40, 0),
    Column("sessions", "Said", 4, 2),
    Column("cited", "Cited", 5, 1),
    Column("verified", "Verified", 11, 4),
]
SIGNAL_STYLE = {"contradicted": "bold red", "corrected": "yellow", "restated": "cyan", "stale": "magenta"}


def health_action_task(action: str, block_id: str, title: str) -> TaskFn:
    """confirm | update | remove (proposals) | remove_now, as ``memtui health --confirm`` ... does it."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.adapters.memroot.lock import MemoryRootBusy
        from memtui.services.health import actions
        from memtui.services.phase2.review import ReviewError
        from memtui.state.health import Proposal

        progress(0, None, title)
        try:
            if action == "confirm":
                actions.confirm(ctx, block_id)
                return TaskOutcome("finished", "confirmed: last verified renewed")
            if action in ("update", "remove"):
                outcome = actions.propose(ctx, block_id, Proposal(action))
                return TaskOutcome("finished", f"{action} proposed: {outcome}")
            removed = actions.remove_now(ctx, block_id)
            return TaskOutcome("finished", f"removed from MEMORY.md; new baseline {removed.commit[:12]}")
        except (actions.HealthActionError, ReviewError, MemoryRootBusy) as exc:
            return TaskOutcome("refused", str(exc), "warning")

    return run


class HealthScreen(MemtuiScreen):
    TITLE_TEXT = "Health"
    MODE = "health"
    LOADING, LOADER = "#health-body", "health"
    AUTO_FOCUS = "#health-blocks"
    BINDINGS = [
        Binding("c", "confirm", "Confirm", id="health.confirm"),
        Binding("u", "propose('update')", "Propose update", id="health.propose_update"),
        Binding("d", "propose('remove')", "Propose removal", id="health.propose_removal"),
        Binding("D", "remove_now", "Remove now", id="health.remove_now"),
        Binding("v", "focus_evidence", "Evidence", show=False, id="health.evidence"),
    ]

    def __init__(self) -> None:
        super().__init__(id="health-screen")
        self.report: HealthReport | None = None
        self.shown_columns: list[tuple[Column, int]] = []

    def compose_body(self) -> ComposeResult:
        yield Static("Computing memory health…", id="health-meta", markup=False)
        with Vertical(id="health-body"):
            yield VimDataTable(id="health-blocks", cursor_type="row", zebra_stripes=True)
            yield Static("", id="health-detail", markup=False)
            yield VimOptionList(id="health-evidence")

    def on_mount(self) -> None:
        self.query_one("#health-evidence", OptionList).border_title = "What the user said (enter opens the item)"
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    def on_resize(self) -> None:
        if self.report is not None:
            self._fill(self.report)

    @work(thread=True, exclusive=True, group="health", exit_on_error=False)
    def _load(self) -> None:
        from memtui.services.health.signals import compute_health

        worker = get_current_worker()
        ctx = self.mapp.task_context()
        try:
            report = compute_health(ctx.conn, ctx.paths.memory_root, unused_days=ctx.settings.max_unused_days)
        finally:
            ctx.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._fill, report)

    def loader_failed(self, error: BaseException) -> None:
        self.query_one("#health-meta", Static).update(Content(f"Memory health could not be computed: {error}"))

    def _fill(self, report: HealthReport) -> None:
        table = self.query_one("#health-blocks", DataTable)
        selected = self._selected()
        keep = selected.id if selected is not None else None
        self.report = report
        visible = layout_columns(COLUMNS, self.size.width or 80, "text")
        apply_columns(table, self.shown_columns, visible)
        self.shown_columns = visible
        table.clear()
        text_width = next((w for c, w in visible if c.key == "text"), 40)
        keys = {c.key for c, _ in visible}
        for b in report.blocks:
            cells = {
                "signals": _signals_text(b),
                "line": Text(str(b.line)),
                "text": Text(_short(b.text, text_width)),
                "sessions": Text(str(len(b.restated) + len(b.contradicted) + len(b.corrected))),
                "cited": Text(str(b.cited)),
                "verified": Text(fmt_time(b.last_verified) if b.last_verified else "never"),
            }
            table.add_row(*(cells[c.key] for c, _ in visible if c.key in keys), key=b.id)
        counts = {s: sum(1 for b in report.blocks if s in b.signals) for s in SIGNAL_STYLE}
        parts = [(f"{len(report.blocks)} blocks", "bold")]
        parts += [(f" · {n} {s}", SIGNAL_STYLE[s] if n else "$text-muted") for s, n in counts.items()]
        tail = f"  {report.method}{hidden_note(len(visible), len(COLUMNS))}"
        if Content.assemble(*parts, tail).cell_length < (self.size.width or 80) - 1:
            parts.append((tail, "$text-muted"))
        if not report.blocks:
            parts = [("No approved memory yet: approve a consolidation (screen 3) and its blocks show here.", "")]
        self.query_one("#health-meta", Static).update(Content.assemble(*parts))
        if report.blocks:
            index = next((i for i, b in enumerate(report.blocks) if b.id == keep), 0)
            table.move_cursor(row=index)
            self._show_block(report.blocks[index])
        else:
            self.query_one("#health-detail", Static).update(Content(""))
            self.query_one("#health-evidence", OptionList).clear_options()
        self.refresh_bindings()

    def _selected(self) -> BlockHealth | None:
        if self.report is None or not self.report.blocks:
            return None
        table = self.query_one("#health-blocks", DataTable)
        row = table.cursor_row
        return self.report.blocks[row] if row is not None and 0 <= row < len(self.report.blocks) else None

    @on(DataTable.RowHighlighted, "#health-blocks")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if (b := self._selected()) is not None:
            self._show_block(b)

    @on(DataTable.RowSelected, "#health-blocks")
    def _selected_row(self, event: DataTable.RowSelected) -> None:
        self.action_focus_evidence()

    def _show_block(self, b: BlockHealth) -> None:
        verified = fmt_time(b.last_verified) if b.last_verified else "never"
        lines = [
            Content.assemble((f"{b.file}:{b.line}", "bold"), f"  {b.project or 'user-level'}  {b.section}"),
            Content(b.text),
            Content.assemble(
                (
                    f"cited in {b.cited} session(s); approved {fmt_time(b.since)}; last verified {verified}",
                    "$text-muted",
                ),
                (f"; {b.proposal} proposed for the next Phase 2 run" if b.proposal else "", "$text-warning"),
            ),
        ]
        if b.stale_reason:
            lines.append(Content.assemble(("stale: ", "magenta"), b.stale_reason))
        self.query_one("#health-detail", Static).update(Content("\n").join(lines))
        evidence = self.query_one("#health-evidence", OptionList)
        evidence.clear_options()
        items = [e for name in ("contradicted", "corrected", "restated") for e in getattr(b, name)]
        for i, e in enumerate(items):
            head = Content.assemble(
                (e.relation, SIGNAL_STYLE.get(e.relation, "")),
                f"  {fmt_time(e.at)}  thread {e.thread_id[:13]}  item {e.item}",
            )
            evidence.add_option(Option(Content("\n").join([head, Content(f"  “{e.text}”")]), id=str(i)))
        if not items:
            evidence.add_option(
                Option(Content("The user has not restated, corrected or contradicted it."), disabled=True)
            )
        self._evidence = items

    _evidence: list[Any] = []

    def action_focus_evidence(self) -> None:
        evidence = self.query_one("#health-evidence", OptionList)
        if self._evidence:
            evidence.highlighted = 0
        evidence.focus()

    @on(OptionList.OptionSelected, "#health-evidence")
    def _open_evidence(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is None:
            return
        e = self._evidence[int(event.option.id)]
        self.mapp.open_rollout(e.thread_id, e.item)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("confirm", "propose", "remove_now"):
            return True if self.is_mounted and self._selected() is not None else None
        return super().check_action(action, parameters)

    def _start(self, action: str, title: str) -> None:
        b = self._selected()
        if b is not None:
            self.mapp.start_task(f"health-{action}", title, health_action_task(action, b.id, title))

    def action_confirm(self) -> None:
        if (b := self._selected()) is not None:
            self._start("confirm", f"Confirm memory line {b.line}")

    def action_propose(self, kind: str) -> None:
        if (b := self._selected()) is not None:
            self._start(kind, f"Propose {'an update' if kind == 'update' else 'removal'} of line {b.line}")

    def action_remove_now(self) -> None:
        b = self._selected()
        if b is None:
            return
        body = (
            f"Remove MEMORY.md line {b.line} now?\n\n{b.text}\n\nThis is your own edit: the line goes from MEMORY.md "
            "(and into tombstones.md, so consolidation does not bring it back) and the change is committed as the new "
            "baseline, as a manual commit is."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self._start("remove_now", f"Remove memory line {b.line}")

        self.app.push_screen(ConfirmModal("Remove now (y/n)", body, "Remove"), decided)


def _signals_text(b: BlockHealth) -> Text:
    text = Text()
    for i, s in enumerate(b.signals):
        if i:
            text.append(" ")
        text.append(s, style=SIGNAL_STYLE.get(s, "green"))
    return text if b.signals else Text("ok", style="dim")


def _short(text: str, width: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: max(1, width - 1)] + "…"
