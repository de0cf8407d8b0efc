# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Consolidation review: the changed files and the diff hunk by hunk, the evidence behind each hunk; take, leave
out or amend hunks one by one, then approve (what goes in is exactly what the screen shows) or reject."""

from __future__ import annotations

from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui import views
from memtui.tui import ops
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.dialogs import ConfirmModal, TextAreaModal, TextPromptModal
from memtui.tui.widgets.diff_view import DiffView, HunkView, parse_diff
from memtui.tui.widgets.evidence_pane import EvidencePane

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
        Binding("space", "toggle_hunk", "Take/leave hunk", id="review.toggle_hunk"),
        Binding("e", "amend_hunk", "Amend hunk", id="review.amend_hunk"),
        Binding("v", "focus_evidence", "Evidence", id="review.evidence"),
        Binding("a", "approve", "Approve", id="review.approve"),
        Binding("x", "reject", "Reject", id="review.reject"),
        Binding("P", "run_phase2", "Run Phase 2", id="review.run_phase2"),
    ]

    def __init__(self) -> None:
        super().__init__(id="review-screen")
        self.run: dict[str, Any] | None = None
        self.rejected: set[str] = set()  # hunk ids left out
        self.amended: dict[str, str] = {}  # hunk id -> the reviewer's new text
        self.evidence: dict[str, list[Any]] = {}

    @property
    def awaiting(self) -> bool:
        return bool(self.run and self.run.get("status") == "awaiting_review")

    def compose_body(self) -> ComposeResult:
        yield Static("", id="review-meta", markup=False)
        with Horizontal(id="review-body"):
            yield OptionList(id="files")
            with Vertical(id="review-main"):
                yield DiffView(id="diff")
                yield EvidencePane(id="evidence")

    def on_mount(self) -> None:
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def _load(self) -> None:
        worker = get_current_worker()
        ctx = self.mapp.task_context()
        evidence: dict[str, list[Any]] = {}
        try:
            run = views.review_run(ctx.conn)
            if run is not None and run.get("status") == "awaiting_review":
                evidence = self._evidence(ctx, run)
        finally:
            ctx.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, run, evidence)

    @staticmethod
    def _evidence(ctx: Any, run: dict[str, Any]) -> dict[str, list[Any]]:
        from memtui.phase2.review import get_run
        from memtui.review.evidence import evidence_for_hunks
        from memtui.review.hunks import hunks_of

        full = get_run(ctx.conn, run["id"])
        return evidence_for_hunks(ctx, hunks_of(run.get("diff") or ""), full)

    def _show(self, run: dict[str, Any] | None, evidence: dict[str, list[Any]] | None = None) -> None:
        same_run = bool(
            run and self.run and run.get("id") == self.run.get("id") and run.get("diff") == self.run.get("diff")
        )
        self.run = run
        self.evidence = evidence or {}
        if not same_run:
            self.rejected, self.amended = set(), {}
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
            self.query_one(EvidencePane).show([], "Nothing to review.")
            self.refresh_bindings()
            return
        assert run is not None
        stat = run["stat"] or [(f.status, f.path) for f in parse_diff(run.get("diff") or "")]
        what = f"Restore of version {run.get('restore_of')}" if run.get("kind") == "restore" else f"Run #{run['id']}"
        meta.update(
            Content.assemble(
                (f"{what} awaiting review", "bold $text-warning"),
                f"  {len(stat)} files  started {ops.fmt_time(run['started_at'])}  ",
                ("offline" if run.get("offline") else (run.get("model") or "")),
                ("   space take/leave · e amend · v evidence", "$text-muted"),
            )
        )
        for status, path in stat:
            files.add_option(
                Option(Content.assemble((f"{status} ", STATUS_STYLE.get(status, "")), middle(path, 31)), id=path)
            )
        diff.show_diff(run.get("diff") or "", empty="The run changed no text.")
        for view in diff.hunks:
            view.set_decision(view.hunk.id in self.rejected, self.amended.get(view.hunk.id))
        self._show_evidence()
        self.refresh_bindings()

    def _show_evidence(self) -> None:
        view = self.query_one(DiffView).current_hunk
        pane = self.query_one(EvidencePane)
        if view is None:
            pane.show([], "No hunk selected.")
            return
        pane.border_title = f"Evidence for {view.hunk.file} hunk {view.hunk.id}"
        pane.show(self.evidence.get(view.hunk.id), "")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "reject", "toggle_hunk", "amend_hunk"):
            return True if self.awaiting else None
        return True

    # ---- navigation ------------------------------------------------------------------------------

    def action_next_hunk(self) -> None:
        self.query_one(DiffView).next_hunk()
        self._sync_file_highlight()
        self._show_evidence()

    def action_previous_hunk(self) -> None:
        self.query_one(DiffView).previous_hunk()
        self._sync_file_highlight()
        self._show_evidence()

    def action_focus_evidence(self) -> None:
        self.query_one(EvidencePane).focus()

    @on(EvidencePane.Open)
    def _open_evidence(self, event: EvidencePane.Open) -> None:
        self.mapp.open_rollout(event.thread_id, item=event.item)

    # ---- hunk decisions ---------------------------------------------------------------------------

    def _current(self) -> HunkView | None:
        return self.query_one(DiffView).current_hunk if self.awaiting else None

    def action_toggle_hunk(self) -> None:
        view = self._current()
        if view is None:
            return
        hid = view.hunk.id
        if hid in self.rejected:
            self.rejected.discard(hid)
        else:
            self.rejected.add(hid)
        view.set_decision(hid in self.rejected, self.amended.get(hid))

    def action_amend_hunk(self) -> None:
        view = self._current()
        if view is None:
            return
        if view.hunk.whole_file:
            self.notify_literal("This change has no text lines to amend; space leaves it out.", severity="warning")
            return
        hid = view.hunk.id
        current = self.amended.get(hid, view.hunk.new_text())

        def done(text: str | None) -> None:
            if text is None:
                return
            if text == view.hunk.new_text():
                self.amended.pop(hid, None)
            else:
                self.amended[hid] = text
            self.rejected.discard(hid)
            view.set_decision(False, self.amended.get(hid))

        self.app.push_screen(
            TextAreaModal(
                f"Amend hunk {hid} of {view.hunk.file}",
                "Edit the hunk's new lines; what you save here is what gets committed when you approve.",
                current,
                "Use this text",
            ),
            done,
        )

    def decision_counts(self) -> tuple[int, int, int]:
        """(hunks going in, hunks left out, hunks amended)."""
        ids = [v.hunk.id for v in self.query_one(DiffView).hunks]
        out = sum(1 for i in ids if i in self.rejected)
        amended = sum(1 for i in ids if i in self.amended and i not in self.rejected)
        return len(ids) - out, out, amended

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
        taken, left, amended = self.decision_counts()
        except_ids = sorted(self.rejected)
        amendments = {k: v for k, v in self.amended.items() if k not in self.rejected}
        counts = f"{taken} hunk(s) go in" + (f" ({amended} amended)" if amended else "") + f", {left} left out."
        if not left:
            body = (
                f"Approve run #{run_id}? {counts} Its {len(self.run['stat'])} changed files become the new baseline "
                "commit and the next consolidation starts from them."
            )

            def decided(ok: bool | None) -> None:
                if ok:
                    self.mapp.start_task(
                        "approve", f"Approve #{run_id}", ops.approve_task(run_id, amendments=amendments)
                    )

            self.app.push_screen(ConfirmModal("Approve consolidation (y/n)", body, "Approve"), decided)
            return
        body = (
            f"Approve run #{run_id} in part? {counts} The hunks left out keep the baseline's lines and are "
            "remembered as rejected, so later runs do not learn them again. Why leave them out?"
        )

        def decided_partial(reason: str | None) -> None:
            if reason is not None:
                self.mapp.start_task(
                    "approve",
                    f"Approve #{run_id} ({taken} in, {left} out)",
                    ops.approve_task(run_id, except_ids=except_ids, amendments=amendments, reason=reason),
                )

        self.app.push_screen(
            TextPromptModal(
                "Approve consolidation in part",
                body,
                "reason (optional; the next consolidation sees it)",
                "Approve",
                required=False,
            ),
            decided_partial,
        )

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
