# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Memory editor: MEMORY.md and memory_summary.md with save, warnings, the diff to baseline, and commit.

A saved edit is a pending change in the memory root: commit it as a manual change, or leave it for the
next consolidation, whose agent treats it as authoritative.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Static, TabbedContent, TabPane, TextArea
from textual.worker import get_current_worker

from memtui.core.hidden import reveal
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.choice import Choice, ChoiceModal, DiffModal
from memtui.tui.screens.dialogs import TextPromptModal
from memtui.tui.tasks import commit_task
from memtui.tui.widgets.diff_view import DiffView
from memtui.tui.widgets.lint_line import LintLine

FILES = {"memory-md": "MEMORY.md", "summary-md": "memory_summary.md"}


def summary_warnings(text: str) -> list[str]:
    """What the editor itself can see in the unsaved text (the loader's limits come from export)."""
    if text.strip() and not text.lstrip().startswith("v1"):
        return ["memory_summary.md does not start with `v1`: agents will not load it."]
    return []


class MemoryScreen(MemtuiScreen):
    TITLE_TEXT = "Memory"
    MODE = "memory"
    AUTO_FOCUS = "#memory-tabs Tabs"  # not the editor: digits switch screens until you choose to edit
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="memory.save"),
        Binding("ctrl+o", "commit", "Commit as manual change", id="memory.commit"),
        Binding("ctrl+t", "toggle_diff", "Diff", id="memory.toggle_diff"),
        Binding("ctrl+r", "revert", "Revert", id="memory.revert"),
        Binding("escape", "leave_editor", "View mode", id="memory.leave"),
        Binding("enter,e", "edit", "Edit", id="memory.edit"),
    ]

    def __init__(self) -> None:
        super().__init__(id="memory-screen")
        self.saved: dict[str, str] = {}  # each file's text as on disk, endings and separators byte for byte
        self.hashes: dict[str, str | None] = {}  # sha256 of what each pane loaded: a save checks it is still there
        self.disk_warnings: list[str] = []

    @property
    def root(self) -> Path:
        return self.app.ctx.paths.memory_root

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="memory-body"):
            with TabbedContent(id="memory-tabs"):
                for pane_id, name in FILES.items():
                    with TabPane(name, id=f"pane-{pane_id}"):
                        yield TextArea(
                            "",
                            id=pane_id,
                            language="markdown",
                            show_line_numbers=True,
                            soft_wrap=True,
                            tab_behavior="indent",
                        )
            with Vertical(id="memory-side"):
                yield Label("Checks", classes="section-title")
                yield Static("", id="memory-warnings", markup=False)
                yield LintLine(id="memory-lint")  # cross-project findings (memtui lint)
                yield Label("Workspace vs baseline", classes="section-title")
                yield DiffView(id="edit-diff")

    def on_mount(self) -> None:
        self.app.editor_screen = self  # so quitting can ask about unsaved edits from any screen
        for area in self.query(TextArea):
            area.cursor_blink = self.app.cursor_blink
        self.load_files()

    def load_files(self) -> None:
        for pane_id in FILES:
            self._load_pane(pane_id)
        self._refresh_checks()

    def _load_pane(self, pane_id: str) -> None:
        from memtui.adapters.memroot.edit import load_file

        loaded = load_file(self.root, FILES[pane_id])
        self.saved[pane_id] = reveal(loaded.text)  # hidden characters shown as escapes; a save writes them visible
        self.hashes[pane_id] = loaded.sha256
        self.query_one(f"#{pane_id}", TextArea).load_text(self.saved[pane_id])
        self._mark(pane_id)

    def reload(self, source: str = "") -> None:
        sources = ("approve", "reject", "phase2", "commit", "resume", "mount")
        if source in sources and not any(self.dirty(p) for p in FILES):
            self.load_files()
            return
        self._refresh_checks()

    def dirty(self, pane_id: str) -> bool:
        """Lines compared, not text: the editor shows every separator (U+2028, form feed, CRLF...) as one newline."""
        from memtui.adapters.memroot.lines import split_lines

        lines = self.query_one(f"#{pane_id}", TextArea).document.lines
        return list(lines) != split_lines(self.saved.get(pane_id, ""))[0]

    def file_text(self, pane_id: str) -> str:
        """What saving writes: the editor's lines, each untouched one with its original ending."""
        from memtui.adapters.memroot.lines import rebuild

        return rebuild(self.saved.get(pane_id, ""), list(self.query_one(f"#{pane_id}", TextArea).document.lines))

    def unsaved(self) -> list[str]:
        """Names of the files with unsaved changes in the editor."""
        return [name for pane_id, name in FILES.items() if self.dirty(pane_id)]

    def discard_changes(self) -> None:
        for pane_id in FILES:
            if self.dirty(pane_id):
                self.query_one(f"#{pane_id}", TextArea).load_text(self.saved.get(pane_id, ""))
                self._mark(pane_id)
        self._show_warnings()

    def _mark(self, pane_id: str) -> None:
        tabs = self.query_one(TabbedContent)
        label = FILES[pane_id] + (" ●" if self.dirty(pane_id) else "")
        tabs.get_tab(f"pane-{pane_id}").label = Content(label)
        self.refresh_bindings()  # save and revert show while there is something to save

    def show_file(self, name: str) -> None:
        for pane_id, fname in FILES.items():
            if fname == name:
                self.query_one(TabbedContent).active = f"pane-{pane_id}"
                self.action_leave_editor()  # the tab bar: enter edits, digits still switch screens

    @property
    def current_pane(self) -> str:
        return (self.query_one(TabbedContent).active or "pane-memory-md").removeprefix("pane-")

    @on(TextArea.Changed)
    def _changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id in FILES:
            self._mark(event.text_area.id)
            if event.text_area.id == "summary-md":
                self._show_warnings()

    def _show_warnings(self) -> None:
        live = summary_warnings(self.query_one("#summary-md", TextArea).text)
        warnings = live + [w for w in self.disk_warnings if w not in live]
        box = self.query_one("#memory-warnings", Static)
        missing = [name for name in FILES.values() if not (self.root / name).exists()]
        if warnings:
            text = "\n".join(f"⚠ {w}" for w in warnings)
        elif missing:
            text = (
                f"{' and '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist yet: Phase 2 creates "
                f"{'it' if len(missing) == 1 else 'them'} from your memories, or type here and save (ctrl+s)."
            )
        else:
            text = "✓ agents can load both files"
        box.update(Content(text))
        box.set_class(bool(warnings) or bool(missing), "-warning")

    def _refresh_checks(self) -> None:
        self._show_warnings()
        self._compute_checks()

    @work(thread=True, exclusive=True, group="memory-checks", exit_on_error=False)
    def _compute_checks(self) -> None:
        """Loader limits, files changed on disk since loaded, and the read-only diff against the baseline."""
        from memtui.adapters.memroot.baseline import BaselineError, is_usable
        from memtui.adapters.memroot.edit import digest
        from memtui.adapters.memroot.view import worktree_view
        from memtui.services.export import size_warnings

        worker = get_current_worker()
        data: dict[str, bytes | None] = {}
        on_disk: dict[str, str | None] = {}
        for pane_id, name in FILES.items():
            try:
                data[name] = (self.root / name).read_bytes()
            except OSError:
                data[name] = None
            on_disk[pane_id] = digest(data[name])
        # the files as the person edits them (agents are warned about the approved ones at export)
        warnings = size_warnings(data.get("memory_summary.md"), data.get("MEMORY.md"))
        try:
            if not is_usable(self.root):
                diff, empty = "", "No baseline yet: the first Phase 2 run or commit creates it."
            else:
                diff = worktree_view(self.root).diff
                empty = "No pending change: the memory root matches the baseline."
        except (BaselineError, OSError) as exc:  # (a broken .git, git missing: show it, don't crash)
            diff, empty = "", f"No diff: {exc}"
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_checks, warnings, diff, empty, on_disk)

    def _show_checks(self, warnings: list[str], diff: str, empty: str, on_disk: dict[str, str | None]) -> None:
        for pane_id, name in FILES.items():
            if on_disk.get(pane_id) == self.hashes.get(pane_id):
                continue
            if self.dirty(pane_id):
                warnings.append(f"{name} changed on disk since you opened it: saving will ask what to do.")
            else:
                self._load_pane(pane_id)  # nothing typed here: show what is on disk now
        self.disk_warnings = warnings
        self._show_warnings()
        self.query_one("#edit-diff", DiffView).show_diff(diff or "", empty=empty)

    # ---- modes: view (the tab bar has focus: digits switch screens, enter edits) and edit (the text has focus) ----

    @property
    def editing(self) -> bool:
        focused = self.focused
        return isinstance(focused, TextArea) and focused.id in FILES

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer shows the keys of the current mode."""
        if not self.is_mounted:
            return True
        if action == "edit":
            return not self.editing
        if action == "leave_editor":
            return self.editing
        if action in ("save", "revert"):
            return self.editing or bool(self.unsaved())
        return super().check_action(action, parameters)

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def action_save(self) -> None:
        if self.save_all():
            self.action_leave_editor()  # saved: back to view mode, where digits switch screens again

    def save_all(self, after: Callable[[], object] | None = None) -> bool:
        """Save every edited file, each only over what it loaded; True when all were saved (then ``after()``).

        A file changed on disk opens a choice (reload, overwrite, show the difference) and ``after`` waits for it;
        a busy memory root (Phase 2 running) refuses with a message and keeps the text in the editor.
        """
        from memtui.adapters.memroot.edit import SaveConflict, save_file
        from memtui.adapters.memroot.lock import MemoryRootBusy

        saved: list[str] = []
        for pane_id, name in FILES.items():
            if not self.dirty(pane_id):
                continue
            text = self.file_text(pane_id)
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                self.hashes[pane_id] = save_file(self.root, name, text, self.hashes.get(pane_id))
            except SaveConflict as conflict:
                self._saved_note(saved)
                self._resolve_conflict(pane_id, conflict, after)
                return False
            except MemoryRootBusy as exc:
                self._saved_note(saved)
                self.notify_literal(
                    f"{name} not saved: {exc} Your text stays in the editor.", severity="error", timeout=10
                )
                return False
            self.saved[pane_id] = text
            self._mark(pane_id)
            saved.append(name)
        if not self._saved_note(saved):
            self.notify_literal("Nothing to save.")
        if after is not None:
            after()
        return True

    def _saved_note(self, saved: list[str]) -> bool:
        if saved:
            self.notify_literal(f"Saved {', '.join(saved)} (pending change until committed or consolidated)")
            self.app.data_changed("memory-save")
            self._refresh_checks()
        return bool(saved)

    def _resolve_conflict(self, pane_id: str, conflict: object, after: Callable[[], object] | None) -> None:
        from memtui.adapters.memroot.edit import SaveConflict, difference

        assert isinstance(conflict, SaveConflict)
        name = FILES[pane_id]

        def decided(choice: str | None) -> None:
            if choice == "reload":
                self._load_pane(pane_id)
                self._refresh_checks()
                self.notify_literal(f"Reloaded {name} from disk; your unsaved text was dropped.")
            elif choice == "overwrite":
                self.hashes[pane_id] = conflict.disk.sha256  # the person saw it changed and chose to replace it
                self.save_all(after)
            elif choice == "diff":
                text = self.query_one(f"#{pane_id}", TextArea).text
                self.app.push_screen(
                    DiffModal(
                        f"{name}: on disk (-) and in your editor (+)", difference(name, conflict.disk.text, text)
                    ),
                    lambda _closed: self._resolve_conflict(pane_id, conflict, after),
                )

        self.app.push_screen(
            ChoiceModal(
                f"{name} changed on disk",
                f"{conflict} Somebody (a shell, another program, or memtui) changed it after you opened it. "
                "Reload drops your unsaved text; Overwrite replaces what is on disk with your text.",
                [
                    Choice("Show difference", "diff", "primary"),
                    Choice("Reload", "reload"),
                    Choice("Overwrite", "overwrite", "error"),
                    Choice("Cancel", "cancel"),
                ],
            ),
            decided,
        )

    def action_revert(self) -> None:
        """Back to the saved file; unsaved text is only dropped once the person says so (there is no undo)."""
        pane_id = self.current_pane

        def revert(choice: str | None = "discard") -> None:
            if choice != "discard":
                return
            self.query_one(f"#{pane_id}", TextArea).load_text(self.saved.get(pane_id, ""))
            self._mark(pane_id)
            self._show_warnings()

        if not self.dirty(pane_id):
            revert()
            return
        self.app.push_screen(
            ChoiceModal(
                f"Revert {FILES[pane_id]}?",
                f"{FILES[pane_id]} has unsaved changes. Reverting drops them and shows the saved file again; "
                "this cannot be undone.",
                [Choice("Keep editing", "cancel", "primary"), Choice("Discard my changes", "discard", "error")],
            ),
            revert,
        )

    def action_commit(self) -> None:
        self.action_leave_editor()  # the dialog returns focus here: view mode after the commit
        self.save_all(after=self._ask_commit)

    def _ask_commit(self) -> None:
        """Show what the commit will take (read-only view) and commit exactly that tree if confirmed."""
        from memtui.adapters.memroot.baseline import BaselineError
        from memtui.adapters.memroot.view import worktree_view

        try:
            view = worktree_view(self.root, with_diff=False)
        except (BaselineError, OSError) as exc:
            self.notify_literal(f"Cannot commit: {exc}", severity="error")
            return
        if not view.stat:
            self.notify_literal("Nothing to commit: the memory root matches the baseline.")
            return
        files = ", ".join(f"{s} {p}" for s, p in view.stat[:8]) + (" ..." if len(view.stat) > 8 else "")
        tree = view.tree

        def decided(message: str | None) -> None:
            if message:
                self.app.start_task("commit", "Commit manual edit", commit_task(message, tree))

        self.app.push_screen(
            TextPromptModal(
                "Commit manual edit",
                f"Commit the memory root as it is on disk into the baseline, as your own change: {files}. "
                "New inputs (raw_memories.md, rollout_summaries/) stay pending for Phase 2.",
                "commit message",
                "Commit",
                value="Manual edit of MEMORY.md",
            ),
            decided,
        )

    def action_toggle_diff(self) -> None:
        side = self.query_one("#memory-side")
        side.display = not side.display

    def action_edit(self) -> None:
        self.query_one(f"#{self.current_pane}", TextArea).focus()

    def action_leave_editor(self) -> None:
        self.query_one(TabbedContent).query_one("Tabs").focus()
