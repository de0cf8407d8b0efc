# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Consolidation review: the changed files and the diff hunk by hunk with the evidence behind each hunk; take,
leave out (space) or amend (e) hunks one by one, then approve (what goes in is exactly what the screen shows),
reject, or run Phase 2.

What it shows comes from ``memtui.services.phase2.review.review_state``, the same as ``memtui review show``: the run awaiting
review plus what changed since it, or, with no run, a person's own edits since the baseline (commit them with c).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui.adapters.memroot.files import is_generated_input
from memtui.domain.labels import PHASE2_STATUS, label
from memtui.services import views
from memtui.services.review.hunks import HunkDecisions
from memtui.tui.format import fmt_time, plural
from memtui.tui.screens.base import SEARCH_BINDINGS, MemtuiScreen
from memtui.tui.screens.choice import Choice, ChoiceModal
from memtui.tui.screens.dialogs import ConfirmModal, TextAreaModal, TextPromptModal
from memtui.tui.tasks import approve_task, commit_task, reject_task
from memtui.tui.widgets.diff_view import DiffView, HunkView, parse_diff
from memtui.tui.widgets.evidence_pane import EvidencePane
from memtui.tui.widgets.lint_line import LintLine
from memtui.tui.widgets.trust_line import TrustLine
from memtui.tui.widgets.vim import VimOptionList

if TYPE_CHECKING:
    from memtui.domain.trust.review import HunkTrust
    from memtui.services.phase2.forgotten import LineRef
    from memtui.services.phase2.review import Phase2Run

SPLIT_MIN_WIDTH = 140  # side by side needs room for two readable columns

STATUS_STYLE = {"A": "$text-success", "M": "$text-warning", "D": "$text-error"}


def middle(path: str, width: int) -> str:
    """Shorten in the middle: the folder and the end of the file name are what tell files apart."""
    if len(path) <= width:
        return path
    head = path.split("/", 1)[0] + "/" if "/" in path else ""
    tail = width - len(head) - 1
    return f"{head}…{path[-tail:]}" if tail > 8 else f"…{path[-(width - 1) :]}"


EVIDENCE_AFTER_PAINT_MAX_WAIT = 2.0  # seconds


