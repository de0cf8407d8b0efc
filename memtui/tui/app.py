# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""MemtuiApp: seven screens (modes) over the domain, long work in thread workers, signals for shared state.

Workers never touch widgets: they post messages or use ``call_from_thread``. Each worker opens its own
Context (and so its own sqlite connection: sqlite objects are thread-bound). Screens are imported when first
shown, so the first paint loads only the Rollouts screen.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on, work
from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.signal import Signal
from textual.worker import Worker, WorkerState

from memtui.core import clock
from memtui.services.context import Context, open_context
from memtui.state.status import Status, read_status
from memtui.tui import tasks
from memtui.tui.commands import MemtuiCommands
from memtui.tui.messages import TaskFailed, TaskFinished, TaskProgress

if TYPE_CHECKING:
    from memtui.tui.screens.memory import MemoryScreen
    from memtui.tui.screens.review import ReviewScreen

STATUS_REFRESH_SECONDS = 15.0
MEMORY_ROOT_POLL_SECONDS = 2.0  # how soon a change made outside memtui (a shell, an editor) shows in the UI
LOG_LIMIT = 500
STILL_TOAST_SECONDS = 24 * 3600.0  # a toast in a still app (snapshots) outlives any run, however slow the machine


def _mode(module: str, cls: str) -> Callable[[], Screen]:
    """A mode's screen factory that imports the screen module on first use."""

    def make() -> Screen:
        import importlib

        return getattr(importlib.import_module(f"memtui.tui.screens.{module}"), cls)()

    return make


# mode -> (module under memtui.tui.screens, screen class): imported on first use, or by the warm-up after start
_SCREENS = {
    "rollouts": ("rollouts", "RolloutsScreen"),
    "jobs": ("jobs", "JobsScreen"),
    "review": ("review", "ReviewScreen"),
    "memory": ("memory", "MemoryScreen"),
    "citations": ("citations", "CitationsScreen"),
    "history": ("history", "HistoryScreen"),
    "health": ("health", "HealthScreen"),
}


@dataclass
class TaskState:
    """A task while it runs: what the task bar shows."""

    name: str
    title: str
    quiet: bool
    started: float
    done: float = 0.0
    total: float | None = None
    detail: str = "starting"


@dataclass
class LogEntry:
    """One line of the task log: a task (from start to outcome) or a notification. Outlives the toasts."""

    at: float
    title: str
    message: str
    severity: SeverityLevel = "information"
    outcome: str = ""  # tasks: running, finished, skipped, failed, cancelled...; notifications: ""
    ended: float | None = None
    task: str = ""  # the task name, for tasks

    @property
    def seconds(self) -> float | None:
        return None if self.ended is None else self.ended - self.at


@dataclass
class Tasks:
    running: dict[str, TaskState] = field(default_factory=dict)
    cancels: dict[str, threading.Event] = field(default_factory=dict)


class MemtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "memtui"
    COMMANDS = App.COMMANDS | {MemtuiCommands}
    MODES = {mode: _mode(module, cls) for mode, (module, cls) in _SCREENS.items()}
    DEFAULT_MODE = "rollouts"
    SCREEN_LABELS = {
        "rollouts": "Rollouts",
        "jobs": "Jobs",
        "review": "Review",
        "memory": "Memory",
        "citations": "Citations",
        "history": "History",
        "health": "Health",
    }
    # Screens get a class per width: -narrow (80 columns), -medium, -wide (200 columns).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (160, "-wide")]
    # ... and a class per height: dialogs lay out for 24 rows (-short) so their buttons stay on screen.
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    BINDINGS = [
        Binding("1", "switch_mode('rollouts')", "Rollouts", show=False, id="memtui.rollouts"),
        Binding("2", "switch_mode('jobs')", "Jobs", show=False, id="memtui.jobs"),
        Binding("3", "switch_mode('review')", "Review", show=False, id="memtui.review"),
        Binding("4", "switch_mode('memory')", "Memory", show=False, id="memtui.memory"),
        Binding("5", "switch_mode('citations')", "Cite", show=False, id="memtui.citations"),
        Binding("6", "switch_mode('history')", "History", show=False, id="memtui.history"),
        Binding("7", "switch_mode('health')", "Health", show=False, id="memtui.health"),
        Binding("f1,question_mark", "help", "Help", id="memtui.help"),
        Binding("ctrl+n", "task_log", "Task log", show=False, id="memtui.log"),
        Binding("f5", "ingest", "Ingest", show=False, id="memtui.ingest"),
        Binding("ctrl+g", "cancel_work", "Cancel", id="memtui.cancel"),
    ]

    def __init__(
        self,
        ctx: Context | None = None,
        *,
        home: Path | None = None,
        ingest_on_start: bool = True,
        status_refresh: bool = True,
        cursor_blink: bool = True,
        toasts_expire: bool = True,
        keymap: dict[str, str] | None = None,
        notes: list[str] | None = None,
    ) -> None:
        """``notes``: sentences said on start (e.g. that a new home was created), as notifications."""
        super().__init__()
        self.start_notes = list(notes or [])
        self.ctx = ctx or open_context(home=home)
        self.ingest_on_start = ingest_on_start
        self.status_refresh = status_refresh
        self.cursor_blink = cursor_blink
        self.toasts_expire = toasts_expire
        self.keymap = keymap or {}
        self.status: Status | None = None
        self.status_signal: Signal[Status] = Signal(self, "status")
        self.tasks_signal: Signal[dict[str, TaskState]] = Signal(self, "tasks")
        self.data_signal: Signal[str] = Signal(self, "data")
        self.log_signal: Signal[list[LogEntry]] = Signal(self, "log")
        self._tasks = Tasks()
        self.task_log: list[LogEntry] = []
        self.task_errors: list[str] = []
        self.forget_reasons: dict[str, str] = {}  # thread id -> the reason typed for a forget not done yet

    @property
    def task_states(self) -> dict[str, TaskState]:
        return self._tasks.running

    # ---- lifecycle ------------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.keymap:
            from memtui.tui.keymap import keymap_warnings

            self.set_keymap(self.keymap)
            for warning in keymap_warnings(self.keymap, "config.toml [keymap]"):
                self.notify(warning, title="Keymap", severity="warning", timeout=20, markup=False)
        for note in self.start_notes:
            self.notify(note, title="New home", timeout=20, markup=False)
        self.refresh_status()
        if self.status_refresh:
            self.set_interval(STATUS_REFRESH_SECONDS, self.refresh_status)
            self.set_interval(MEMORY_ROOT_POLL_SECONDS, self.watch_memory_root)
        if self.ingest_on_start:
            self.run_ingest(quiet=True)
        self._warm_screens()

    @work(thread=True, group="warm-screens", exit_on_error=False)
    def _warm_screens(self) -> None:
        """Import every screen's module while the person reads the first screen. On a first visit the key's
        handler would import it on the event loop (review, memory and history took about a second each on a
        loaded machine: nothing moved meanwhile); imported here, the screen paints at once with its loading
        sign. A key pressed before the warm-up reaches its module waits for that one import, as it did before."""
        import importlib

        for module, _cls in _SCREENS.values():
            importlib.import_module(f"memtui.tui.screens.{module}")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Without blink, every cursor that gets focus stays drawn (whatever screen or dialog composed it), so a
        screenshot never depends on when the blink timer last fired."""
        if not self.cursor_blink and getattr(event.widget, "cursor_blink", False):
            event.widget.cursor_blink = False  # type: ignore[attr-defined]

    def task_context(self) -> Context:
        """A Context for a worker thread: same settings and paths, its own connection."""
        return Context(loaded=self.ctx.loaded, paths=self.ctx.paths, creates_home=self.ctx.creates_home)

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def refresh_status(self) -> None:
        conn = self.ctx.new_conn()
        try:
            status = read_status(conn)
        finally:
            conn.close()
        self.call_from_thread(self._publish_status, status)

    def _publish_status(self, status: Status) -> None:
        self.status = status
        self.status_signal.publish(status)

    def data_changed(self, source: str) -> None:
        """Tell every screen that state changed (the current one reloads now, the others when shown)."""
        self.refresh_status()
        self.data_signal.publish(source)

    # ---- the log of what happened ------------------------------------------------------------------

    def _record(self, entry: LogEntry) -> LogEntry:
        self.task_log.append(entry)
        del self.task_log[:-LOG_LIMIT]
        self.log_signal.publish(self.task_log)
        return entry

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification also goes to the task log (``ctrl+n``), which keeps it after the toast is gone."""
        self._record(LogEntry(clock.now(), title or "note", message, severity))
        self._toast(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _toast(self, message: str, *, title: str, severity: SeverityLevel, timeout: float | None, markup: bool) -> None:
        """A toast's expiry runs on the wall clock: a still app keeps every toast up so screenshots do not race it."""
        if not self.toasts_expire:
            timeout = STILL_TOAST_SECONDS
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def report_error(self, where: str, error: BaseException | str) -> None:
        """A failure of a page load or a small worker: shown, logged, and the app carries on."""
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.task_errors.append(text)
        self.notify(text, title=f"{where} failed", severity="error", markup=False, timeout=15)

    # ---- long work --------------------------------------------------------------------------------

    def start_task(self, name: str, title: str, fn: tasks.TaskFn, *, quiet: bool = False) -> bool:
        """Run ``fn(ctx, progress, cancel)`` in a thread worker with a progress line and a cancel event."""
        if name in self._tasks.running:
            self.notify(f"{title} is already running.", severity="warning", markup=False)
            return False
        cancel = self._tasks.cancels[name] = threading.Event()
        state = self._tasks.running[name] = TaskState(name, title, quiet, clock.now())
        if not quiet:
            self._record(LogEntry(state.started, title, "started", outcome="running", task=name))
        self.tasks_signal.publish(self._tasks.running)
        self.refresh_bindings()
        self._run_task(name, title, fn, cancel)
        return True

    @work(thread=True, exit_on_error=False, group="tasks")
    def _run_task(self, name: str, title: str, fn: tasks.TaskFn, cancel: threading.Event) -> None:
        ctx = self.task_context()
        last = [0.0]

        def progress(done: float, total: float | None, detail: str) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.05 or (total and done >= total):
                last[0] = now
                self.post_message(TaskProgress(name, float(done or 0), float(total) if total else None, detail))

        try:
            outcome = fn(ctx, progress, cancel)
        except Exception as exc:  # (any failure is shown; the app stays usable)
            self.log.error(traceback.format_exc())
            self.post_message(TaskFailed(name, title, f"{type(exc).__name__}: {exc}"))
        else:
            if cancel.is_set() and outcome.verb != "cancelled":
                outcome = tasks.TaskOutcome("cancelled", outcome.summary or "stopped at a safe point", "warning")
            self.post_message(TaskFinished(name, title, outcome))
        finally:
            ctx.close()

    @on(TaskProgress)
    def _task_progress(self, message: TaskProgress) -> None:
        state = self._tasks.running.get(message.name)
        if state is not None:
            state.done, state.total, state.detail = message.done, message.total, message.detail
            self.tasks_signal.publish(self._tasks.running)

    def _end_task(self, name: str, outcome: str, message: str, severity: SeverityLevel) -> TaskState | None:
        state = self._tasks.running.pop(name, None)
        self._tasks.cancels.pop(name, None)
        self.tasks_signal.publish(self._tasks.running)
        self.refresh_bindings()
        entry = next((e for e in reversed(self.task_log) if e.task == name and e.ended is None), None)
        if entry is None and state is not None and (not state.quiet or severity != "information"):
            entry = self._record(LogEntry(state.started, state.title, "", task=name))
        if entry is not None:
            entry.outcome, entry.message, entry.severity, entry.ended = outcome, message, severity, clock.now()
            self.log_signal.publish(self.task_log)
        return state

    @on(TaskFinished)
    def _task_finished(self, message: TaskFinished) -> None:
        out = message.outcome
        out = replace(out, summary=tasks.screen_words(out.summary))
        state = self._end_task(message.name, out.verb, out.summary, out.severity)
        if not (state and state.quiet and not out.news and out.severity == "information"):
            self._toast(
                out.summary, title=f"{message.title} {out.verb}", severity=out.severity, markup=False, timeout=8
            )
        self.data_changed(message.name)

    @on(TaskFailed)
    def _task_failed(self, message: TaskFailed) -> None:
        error = tasks.screen_words(message.error)
        self._end_task(message.name, "failed", error, "error")
        self.task_errors.append(error)
        self._toast(error, title=f"{message.title} failed", severity="error", markup=False, timeout=15)
        self.data_changed(message.name)

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        """Failures of the app's own small workers (screens forward theirs: the message does not bubble)."""
        if event.state == WorkerState.ERROR and event.worker.group != "tasks" and event.worker.error is not None:
            self.report_error(event.worker.description or event.worker.name or "background work", event.worker.error)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_work":
            return bool(self._tasks.running)
        return True

    def action_cancel_work(self) -> None:
        if not self._tasks.cancels:
            self.notify("Nothing is running.", markup=False)
            return
        for event in self._tasks.cancels.values():
            event.set()
        self.notify("Cancelling: work stops at its next safe point.", markup=False)

    # ---- the domain's entry points ---------------------------------------------------------------------

    def action_ingest(self) -> None:
        self.run_ingest()

    def run_ingest(self, quiet: bool = False) -> None:
        self.start_task("ingest", "Ingest", tasks.ingest_task, quiet=quiet)

    def run_phase1(self, thread_id: str | None = None, all_threads: bool = False) -> None:
        """Phase 1 over the eligible rollouts, one (``thread_id``), or every session whatever its age
        (``all_threads``: the backfill, as ``memtui phase1 --all``)."""
        title = f"Extract {thread_id[:13]}" if thread_id else "Phase 1 (every session)" if all_threads else "Phase 1"
        name = f"phase1:{thread_id}" if thread_id else "phase1"
        self.start_task(name, title, tasks.phase1_task(thread_id=thread_id, all_threads=all_threads))

    def extract_rollout(self, thread_id: str, status: str) -> None:
        """Extract one rollout now; one that already has a memory is replaced only after a yes."""
        if status not in ("done", "no-op"):
            self.run_phase1(thread_id=thread_id)
            return
        from memtui.tui.screens.dialogs import ConfirmModal

        what = "memory" if status == "done" else "no-op result"
        body = (
            f"{thread_id} was already extracted. Extract it again? Its {what} is replaced by the new result "
            "(the next consolidation picks up the change)."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self.run_phase1(thread_id=thread_id)

        self.push_screen(ConfirmModal("Extract again (y/n)", body, "Extract again"), decided)

    def forget_rollout(self, thread_id: str) -> None:
        """Forget a rollout (F on the Rollouts list and in its detail), after its reason. With a run awaiting review
        forget cannot happen (it would change the inputs under the reviewer), so that is said before the reason is
        asked; a reason typed for a forget that then could not happen is kept and offered again."""
        from memtui.services.phase2.review import pending_run
        from memtui.tui.screens.dialogs import TextPromptModal

        run = pending_run(self.ctx.conn)
        if run is not None:
            self.notify(
                f"Run #{run.id} awaits review: approve or reject it first (3 Review), then forget {thread_id}.",
                title="Forget not started",
                severity="warning",
                markup=False,
            )
            return
        body = (
            f"Forget rollout {thread_id}? Its memory and summary are removed now and it is never extracted again "
            "(`memtui forget --undo` lifts that). What was derived from it leaves MEMORY.md with the next Phase 2 "
            "run, once you approve it; old versions holding it are rewritten or dropped."
        )
        reasons = self.forget_reasons

        def decided(reason: str | None) -> None:
            if reason is None:
                return
            reasons[thread_id] = reason  # until the forget is done: a refusal keeps it for the next F
            self.start_task(
                f"forget:{thread_id}",
                f"Forget {thread_id[:12]}",
                tasks.forget_task(thread_id, reason or None, done=lambda: reasons.pop(thread_id, None)),
            )

        self.push_screen(
            TextPromptModal(
                "Forget this rollout",
                body,
                "reason (optional)",
                "Forget",
                value=reasons.get(thread_id, ""),
                danger=True,
                required=False,
            ),
            decided,
        )

    def run_phase2(self, force: bool = False) -> None:
        self.start_task("phase2", "Phase 2 (ignore cooldown)" if force else "Phase 2", tasks.phase2_task(force))

    def confirm_phase2_force(self) -> None:
        """Phase 2 without the cooldown, after a yes: the palette's way to re-run right after an approve."""
        from memtui.tui.screens.dialogs import ConfirmModal

        if self.status is not None and self.status.phase2.awaiting_review:
            run = self.status.phase2.awaiting_run_id
            self.notify(
                f"Run #{run} is awaiting review: approve or reject it first (screen 3).",
                title="Phase 2 not started",
                severity="warning",
                markup=False,
            )
            return
        hours = self.ctx.settings.phase2_cooldown_hours
        body = (
            f"Phase 2 normally waits {hours:g} h after a successful consolidation. Run it now anyway? "
            "It still takes the lock and its result still awaits your review."
        )

        def decided(ok: bool | None) -> None:
            if ok:
                self.run_phase2(force=True)

        self.push_screen(ConfirmModal("Phase 2, ignoring the cooldown (y/n)", body, "Run Phase 2"), decided)

    def approve_pending(self) -> None:
        self.reach_mode("review")
        self.call_after_refresh(lambda: self._review_action("approve"))

    def reject_pending(self) -> None:
        self.reach_mode("review")
        self.call_after_refresh(lambda: self._review_action("reject"))

    def _review_action(self, action: str) -> None:
        from memtui.tui.screens.review import ReviewScreen

        screen: ReviewScreen | Screen = self.screen
        if isinstance(screen, ReviewScreen):
            if not screen.awaiting:
                self.notify("No consolidation is awaiting review.", severity="warning", markup=False)
            elif action == "approve":
                screen.action_approve()
            else:
                screen.action_reject()

    def _memory_root_signature(self) -> tuple[object, ...]:
        from memtui.tui.screens.memory import FILES as MEMORY_FILES

        root = self.ctx.paths.memory_root
        sig: list[object] = []
        for path in (root, root / MEMORY_FILES["memory-md"], root / MEMORY_FILES["summary-md"]):
            try:
                st = path.stat()
                sig.append((st.st_mtime_ns, st.st_size))
            except OSError:
                sig.append(None)
        return tuple(sig)

    def watch_memory_root(self) -> None:
        """Changes made outside memtui reach the screens: the editor's checks, the review's "changed since"."""
        sig = self._memory_root_signature()
        last, self._memory_root_sig = getattr(self, "_memory_root_sig", None), sig
        if last is not None and sig != last:
            self.data_signal.publish("disk")

    # ---- leaving with unsaved edits (a person's edit is never lost) --------------------------------------------------

    editor_screen: MemoryScreen | None = None  # the memory editor registers itself when it mounts

    def _editor(self) -> MemoryScreen | None:
        editor = self.editor_screen
        return editor if editor is not None and editor.is_attached else None

    async def action_quit(self) -> None:
        """Quit, but ask first when the memory editor holds unsaved changes."""
        editor = self._editor()
        if editor is None or not editor.unsaved():
            self.exit()
            return
        self._ask_unsaved(editor, "quitting", ("Save and quit", "Quit without saving", "Cancel"), self.exit)

    async def action_switch_mode(self, mode: str) -> None:
        """Switch screens; leaving the memory editor with unsaved changes asks first.

        A number key always reaches its screen: screens opened on top of it (a rollout opened from the review, a
        search) are closed on the way. A dialog waiting for an answer keeps the key: it is answered first."""
        from memtui.tui.screens.memory import MemoryScreen

        screen = self.screen
        if isinstance(screen, ModalScreen):
            if not getattr(screen, "NAVIGABLE", False):
                return
            self.pop_screen()
        editor = next((s for s in self.screen_stack if isinstance(s, MemoryScreen)), None)
        if not (editor is not None and mode != "memory" and editor.unsaved()):
            self.reach_mode(mode)
            return
        self._ask_unsaved(editor, "leaving the editor", ("Save", "Discard", "Stay"), lambda: self.reach_mode(mode))

    def reach_mode(self, mode: str) -> None:
        """Show ``mode``'s own screen: switch to it, then close whatever was opened on top of it."""
        self.switch_mode(mode)
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def _ask_unsaved(
        self, editor: MemoryScreen, when: str, labels: tuple[str, str, str], proceed: Callable[[], object]
    ) -> None:
        """Save, discard or stay: the one question before the editor's unsaved edits would be left behind."""
        from memtui.tui.screens.choice import Choice, ChoiceModal

        save, discard, stay = labels

        def decided(choice: str | None) -> None:
            if choice == "save":
                editor.save_all(after=proceed)
            elif choice == "discard":
                editor.discard_changes()
                proceed()

        self.push_screen(
            ChoiceModal(
                "Unsaved changes",
                f"{', '.join(editor.unsaved())}: your edits are not saved. Save them before {when}?",
                [Choice(save, "save", "primary"), Choice(discard, "discard", "error"), Choice(stay, "cancel")],
            ),
            decided,
        )

    # ---- navigation -----------------------------------------------------------------------------

    def open_rollout(self, thread_id: str, item: int | None = None) -> None:
        """The rollout detail screen, opened at transcript item ``item`` (a citation's ``[item N]``) if given."""
        from memtui.tui.screens.detail import RolloutDetailScreen

        self.push_screen(RolloutDetailScreen(thread_id, item=item))

    def open_search(self, query: str = "") -> None:
        from memtui.tui.screens.search import SearchScreen

        self.push_screen(SearchScreen(query))

    def open_memory_file(self, rel_path: str, edit: bool = False) -> None:
        """MEMORY.md and memory_summary.md open in the editor; other memory files in a read-only view."""
        from memtui.tui.screens.file_view import FileViewScreen
        from memtui.tui.screens.memory import FILES as MEMORY_FILES

        if rel_path in MEMORY_FILES.values():
            self.switch_mode("memory")
            self.call_after_refresh(self._show_memory_tab, rel_path)
            return
        path = self.memory_path(rel_path)
        if path is None:
            self.notify(f"{rel_path} is outside the memory root.", severity="error", markup=False)
        else:
            self.push_screen(FileViewScreen(path, rel_path))

    def _show_memory_tab(self, name: str) -> None:
        from memtui.tui.screens.memory import MemoryScreen

        if isinstance(self.screen, MemoryScreen):
            self.screen.show_file(name)

    def memory_path(self, rel_path: str) -> Path | None:
        root = self.ctx.paths.memory_root.resolve()
        path = (root / rel_path).resolve()
        return path if path == root or root in path.parents else None

    def open_cited(self, rel_path: str, line_start: int, line_end: int, note: str = "") -> None:
        from memtui.tui.screens.file_view import FileViewScreen

        path = self.memory_path(rel_path)
        if path is None:
            self.notify(f"{rel_path} is outside the memory root.", severity="error", markup=False)
            return
        if not path.exists():
            self.notify(f"{rel_path} does not exist in the memory root.", severity="error", markup=False)
            return
        self.push_screen(FileViewScreen(path, rel_path, line_start, line_end, note))

    def open_external(self, path: Path, *, pager: bool = False, line: int | None = None) -> bool:
        """Open a file in ``$EDITOR`` (or ``$PAGER``) with the UI suspended; the screens reload afterwards."""
        from memtui.tui.external import command_for, run_suspended

        cmd = command_for(path, pager=pager, line=line)
        if cmd is None:
            self.notify("Set $EDITOR (or $VISUAL) to open files from memtui.", severity="warning", markup=False)
            return False
        error = run_suspended(self, cmd)
        if error:
            self.report_error(f"{cmd[0]}", error)
            return False
        self.data_changed("external")
        return True

    def copy_text(self, text: str, what: str) -> None:
        """Copy to the system clipboard through the terminal (OSC 52), and say what was copied."""
        self.copy_to_clipboard(text)
        self.notify(f"Copied {what}: {text}", markup=False, timeout=4)

    def action_help(self) -> None:
        from memtui.tui.screens.help import HelpScreen, help_rows

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(help_rows(self), self.ctx.paths.home))

    def action_task_log(self) -> None:
        from memtui.tui.screens.task_log import TaskLogScreen

        if not isinstance(self.screen, TaskLogScreen):
            self.push_screen(TaskLogScreen())


def make_app(
    home: Path | None = None,
    *,
    ctx: Context | None = None,
    ingest_on_start: bool = False,
    cursor_blink: bool = True,
    toasts_expire: bool = True,
    status_refresh: bool = True,
    keymap: dict[str, str] | None = None,
) -> MemtuiApp:
    """The app factory shared by ``launch``, the tests, the screenshot script and the benchmark."""
    return MemtuiApp(
        ctx or open_context(home=home),
        ingest_on_start=ingest_on_start,
        cursor_blink=cursor_blink,
        toasts_expire=toasts_expire,
        status_refresh=status_refresh,
        keymap=keymap,
    )
