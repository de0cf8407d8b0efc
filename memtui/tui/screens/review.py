# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Consolidation review: the changed files and the diff hunk by hunk; approve, reject, or run Phase 2."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui import views
from memtui.tui import ops
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.dialogs import ConfirmModal, TextPromptModal
from memtui.tui.widgets.diff_view import DiffView, parse_diff
from memtui.tui.widgets.lint_line import LintLine

STATUS_STYLE = {"A": "$text-success", "M": "$text-warning", "D": "$text-error"}


def middle(path: str, width: int) -> str:
    """Shorten in the middle: the folder and the end of the file name are what tell files apart."""
    if len(path) <= width:
        return path
    head = path.split("/", 1)[0] + "/" if "/" in path else ""
    tail = width - len(head) - 1
    return f"{head}…{path[-tail:]}" if tail > 8 else f"…{path[-(width - 1) :]}"


class ReviewScreen(MemtuiScreen):
    TITLE_TEXT = "Review"
    MODE = "review"
    AUTO_FOCUS = "#diff"
    BINDINGS = [
        Binding("right_square_bracket,right", "next_hunk", "Next hunk", id="review.next_hunk"),
        Binding("left_square_bracket,left", "previous_hunk", "Prev hunk", id="review.previous_hunk"),
        Binding("enter", "open_file", "Open file", id="review.open_file"),
        Binding("a", "approve", "Approve", id="review.approve"),
        Binding("x", "reject", "Reject", id="review.reject"),
        Binding("P", "run_phase2", "Run Phase 2", id="review.run_phase2"),
    ]

    def __init__(self) -> None:
        super().__init__(id="review-screen")
        self.run: dict[str, Any] | None = None

    @property
    def awaiting(self) -> bool:
        return bool(self.run and self.run.get("status") == "awaiting_review")

    def compose_body(self) -> ComposeResult:
        yield Static("", id="review-meta", markup=False)
        yield LintLine(id="review-lint")  # issue 14: cross-project findings of the memory under review
        with Horizontal(id="review-body"):
            yield OptionList(id="files")
            yield DiffView(id="diff")

    def on_mount(self) -> None:
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def _load(self) -> None:
        worker = get_current_worker()
        conn = self.mapp.ctx.new_conn()
        try:
            run = views.review_run(conn)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, run)

    def _show(self, run: dict[str, Any] | None) -> None:
        self.run = run
        meta = self.query_one("#review-meta", Static)
        files = self.query_one("#files", OptionList)
        diff = self.query_one(DiffView)
        files.clear_options()
        if not self.awaiting:
            if run is None:
                text = "No consolidation has run yet. Press P to run Phase 2."
            else:
                reason = f": {run['reason']}" if run.get("reason") else ""
                text = (
                    f"No consolidation awaiting review. Last run #{run['id']} {run['status']}{reason}. P runs Phase 2."
                )
            meta.update(Content(text))
            diff.show_diff("", empty="Nothing to review.")
            self.refresh_bindings()
            return
        assert run is not None
        stat = run["stat"] or [(f.status, f.path) for f in parse_diff(run.get("diff") or "")]
        meta.update(
            Content.assemble(
                (f"Run #{run['id']} awaiting review", "bold $text-warning"),
                f"  {len(stat)} files  started {ops.fmt_time(run['started_at'])}  ",
                ("offline" if run.get("offline") else (run.get("model") or "")),
            )
        )
        for status, path in stat:
            files.add_option(
                Option(Content.assemble((f"{status} ", STATUS_STYLE.get(status, "")), middle(path, 31)), id=path)
            )
        diff.show_diff(run.get("diff") or "", empty="The run changed no text.")
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "reject"):
            return True if self.awaiting else None
        return True

    # ---- navigation ------------------------------------------------------------------------------

    def action_next_hunk(self) -> None:
        self.query_one(DiffView).next_hunk()
        self._sync_file_highlight()

    def action_previous_hunk(self) -> None:
        self.query_one(DiffView).previous_hunk()
        self._sync_file_highlight()

    def _sync_file_highlight(self) -> None:
        path = self.query_one(DiffView).current_path
        files = self.query_one("#files", OptionList)
        if path is not None:
            try:
                files.highlighted = files.get_option_index(path)
            except Exception:  # (a file without hunks may be missing from the list)
                pass

    @on(OptionList.OptionHighlighted, "#files")
    def _file_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and self.query_one("#files").has_focus:
            self.query_one(DiffView).jump_to_file(event.option.id)

    @on(OptionList.OptionSelected, "#files")
    def _file_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.mapp.open_memory_file(event.option.id)

    def action_open_file(self) -> None:
        files = self.query_one("#files", OptionList)
        if files.has_focus and files.highlighted is not None:
            option = files.get_option_at_index(files.highlighted)
            path = option.id
        else:
            path = self.query_one(DiffView).current_path
        if path:
            self.mapp.open_memory_file(path)

    # ---- decisions -------------------------------------------------------------------------------

    def action_approve(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run["id"]
        body = (
            f"Approve run #{run_id}? Its {len(self.run['stat'])} changed files become the new baseline commit "
            "and the next consolidation starts from them."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self.mapp.start_task("approve", f"Approve #{run_id}", ops.approve_task(run_id))

        self.app.push_screen(ConfirmModal("Approve consolidation (y/n)", body, "Approve"), decided)

    def action_reject(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run["id"]
        body = f"Reject run #{run_id}? The agent's edits are undone and the workspace is restored. Why?"

        def decided(reason: str | None) -> None:
            if reason:
                self.mapp.start_task("reject", f"Reject #{run_id}", ops.reject_task(reason, run_id))

        self.app.push_screen(
            TextPromptModal(
                "Reject consolidation",
                body,
                "reason (the next consolidation sees it)",
                "Reject",
                danger=True,
            ),
            decided,
        )

    def action_run_phase2(self) -> None:
        self.mapp.run_phase2()