class ReviewScreen(MemtuiScreen):
    TITLE_TEXT = "Review"
    MODE = "review"
    LOADING, LOADER = "#review-body", "review"
    AUTO_FOCUS = "#diff"
    SEARCH_ROOT = "#diff"
    BINDINGS = [
        Binding("right_square_bracket,right", "next_hunk", "Next", id="review.next_hunk"),
        Binding("left_square_bracket,left", "previous_hunk", "Prev hunk", show=False, id="review.previous_hunk"),
        Binding("enter", "open_file", "Open", show=False, id="review.open_file"),
        Binding("space", "toggle_hunk", "Leave out", id="review.toggle_hunk"),
        Binding("e", "amend_hunk", "Amend", id="review.amend_hunk"),
        Binding("t", "trust_hunk", "For agents", show=False, id="review.trust_hunk"),
        Binding("v", "focus_evidence", "Evidence", id="review.evidence"),
        Binding("a", "approve", "Approve", id="review.approve"),
        Binding("x", "reject", "Reject", id="review.reject"),
        Binding("c", "commit", "Commit my edits", id="review.commit"),
        Binding("P", "run_phase2", "Run Phase 2", show=False, id="review.run_phase2"),
        Binding("z", "zoom", "Zoom", show=False, id="review.zoom"),
        Binding("o", "show_all", "All lines", show=False, id="review.show_all"),
        Binding("s", "toggle_split", "Side by side", show=False, id="review.split"),
        Binding("y", "copy_path", "Copy path", show=False, id="review.copy_path"),
        Binding("slash", "search", "Search", show=False, id="view.search"),
        *SEARCH_BINDINGS[1:],
    ]

    diff = getters.query_one("#diff", DiffView)
    files = getters.query_one("#files", OptionList)
    meta = getters.query_one("#review-meta", Static)

    def __init__(self) -> None:
        super().__init__(id="review-screen")
        self.run: Phase2Run | None = None
        self.state: Any = None  # memtui.services.phase2.review.ReviewState
        self.rejected: set[str] = set()  # hunk ids left out
        self.amended: dict[str, str] = {}  # hunk id -> the reviewer's new text
        self.trusted: set[str] = set()  # hunk ids whose tool-only or flagged lines go to agents (t)
        self.trust: dict[str, HunkTrust] = {}  # hunk id -> its classes and flags
        self.evidence: dict[str, list[Any]] = {}
        self.evidence_loaded = False  # False while the worker still reads the rollouts the run drew on
        self.forgotten_mentions: list[LineRef] = []
        self.acted: list[str] = []  # what remembered rejections did to the run (``decide.acted_notes``)

    @property
    def awaiting(self) -> bool:
        return self.run is not None and self.run.status == "awaiting_review"

    @property
    def own_edits(self) -> Any:
        """A person's pending edits (no run awaiting), else None."""
        edits = getattr(self.state, "own_edits", None)
        return edits if edits is not None and edits.stat and not self.awaiting else None

    @property
    def since_run(self) -> Any:
        return getattr(self.state, "since_run", None) if self.awaiting else None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="review-meta", markup=False)
        yield LintLine(id="review-lint")  # cross-project findings of the memory under review
        with Horizontal(id="review-body"):
            yield VimOptionList(id="files")
            with Vertical(id="review-diffs"):
                yield DiffView(id="diff")
                yield Label("", id="since-title", classes="section-title")
                yield DiffView(id="since-diff")
                yield TrustLine(id="hunk-trust")
                yield EvidencePane(id="evidence")

    def on_mount(self) -> None:
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load()

    @work(thread=True, exclusive=True, group="review", exit_on_error=False)
    def _load(self) -> None:
        """The run and its hunks are shown first; the evidence, which reads every cited rollout, follows."""
        from memtui.services.phase2.review import review_state

        worker = get_current_worker()
        ctx = self.app.task_context()
        try:
            run = views.review_run(ctx.conn)
            state = review_state(ctx)  # read-only: a temporary index, no lock
            from memtui.services.phase2.forgotten import mentions

            # forget never removes a person's line: the review names those that mention a forgotten rollout
            self.forgotten_mentions = mentions(ctx)
            from memtui.services.review.decide import acted_notes

            self.acted = acted_notes(ctx.conn, state.run.rejections_acted) if state.run is not None else []
            trust = self._trust(run) if run is not None else {}
            if worker.is_cancelled:
                return
            painted = threading.Event()
            self.app.call_from_thread(self._show, run, state, None, trust)
            self.app.call_from_thread(self.call_after_refresh, painted.set)
            if state.run is not None:
                # the evidence reads every rollout the run drew on: after the first paint, not competing with it
                # for the interpreter (a bound, not a condition: a screen that never refreshes again still loads it)
                painted.wait(EVIDENCE_AFTER_PAINT_MAX_WAIT)
                evidence = self._evidence(ctx, state.run)
                if not worker.is_cancelled:
                    self.app.call_from_thread(self._evidence_found, state.run, evidence)
        finally:
            ctx.close()

    def _evidence_found(self, run: Phase2Run, evidence: dict[str, list[Any]]) -> None:
        if self.run is not None and self.run.id == run.id and self.run.diff == run.diff:
            self.evidence = evidence
            self.evidence_loaded = True
            self._show_evidence()

    @staticmethod
    def _evidence(ctx: Any, run: Any) -> dict[str, list[Any]]:
        from memtui.services.review.evidence import evidence_for_hunks
        from memtui.services.review.hunks import hunks_of

        return evidence_for_hunks(ctx, hunks_of(run.diff), run)

    def _show(
        self,
        run: Phase2Run | None,
        state: Any = None,
        evidence: dict[str, list[Any]] | None = None,
        trust: dict[str, HunkTrust] | None = None,
    ) -> None:
        same_run = bool(run and self.run and run.id == self.run.id and run.diff == self.run.diff)
        self.run = run
        self.state = state
        if evidence is not None or not same_run:  # a reload of the same run keeps the evidence until the new comes
            self.evidence = evidence or {}
            self.evidence_loaded = evidence is not None
        if not same_run:
            self.rejected, self.amended, self.trusted = set(), {}, set()
        self.trust = trust if trust is not None else self._trust(run) if run is not None else {}
        meta = self.query_one("#review-meta", Static)
        files = self.query_one("#files", OptionList)
        diff = self.query_one("#diff", DiffView)
        files.clear_options()
        self._show_since()
        if not self.awaiting:
            if run is None:
                text = "No consolidation has run yet. Press P to run Phase 2."
            else:
                reason = f": {run.reason}" if run.reason else ""
                text = (
                    f"No consolidation awaiting review. Last run #{run.id} {label(run.status, PHASE2_STATUS)}{reason}. "
                    "P runs Phase 2."
                )
            if (edits := self.own_edits) is not None:
                text += (
                    f"\nYour own edits and new inputs since the baseline: {plural(len(edits.stat), 'file')}. "
                    "c commits them as a manual change; otherwise the next Phase 2 consolidates them."
                )
                for status, path in edits.stat:
                    files.add_option(
                        Option(
                            Content.assemble(
                                (f"{status} ", STATUS_STYLE.get(status, "")), middle(path, self._file_width())
                            ),
                            id=path,
                        )
                    )
                diff.show_diff(edits.diff, empty="Only file modes changed.")
            else:
                error = getattr(state, "error", None)
                diff.show_diff("", empty=f"Nothing to review. ({error})" if error else "Nothing to review.")
            meta.update(Content(text))
            self.query_one(EvidencePane).show(
                [], "Your own edits: their source is you." if self.own_edits is not None else "Nothing awaits review."
            )
            self.refresh_bindings()
            return
        assert run is not None
        stat = run.stat or [(f.status, f.path) for f in parse_diff(run.diff)]
        since = self.since_run
        what = f"Restore of version {run.restore_of}" if run.kind == "restore" else f"Run #{run.id}"
        meta.update(
            Content.assemble(
                (f"{what} awaiting review", "bold $text-warning"),
                f" · {plural(len(stat), 'file')} changed · started {fmt_time(run.started_at)} · ",
                ("offline" if run.offline else (run.model or "")),
                (
                    f"\n⚠ {plural(len(since.stat), 'file')} changed since the run (not part of it, shown below): "
                    + ", ".join(p for _, p in since.stat[:6])
                    + (" ..." if len(since.stat) > 6 else ""),
                    "$text-error",
                )
                if since is not None
                else "",
                (
                    f"\n⚠ {plural(len(self.forgotten_mentions), 'line')} you wrote "
                    f"{'mentions' if len(self.forgotten_mentions) == 1 else 'mention'} a forgotten rollout "
                    "(forget leaves them to you): "
                    + ", ".join(f"{m.file}:{m.line}" for m in self.forgotten_mentions[:6]),
                    "$text-warning",
                )
                if self.forgotten_mentions
                else "",
                (
                    "\n"
                    + "\n".join(f"⟲ {note}" for note in self.acted[:4])
                    + (f"\n⟲ ... and {len(self.acted) - 4} more: `memtui review show`" if len(self.acted) > 4 else "")
                    + "\n  (History, 6: l lifts a rejection)",
                    "$text-warning",
                )
                if self.acted
                else "",
            )
        )
        for status, path in stat:
            files.add_option(
                Option(
                    Content.assemble((f"{status} ", STATUS_STYLE.get(status, "")), middle(path, self._file_width())),
                    id=path,
                )
            )
        diff.show_diff(run.diff, empty="The run changed no text.")
        for view in diff.hunks:
            self._decide(view)
        self._show_evidence()
        self.refresh_bindings()

    def _show_evidence(self) -> None:
        view = self.query_one("#diff", DiffView).current_hunk
        pane = self.query_one(EvidencePane)
        if view is None:
            pane.show([], "No hunk selected.")
            self.query_one(TrustLine).show(None)
            return
        from memtui.services.review.evidence import why_no_evidence

        pane.border_title = f"Evidence for {view.hunk.file} hunk {view.hunk.id}"
        if not self.evidence_loaded and view.hunk.id not in self.evidence:
            pane.show([], "Finding the evidence: reading the rollouts this run drew on…")
        else:
            pane.show(self.evidence.get(view.hunk.id), why_no_evidence(view.hunk))
        self.query_one(TrustLine).show(self.trust.get(view.hunk.id))

    @staticmethod
    def _trust(run: Phase2Run) -> dict[str, HunkTrust]:
        from memtui.domain.trust.review import hunk_trust
        from memtui.services.review.hunks import hunks_of

        hidden = (run.trust_report or {}).get("hidden", {})
        return {h.id: hunk_trust(h.text, h.new_start, hidden.get(h.file)) for h in hunks_of(run.diff)}

    def _decide(self, view: HunkView) -> None:
        """Show the hunk's decision on its border: in, left out, amended, and whether agents load its tool lines."""
        hid = view.hunk.id
        view.set_decision(hid in self.rejected, self.amended.get(hid))
        trust = self.trust.get(hid)
        if trust is not None and trust.summary():
            flags = f"  ⚑ {len(trust.flags)}" if trust.flags else ""
            view.set_title_extra(Content.assemble((flags, "$text-error"), f"  {trust.summary().split(' · ')[0]}"))
        if hid in self.trusted and hid not in self.rejected:
            view.border_subtitle = Content("✓ goes in · its tool lines go to agents (t: keep them out)")

    def _show_since(self) -> None:
        since = self.since_run
        title = self.query_one("#since-title", Label)
        view = self.query_one("#since-diff", DiffView)
        title.display = view.display = since is not None
        if since is not None:
            title.update(
                Content(f"Changed since the run (not part of what the run produced): {plural(len(since.stat), 'file')}")
            )
            view.show_diff(since.diff, empty=", ".join(f"{s} {p}" for s, p in since.stat))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("approve", "reject", "toggle_hunk", "amend_hunk", "trust_hunk"):
            return True if self.awaiting else None
        if action == "commit":
            return self.own_edits is not None  # hidden unless there are edits to commit
        if action == "toggle_split":
            return self.size.width >= SPLIT_MIN_WIDTH  # hidden where it cannot work
        return super().check_action(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """A decision key with nothing awaiting review (its binding is disabled) says why instead of doing nothing."""
        if self.awaiting or (self.run is None and self.state is None):
            return
        actions = {b.action for b in self._bindings.key_to_bindings.get(event.key, [])}
        if actions & {"approve", "reject", "toggle_hunk", "amend_hunk"}:
            event.stop()
            if self.own_edits is not None:
                text = "No consolidation awaits review: these are your own edits. c commits them."
            else:
                text = "No consolidation awaits review: nothing to approve, reject or leave out. P runs Phase 2."
            self.notify_literal(text, severity="warning")

    def loader_failed(self, error: BaseException) -> None:
        self.meta.update(Content(f"Cannot load the consolidation: {type(error).__name__}: {error}"))

    def _file_width(self) -> int:
        """Room for a path in the file list (the list is 36 columns, 48 when wide, the full width when narrow), after
        its padding, scrollbar and the status letter, so a long path is shortened instead of wrapped."""
        width = self.size.width or self.app.size.width
        return width - 8 if width < 100 else (42 if width >= 160 else 30)

    def on_resize(self, event: events.Resize) -> None:
        if self.diff.split and event.size.width < SPLIT_MIN_WIDTH:
            self.diff.set_split(False)
            for view in self.diff.hunks:
                view.set_decision(view.hunk.id in self.rejected, self.amended.get(view.hunk.id))

    def action_show_all(self) -> None:
        """Every line of a long hunk (it shows its first lines until asked: rendering is per hunk)."""
        view = self.diff.current_hunk
        if view is None or not view.show_all():
            self.notify_literal("This hunk shows all its lines already.")

    def action_zoom(self) -> None:
        """The diff alone, full width (again: the file list comes back)."""
        self.toggle_class("-zoomed")
        self.diff.focus()

    def action_toggle_split(self) -> None:
        if self.size.width < SPLIT_MIN_WIDTH:
            self.notify_literal(f"Side by side needs at least {SPLIT_MIN_WIDTH} columns.", severity="warning")
            return
        self.diff.set_split(not self.diff.split)
        for view in self.diff.hunks:  # the rebuilt hunks show the decisions taken so far
            view.set_decision(view.hunk.id in self.rejected, self.amended.get(view.hunk.id))

    def action_copy_path(self) -> None:
        files = self.files
        if files.has_focus and files.highlighted is not None:
            path = files.get_option_at_index(files.highlighted).id
        else:
            path = self.diff.current_path
        if path:
            self.app.copy_text(path, "path")

    # ---- navigation ------------------------------------------------------------------------------

    def action_next_hunk(self) -> None:
        self.diff.next_hunk()

    def action_previous_hunk(self) -> None:
        self.diff.previous_hunk()

    @on(DiffView.CurrentChanged, "#diff")
    def _current_changed(self, event: DiffView.CurrentChanged) -> None:
        """Whatever made another hunk current (keys, the file list, scrolling), the evidence pane and the file
        list follow it: the hunk on screen, the evidence shown and the hunk space acts on are the same one."""
        self._sync_file_highlight()
        self._show_evidence()

    def action_focus_evidence(self) -> None:
        self.query_one(EvidencePane).focus()

    @on(EvidencePane.Leave)
    def _leave_evidence(self) -> None:
        self.diff.focus()

    @on(EvidencePane.Open)
    def _open_evidence(self, event: EvidencePane.Open) -> None:
        self.app.open_rollout(event.thread_id, item=event.item)

    # ---- hunk decisions ---------------------------------------------------------------------------

    def _current(self) -> HunkView | None:
        return self.query_one("#diff", DiffView).current_hunk if self.awaiting else None

    def action_toggle_hunk(self) -> None:
        view = self._current()
        if view is None:
            return
        hid = view.hunk.id
        if hid in self.rejected:
            self.rejected.discard(hid)
        else:
            self.rejected.add(hid)
            self.trusted.discard(hid)
            if is_generated_input(view.hunk.file):
                self.notify_literal(
                    f"{view.hunk.file} is rendered from the memories at every run: leaving it out keeps it out of "
                    "this version only, and the next run shows it again. To drop what a session taught for good, "
                    "forget its rollout (F on the Rollouts screen)."
                )
        self._decide(view)

    def action_trust_hunk(self) -> None:
        """Let the hunk's tool-only and flagged lines into what agents load (or take that back): a person's
        explicit decision, recorded in the history with the approval."""
        view = self._current()
        if view is None:
            return
        hid = view.hunk.id
        trust = self.trust.get(hid)
        if hid not in self.trusted and not (trust and any(f.kind in ("tool-only", "injection") for f in trust.flags)):
            self.notify_literal("This hunk has no tool-only or flagged line; agents load it as it is.")
            return
        if hid in self.trusted:
            self.trusted.discard(hid)
        else:
            self.trusted.add(hid)
            self.rejected.discard(hid)
        self._decide(view)

    def action_amend_hunk(self) -> None:
        view = self._current()
        if view is None:
            return
        if view.hunk.whole_file:
            self.notify_literal("This change has no text lines to amend; space leaves it out.", severity="warning")
            return
        if is_generated_input(view.hunk.file):
            from memtui.services.review.decide import AMEND_GENERATED

            self.notify_literal(AMEND_GENERATED.format(file=view.hunk.file) + ".", severity="warning")
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
        ids = [v.hunk.id for v in self.query_one("#diff", DiffView).hunks]
        out = sum(1 for i in ids if i in self.rejected)
        amended = sum(1 for i in ids if i in self.amended and i not in self.rejected)
        return len(ids) - out, out, amended

    def _sync_file_highlight(self) -> None:
        path = self.query_one("#diff", DiffView).current_path
        files = self.query_one("#files", OptionList)
        if path is not None:
            try:
                files.highlighted = files.get_option_index(path)
            except Exception:  # (a file without hunks may be missing from the list)
                pass

    @on(OptionList.OptionHighlighted, "#files")
    def _file_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and self.query_one("#files").has_focus:
            self.query_one("#diff", DiffView).jump_to_file(event.option.id)

    @on(OptionList.OptionSelected, "#files")
    def _file_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.app.open_memory_file(event.option.id)

    def action_open_file(self) -> None:
        files = self.query_one("#files", OptionList)
        if files.has_focus and files.highlighted is not None:
            option = files.get_option_at_index(files.highlighted)
            path = option.id
        else:
            path = self.query_one("#diff", DiffView).current_path
        if path:
            self.app.open_memory_file(path)

    # ---- decisions -------------------------------------------------------------------------------

    def action_approve(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run.id
        taken, left, amended = self.decision_counts()
        decisions = HunkDecisions(
            except_ids=tuple(sorted(self.rejected)),
            amendments={k: v for k, v in self.amended.items() if k not in self.rejected},
            trusted_ids=tuple(sorted(self.trusted - self.rejected)),
        )
        counts = f"{taken} hunk(s) go in" + (f" ({amended} amended)" if amended else "") + f", {left} left out."
        if decisions.trusted_ids:
            counts += f" {len(decisions.trusted_ids)} hunk(s) let their tool-only lines reach agents."
        since = self.since_run
        if since is not None:
            names = ", ".join(f"{p} ({s})" for s, p in since.stat)

            def chose(choice: str | None) -> None:
                if choice == "include":
                    self.app.start_task(
                        "approve",
                        f"Approve #{run_id} + changes",
                        approve_task(run_id, True, since.tree, decisions=decisions),
                    )

            self.app.push_screen(
                ChoiceModal(
                    "Files changed since the run",
                    f"Changed after run #{run_id}: {names}. These changes are not part of what the run produced; "
                    "they are shown under 'Changed since the run'. Approve the run together with exactly these "
                    f"changes, or cancel (and undo them first to approve the run alone). {counts}",
                    [Choice("Approve with these changes", "include", "warning"), Choice("Cancel", "cancel")],
                    focus="cancel",
                ),
                chose,
            )
            return
        if not left:
            body = (
                f"Approve run #{run_id}? {counts} Its {len(self.run.stat)} changed files become the new baseline "
                "commit and the next consolidation starts from them."
            )

            def decided(ok: bool | None) -> None:
                if ok:
                    self.app.start_task(
                        "approve",
                        f"Approve #{run_id}",
                        approve_task(run_id, decisions=decisions),
                    )

            self.app.push_screen(ConfirmModal("Approve consolidation (y/n)", body, "Approve"), decided)
            return
        self._check_partial(run_id, decisions, counts, taken, left)

    @work(thread=True, exclusive=True, group="review-check", exit_on_error=False)
    def _check_partial(self, run_id: int, decisions: HunkDecisions, counts: str, taken: int, left: int) -> None:
        """Ask the domain which references the planned tree would leave dangling, before the approve dialog."""
        from memtui.services.phase2.review import ReviewError, check_partial

        ctx = self.app.task_context()
        try:
            check = check_partial(ctx, run_id, list(decisions.except_ids), dict(decisions.amendments))
        except ReviewError as exc:
            self.app.call_from_thread(self.notify_literal, str(exc), severity="error")
            return
        finally:
            ctx.close()
        if check.ok:
            self.app.call_from_thread(self._ask_partial, run_id, decisions, counts, taken, left)
        else:
            self.app.call_from_thread(self._show_dangling, check)

    def _show_dangling(self, check: Any) -> None:
        def chose(choice: str | None) -> None:
            if choice != "fix":
                return
            for hid in check.take_back:
                self.rejected.discard(hid)
            for view in self.query(HunkView):
                view.set_decision(view.hunk.id in self.rejected, self.amended.get(view.hunk.id))
            self.action_approve()

        choices = [Choice(f"Take back {plural(len(check.take_back), 'hunk')}", "fix")] if check.take_back else []
        self.app.push_screen(
            ChoiceModal(
                "References would dangle",
                check.describe(),
                [*choices, Choice("Back to the review", "cancel")],
                focus="fix" if choices else "cancel",
            ),
            chose,
        )

    def _ask_partial(self, run_id: int, decisions: HunkDecisions, counts: str, taken: int, left: int) -> None:
        from memtui.services.review.decide import remembered_if_left_out

        hunks = {v.hunk.id: v.hunk for v in self.diff.hunks}
        out = [hunks[h] for h in decisions.except_ids if h in hunks]
        inputs = sorted({h.file for h in out if is_generated_input(h.file)})
        remembered = sum(1 for h in out if remembered_if_left_out(h))
        body = f"Approve run #{run_id} in part? {counts} The hunks left out keep the baseline's lines."
        if remembered:
            body += (
                f" {plural(remembered, 'hunk')} of the memory {'is' if remembered == 1 else 'are'} remembered as "
                "rejected: later runs do not add those lines again (History, 6: l lifts a rejection)."
            )
        if inputs:
            body += (
                f" {', '.join(inputs)}: not published now; the next run renders {'it' if len(inputs) == 1 else 'them'} "
                "again from the memories (to drop a session's memory for good, forget its rollout)."
            )
        body += " Why leave them out?"

        def decided_partial(reason: str | None) -> None:
            if reason is not None:
                self.app.start_task(
                    "approve",
                    f"Approve #{run_id} ({taken} in, {left} out)",
                    approve_task(run_id, decisions=decisions, reason=reason or None),
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

    def action_commit(self) -> None:
        edits = self.own_edits
        if edits is None:
            return

        def decided(message: str | None) -> None:
            if message:
                self.app.start_task("commit", "Commit manual edit", commit_task(message, edits.tree))

        self.app.push_screen(
            TextPromptModal(
                "Commit my edits",
                f"Make the {plural(len(edits.stat), 'file')} shown the new baseline, as your own change. New inputs "
                "(raw_memories.md, rollout_summaries/) stay pending for Phase 2.",
                "commit message",
                "Commit",
                value="Manual edit",
            ),
            decided,
        )

    def action_reject(self) -> None:
        if not self.awaiting or self.run is None:
            return
        run_id = self.run.id
        if self.run.kind == "restore":
            title = "Reject the restore"
            body = (
                f"Reject the restore of version {self.run.restore_of}? The memory stays as it is in the current "
                "baseline: the restored files are put back. Why?"
            )
        else:
            title = "Reject consolidation"
            body = f"Reject run #{run_id}? The agent's edits are undone and the workspace is restored. Why?"

        def decided(reason: str | None) -> None:
            if reason:
                self.app.start_task("reject", f"Reject #{run_id}", reject_task(reason, run_id))

        self.app.push_screen(
            TextPromptModal(
                title,
                body,
                "reason (the next consolidation sees it)",
                "Reject",
                danger=True,
            ),
            decided,
        )

    def action_run_phase2(self) -> None:
        self.app.run_phase2()
