# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Consolidation review: the changed files and the diff hunk by hunk; approve, reject, or run Phase 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui import views
from memtui.labels import PHASE2_STATUS, label
from memtui.tui import tasks
from memtui.tui.format import fmt_time, plural
from memtui.tui.screens.base import SEARCH_BINDINGS, MemtuiScreen
from memtui.tui.screens.dialogs import ConfirmModal, TextPromptModal
from memtui.tui.widgets.diff_view import DiffView, parse_diff
from memtui.tui.widgets.lint_line import LintLine
from memtui.tui.widgets.vim import VimOptionList

if TYPE_CHECKING:
    from memtui.phase2.review import Phase2Run

SPLIT_MIN_WIDTH = 140  # side by side needs room for two readable columns

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
    SEARCH_ROOT = "#diff"
    BINDINGS = [
        Binding("right_square_bracket,right", "next_hunk", "Next hunk", id="review.next_hunk"),
        Binding("left_square_bracket,left", "previous_hunk", "Prev hunk", show=False, id="review.previous_hunk"),
        Binding("enter", "open_file", "Open", id="review.open_file"),
        Binding("a", "approve", "Approve", id="review.approve"),
        Binding("x", "reject", "Reject", id="review.reject"),
        Binding("P", "run_phase2", "Run Phase 2", show=False, id="review.run_phase2"),
        Binding("z", "zoom", "Zoom", id="review.zoom"),
        Binding("s", "toggle_split", "Side by side", id="review.split"),
        Binding("v", "pager", "View file", show=False, id="review.pager"),
        Binding("y", "copy_path", "Copy path", show=False, id="review.copy_path"),
        *SEARCH_BINDINGS,
    ]

    diff = getters.query_one("#diff", DiffView)
    files = getters.query_one("#files", OptionList)
    meta = getters.query_one("#review-meta", Static)

    def __init__(self) -> None:
        super().__init__(id="review-screen")
        self.run: Phase2Run | None = None

    @property
    def awaiting(self) -> bool:
        return self.run is not None and self.run.status == "awaiting_review"

    def compose_body(self) -> ComposeResult:
        yield Static("", id="review-meta", markup=False)
        yield LintLine(id="review-lint")  # issue 14: cross-project findings of the memory under review
        with Horizontal(id="review-body"):
            yield VimOptionList(id="files")
            yield DiffView(id="diff")

    def on_mount(self) -> None:
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def _load(self) -> None:
        worker = get_current_worker()
        conn = self.app.ctx.new_conn()
        try:
            run = views.review_run(conn)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, run)

    def loader_failed(self, error: BaseException) -> None:
        self.meta.update(Content(f"Cannot load the consolidation: {type(error).__name__}: {error}"))

    def _show(self, run: Phase2Run | None) -> None:
        self.run = run
        meta, files, diff = self.meta, self.files, self.diff
        files.clear_options()
        if not self.awaiting:
            if run is None:
                text = "No consolidation has run yet. Press P to run Phase 2."
            else:
                reason = f": {run.reason}" if run.reason else ""
                text = (
                    f"No consolidation awaiting review. Last run #{run.id} {label(run.status, PHASE2_STATUS)}"
                    f"{reason}. P runs Phase 2."
                )
            meta.update(Content(text))
            diff.show_diff("", empty="Nothing to review.")
            self.refresh_bindings()
            return
        assert run is not None
        stat = run.stat or [(f.status, f.path) for f in parse_diff(run.diff)]
        meta.update(
            Content.assemble(
                (f"Run #{run.id} awaiting review", "bold $text-warning"),
                f" · {plural(len(stat), 'file')} changed · started {fmt_time(run.started_at)} · ",
                ("offline" if run.offline else (run.model or "")),
            )
        )
        width = self._file_width()
        for status, path in stat:
            files.add_option(
                Option(Content.assemble((f"{status} ", STATUS_STYLE.get(status, "")), middle(path, width)), id=path)
            )
        diff.show_diff(run.diff, empty="The run changed no text.")
        self.refresh_bindings()

    def _file_width(self) -> int:
        """Room for a path in the file list (the list is 36 columns, 48 when wide, the full width when narrow)."""
        width = self.size.width or self.app.size.width
        return width - 6 if width < 100 else (44 if width >= 160 else 32)

    def on_resize(self, event: events.Resize) -> None:
        if self.diff.split and event.size.width < SPLIT_MIN_WIDTH:
            self.diff.set_split(False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "reject"):
            return True if self.awaiting else None
        if action == "toggle_split":
            return self.size.width >= SPLIT_MIN_WIDTH  # hidden where it cannot work
        return super().check_action(action, parameters)

    # ---- layout --------------------------------------------------------------------------------------

    def action_zoom(self) -> None:
        """The diff alone, full width (again: the file list comes back)."""
        self.toggle_class("-zoomed")
        self.diff.focus()

    def action_toggle_split(self) -> None:
        if self.size.width < SPLIT_MIN_WIDTH:
            self.notify_literal(f"Side by side needs at least {SPLIT_MIN_WIDTH} columns.", severity="warning")
            return
        self.diff.set_split(not self.diff.split)

    # ---- navigation ------------------------------------------------------------------------------

    def action_next_hunk(self) -> None:
        self.diff.next_hunk()
        self._sync_file_highlight()

    def action_previous_hunk(self) -> None:
        self.diff.previous_hunk()
        self._sync_file_highlight()

    def _sync_file_highlight(self) -> None:
        path = self.diff.current_path
        files = self.files
        if path is not None:
            try:
                files.highlighted = files.get_option_index(path)
            except Exception:  # (a file without hunks may be missing from the list)
                pass

    @on(OptionList.OptionHighlighted, "#files")
    def _file_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and self.query_one("#files").has_focus:
            self.diff.jump_to_file(event.option.id)

    @on(OptionList.OptionSelected, "#files")
    def _file_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.app.open_memory_file(event.option.id)

    def action_open_file(self) -> None:
        files = self.files
        if files.has_focus and files.highlighted is not None:
            option = files.get_option_at_index(files.highlighted)
            path = option.id
        else:
            path = self.diff.current_path
        if path:
            self.app.open_memory_file(path)

    # ---- decisions -------------------------------------------------------------------------------

    def action_approve(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run.id
        body = (
            f"Approve run #{run_id} ({plural(len(self.run.stat), 'changed file')})? Its changes become the new "
            "baseline commit and the next consolidation starts from them."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self.app.start_task("approve", f"Approve #{run_id}", tasks.approve_task(run_id))

        self.app.push_screen(ConfirmModal("Approve consolidation (y/n)", body, "Approve"), decided)

    def action_reject(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run.id
        body = f"Reject run #{run_id}? The agent's edits are undone and the workspace is restored. Why?"

        def decided(reason: str | None) -> None:
            if reason:
                self.app.start_task("reject", f"Reject #{run_id}", tasks.reject_task(reason, run_id))

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
        self.app.run_phase2()

    def _current_file(self) -> str | None:
        files = self.files
        if files.has_focus and files.highlighted is not None:
            return files.get_option_at_index(files.highlighted).id
        return self.diff.current_path

    def action_pager(self) -> None:
        path = self._current_file()
        target = self.app.memory_path(path) if path else None
        if target is not None and target.exists():
            self.app.open_external(target, pager=True)

    def action_copy_path(self) -> None:
        path = self._current_file()
        if path:
            self.app.copy_text(path, "path")
