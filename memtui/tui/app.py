# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""MemtuiApp: six screens (modes) over the domain, long work in thread workers, one status signal.

Workers never touch widgets: they post messages or use ``call_from_thread``. Each worker opens its own
Context (and so its own sqlite connection: sqlite objects are thread-bound).
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.signal import Signal
from textual.worker import Worker, WorkerState

from memtui.context import Context, open_context
from memtui.state.status import collect_status
from memtui.tui import ops
from memtui.tui.commands import MemtuiCommands
from memtui.tui.messages import TaskFailed, TaskFinished, TaskProgress
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.choice import Choice, ChoiceModal
from memtui.tui.screens.citations import CitationsScreen
from memtui.tui.screens.detail import RolloutDetailScreen
from memtui.tui.screens.file_view import FileViewScreen
from memtui.tui.screens.help import HelpScreen
from memtui.tui.screens.history import HistoryScreen
from memtui.tui.screens.jobs import JobsScreen
from memtui.tui.screens.memory import FILES as MEMORY_FILES
from memtui.tui.screens.memory import MemoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.rollouts import RolloutsScreen

STATUS_REFRESH_SECONDS = 15.0
MEMORY_ROOT_POLL_SECONDS = 2.0  # how soon a change made outside memtui (a shell, an editor) shows in the UI


class MemtuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "memtui"
    COMMANDS = App.COMMANDS | {MemtuiCommands}
    MODES = {
        "rollouts": RolloutsScreen,
        "jobs": JobsScreen,
        "review": ReviewScreen,
        "memory": MemoryScreen,
        "citations": CitationsScreen,
        "history": HistoryScreen,
    }
    DEFAULT_MODE = "rollouts"
    SCREEN_LABELS = {
        "rollouts": "Rollouts",
        "jobs": "Jobs",
        "review": "Review",
        "memory": "Memory",
        "citations": "Citations",
        "history": "History",
    }
    BINDINGS = [
        Binding("1", "switch_mode('rollouts')", "Rollouts", show=False, id="memtui.rollouts"),
        Binding("2", "switch_mode('jobs')", "Jobs", show=False, id="memtui.jobs"),
        Binding("3", "switch_mode('review')", "Review", show=False, id="memtui.review"),
        Binding("4", "switch_mode('memory')", "Memory", show=False, id="memtui.memory"),
        Binding("5", "switch_mode('citations')", "Cite", show=False, id="memtui.citations"),
        Binding("6", "switch_mode('history')", "History", show=False, id="memtui.history"),
        Binding("f1,question_mark", "help", "Help", id="memtui.help"),
        Binding("f5", "ingest", "Ingest", show=False, id="memtui.ingest"),
        Binding("ctrl+g", "cancel_work", "Cancel work", id="memtui.cancel"),
    ]

    def __init__(
        self,
        ctx: Context | None = None,
        *,
        home: Path | None = None,
        ingest_on_start: bool = True,
        status_refresh: bool = True,
        cursor_blink: bool = True,
        keymap: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.ctx = ctx or open_context(home=home)
        self.ingest_on_start = ingest_on_start
        self.status_refresh = status_refresh
        self.cursor_blink = cursor_blink
        self.keymap = keymap or {}
        self.status: dict[str, Any] = {}
        self.status_signal: Signal[dict[str, Any]] = Signal(self, "status")
        self.tasks_signal: Signal[dict[str, dict[str, Any]]] = Signal(self, "tasks")
        self.data_signal: Signal[str] = Signal(self, "data")
        self.task_states: dict[str, dict[str, Any]] = {}
        self._cancels: dict[str, threading.Event] = {}
        self.task_errors: list[str] = []

    # ---- lifecycle ------------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.keymap:
            self.set_keymap(self.keymap)
        self.refresh_status()
        if self.status_refresh:
            self.set_interval(STATUS_REFRESH_SECONDS, self.refresh_status)
            self.set_interval(MEMORY_ROOT_POLL_SECONDS, self.watch_memory_root)
        if self.ingest_on_start:
            self.run_ingest(quiet=True)

    def task_context(self) -> Context:
        """A Context for a worker thread: same settings and paths, its own connection."""
        return Context(loaded=self.ctx.loaded, paths=self.ctx.paths)

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def refresh_status(self) -> None:
        conn = self.ctx.new_conn()
        try:
            status = collect_status(conn)
        finally:
            conn.close()
        self.call_from_thread(self._publish_status, status)

    def _publish_status(self, status: dict[str, Any]) -> None:
        self.status = status
        self.status_signal.publish(status)

    def data_changed(self, source: str) -> None:
        """Tell every screen that state changed (the current one reloads now, the others when shown)."""
        self.refresh_status()
        for stack in self._screen_stacks.values():
            for screen in stack:
                if isinstance(screen, MemtuiScreen):
                    screen.mark_stale(source)

    # ---- long work --------------------------------------------------------------------------------

    def start_task(self, name: str, title: str, fn: ops.TaskFn, *, quiet: bool = False) -> bool:
        """Run ``fn(ctx, progress, cancel)`` in a thread worker with a progress line and a cancel event."""
        if name in self.task_states:
            self.notify(f"{title} is already running.", severity="warning", markup=False)
            return False
        self._cancels[name] = threading.Event()
        self.task_states[name] = {"title": title, "done": 0, "total": None, "detail": "starting", "quiet": quiet}
        self.tasks_signal.publish(self.task_states)
        self.refresh_bindings()
        self._run_task(name, title, fn, self._cancels[name])
        return True

    @work(thread=True, exit_on_error=False, group="tasks")
    def _run_task(self, name: str, title: str, fn: ops.TaskFn, cancel: threading.Event) -> None:
        ctx = self.task_context()
        last = [0.0]

        def progress(*args: Any) -> None:
            if len(args) == 1:
                done, total, detail = 0.0, None, str(args[0])
            else:
                done, total = float(args[0] or 0), (float(args[1]) if args[1] else None)
                detail = str(args[2]) if len(args) > 2 else ""
            now = time.monotonic()
            if now - last[0] >= 0.05:
                last[0] = now
                self.post_message(TaskProgress(name, done, total, detail))

        try:
            result = fn(ctx, progress, cancel)
        except Exception as exc:  # (any failure is shown; the app stays usable)
            detail = f"{type(exc).__name__}: {exc}"
            self.log.error(traceback.format_exc())
            self.post_message(TaskFailed(name, title, detail))
        else:
            summary = "cancelled" if cancel.is_set() else ops.describe(result)
            self.post_message(TaskFinished(name, title, result, summary))
        finally:
            ctx.close()

    @on(TaskProgress)
    def _task_progress(self, message: TaskProgress) -> None:
        state = self.task_states.get(message.name)
        if state is not None:
            state.update(done=message.done, total=message.total, detail=message.detail)
            self.tasks_signal.publish(self.task_states)

    def _end_task(self, name: str) -> dict[str, Any]:
        state = self.task_states.pop(name, {})
        self._cancels.pop(name, None)
        self.tasks_signal.publish(self.task_states)
        self.refresh_bindings()
        return state

    @on(TaskFinished)
    def _task_finished(self, message: TaskFinished) -> None:
        state = self._end_task(message.name)
        quiet_ok = state.get("quiet") and not any(f" {w}" in message.summary for w in ("new", "updated"))
        if not quiet_ok:
            self.notify(message.summary, title=f"{message.title} finished", markup=False, timeout=6)
        self.data_changed(message.name)

    @on(TaskFailed)
    def _task_failed(self, message: TaskFailed) -> None:
        self._end_task(message.name)
        self.task_errors.append(message.error)
        self.notify(message.error, title=f"{message.title} failed", severity="error", markup=False, timeout=15)
        self.data_changed(message.name)

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        """Failures of page loads and other small workers: show them, keep going."""
        if event.state == WorkerState.ERROR and event.worker.group != "tasks":
            error = event.worker.error
            self.task_errors.append(str(error))
            self.notify(f"{type(error).__name__}: {error}", title="Error", severity="error", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_work":
            return bool(self.task_states)
        return True

    def action_cancel_work(self) -> None:
        if not self._cancels:
            self.notify("Nothing is running.", markup=False)
            return
        for event in self._cancels.values():
            event.set()
        self.notify("Cancelling: work stops at its next safe point.", markup=False)

    # ---- the domain's entry points ---------------------------------------------------------------------

    def action_ingest(self) -> None:
        self.run_ingest()

    def run_ingest(self, quiet: bool = False) -> None:
        self.start_task("ingest", "Ingest", ops.ingest_task, quiet=quiet)

    def run_phase1(self, thread_id: str | None = None) -> None:
        title = f"Extract {thread_id[:12]}" if thread_id else "Phase 1"
        name = f"phase1:{thread_id}" if thread_id else "phase1"
        self.start_task(name, title, ops.phase1_task(thread_id=thread_id))

    def run_phase2(self) -> None:
        self.start_task("phase2", "Phase 2", ops.phase2_task())

    def approve_pending(self) -> None:
        self.switch_mode("review")
        self.call_after_refresh(lambda: self._review_action("approve"))

    def reject_pending(self) -> None:
        self.switch_mode("review")
        self.call_after_refresh(lambda: self._review_action("reject"))

    def _review_action(self, action: str) -> None:
        screen = self.screen
        if isinstance(screen, ReviewScreen):
            if not screen.awaiting:
                self.notify("No consolidation is awaiting review.", severity="warning", markup=False)
            elif action == "approve":
                screen.action_approve()
            else:
                screen.action_reject()

    def _memory_root_signature(self) -> tuple[object, ...]:
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
            for stack in self._screen_stacks.values():
                for screen in stack:
                    if isinstance(screen, MemoryScreen | ReviewScreen):
                        screen.mark_stale("disk")

    # ---- leaving with unsaved edits (issue 10: a person's edit is never lost) ---------------------------------

    def _editor(self) -> MemoryScreen | None:
        for stack in self._screen_stacks.values():
            for screen in stack:
                if isinstance(screen, MemoryScreen):
                    return screen
        return None

    async def action_quit(self) -> None:
        """Quit, but ask first when the memory editor holds unsaved changes."""
        editor = self._editor()
        names = editor.unsaved() if editor is not None else []
        if editor is None or not names:
            self.exit()
            return

        def decided(choice: str | None) -> None:
            if choice == "save":
                editor.save_all(after=self.exit)
            elif choice == "discard":
                self.exit()

        self.push_screen(
            ChoiceModal(
                "Unsaved changes",
                f"{', '.join(names)}: your edits are not saved. Save them before quitting?",
                [
                    Choice("Save and quit", "save", "primary"),
                    Choice("Quit without saving", "discard", "error"),
                    Choice("Cancel", "cancel"),
                ],
            ),
            decided,
        )

    async def action_switch_mode(self, mode: str) -> None:
        """Switch screens; leaving the memory editor with unsaved changes asks first."""
        screen = self.screen
        names = screen.unsaved() if isinstance(screen, MemoryScreen) and mode != "memory" else []
        if not names:
            self.switch_mode(mode)
            return
        assert isinstance(screen, MemoryScreen)

        def decided(choice: str | None) -> None:
            if choice == "save":
                screen.save_all(after=lambda: self.switch_mode(mode))
            elif choice == "discard":
                screen.discard_changes()
                self.switch_mode(mode)

        self.push_screen(
            ChoiceModal(
                "Unsaved changes",
                f"{', '.join(names)}: your edits are not saved. Save them before leaving the editor?",
                [
                    Choice("Save", "save", "primary"),
                    Choice("Discard", "discard", "error"),
                    Choice("Stay", "cancel"),
                ],
            ),
            decided,
        )

    # ---- navigation -----------------------------------------------------------------------------

    def open_rollout(self, thread_id: str, item: int | None = None) -> None:
        """The rollout detail screen, opened at transcript item ``item`` (a citation's ``[item N]``) if given."""
        self.push_screen(RolloutDetailScreen(thread_id, item=item))

    def open_search(self, query: str = "") -> None:
        from memtui.tui.screens.search import SearchScreen

        self.push_screen(SearchScreen(query))

    def open_memory_file(self, rel_path: str, edit: bool = False) -> None:
        """MEMORY.md and memory_summary.md open in the editor; other memory files in a read-only view."""
        if rel_path in MEMORY_FILES.values():
            self.switch_mode("memory")
            self.call_after_refresh(self._show_memory_tab, rel_path)
            return
        path = self._memory_path(rel_path)
        if path is None:
            self.notify(f"{rel_path} is outside the memory root.", severity="error", markup=False)
        else:
            self.push_screen(FileViewScreen(path, rel_path))

    def _show_memory_tab(self, name: str) -> None:
        if isinstance(self.screen, MemoryScreen):
            self.screen.show_file(name)

    def _memory_path(self, rel_path: str) -> Path | None:
        root = self.ctx.paths.memory_root.resolve()
        path = (root / rel_path).resolve()
        return path if path == root or root in path.parents else None

    def open_cited(self, rel_path: str, line_start: int, line_end: int, note: str = "") -> None:
        path = self._memory_path(rel_path)
        if path is None:
            self.notify(f"{rel_path} is outside the memory root.", severity="error", markup=False)
            return
        if not path.exists():
            self.notify(f"{rel_path} does not exist in the memory root.", severity="error", markup=False)
            return
        self.push_screen(FileViewScreen(path, rel_path, line_start, line_end, note))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        rows = []
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if binding.action in ("help_quit",) or binding.system or not (binding.id or binding.show):
                continue
            rows.append((self.get_key_display(binding), binding.description or binding.action, binding.id or ""))
        self.push_screen(HelpScreen(rows, str(self.ctx.paths.home)))


def make_app(
    home: Path | None = None,
    *,
    ctx: Context | None = None,
    ingest_on_start: bool = False,
    cursor_blink: bool = True,
    status_refresh: bool = True,
    keymap: dict[str, str] | None = None,
) -> MemtuiApp:
    """The app factory shared by ``launch``, the tests, the screenshot script and the benchmark."""
    return MemtuiApp(
        ctx or open_context(home=home),
        ingest_on_start=ingest_on_start,
        cursor_blink=cursor_blink,
        status_refresh=status_refresh,
        keymap=keymap,
    )
