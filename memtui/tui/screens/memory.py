# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Memory editor: MEMORY.md and memory_summary.md with save, warnings, the diff to baseline, and commit.

A saved edit is a pending change in the memory root: commit it as a manual change, or leave it for the
next consolidation, whose agent treats it as authoritative.
"""

from __future__ import annotations

from pathlib import Path

from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Static, TabbedContent, TabPane, TextArea
from textual.worker import get_current_worker

from memtui.tui import tasks
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.screens.dialogs import TextPromptModal
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
        Binding("escape", "leave_editor", "Leave editor", show=False, id="memory.leave"),
        Binding("enter,e", "edit", "Edit", id="memory.edit"),
    ]

    tabs = getters.query_one("#memory-tabs", TabbedContent)
    warnings_box = getters.query_one("#memory-warnings", Static)
    edit_diff = getters.query_one("#edit-diff", DiffView)
    summary_area = getters.query_one("#summary-md", TextArea)

    def __init__(self) -> None:
        super().__init__(id="memory-screen")
        self.saved: dict[str, str] = {}
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
                yield LintLine(id="memory-lint")  # issue 14: cross-project findings (memtui lint)
                yield Label("Workspace vs baseline", classes="section-title")
                yield DiffView(id="edit-diff")

    def on_mount(self) -> None:
        for area in self.query(TextArea):
            area.cursor_blink = self.app.cursor_blink
        self.load_files()

    def load_files(self) -> None:
        for pane_id, name in FILES.items():
            path = self.root / name
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            self.saved[pane_id] = text
            self.query_one(f"#{pane_id}", TextArea).load_text(text)
            self._mark(pane_id)
        self._refresh_checks()

    def reload(self, source: str = "") -> None:
        sources = ("approve", "reject", "phase2", "commit", "resume", "mount")
        if source in sources and not any(self.dirty(p) for p in FILES):
            self.load_files()
            return
        self._refresh_checks()

    def dirty(self, pane_id: str) -> bool:
        return self.query_one(f"#{pane_id}", TextArea).text != self.saved.get(pane_id, "")

    def _mark(self, pane_id: str) -> None:
        tabs = self.tabs
        label = FILES[pane_id] + (" ●" if self.dirty(pane_id) else "")
        tabs.get_tab(f"pane-{pane_id}").label = Content(label)

    def show_file(self, name: str) -> None:
        for pane_id, fname in FILES.items():
            if fname == name:
                self.tabs.active = f"pane-{pane_id}"
                self.action_leave_editor()  # the tab bar: enter edits, digits still switch screens

    @property
    def current_pane(self) -> str:
        return (self.tabs.active or "pane-memory-md").removeprefix("pane-")

    @on(TextArea.Changed)
    def _changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id in FILES:
            self._mark(event.text_area.id)
            if event.text_area.id == "summary-md":
                self._show_warnings()

    def _show_warnings(self) -> None:
        live = summary_warnings(self.summary_area.text)
        warnings = live + [w for w in self.disk_warnings if w not in live]
        box = self.warnings_box
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
        worker = get_current_worker()
        warnings: list[str] = []
        from memtui.export import loader_warnings
        from memtui.phase2.review import workspace_diff

        warnings = list(loader_warnings(self.root))
        try:
            _stat, diff = workspace_diff(self.app.task_context())
        except Exception as exc:  # (no baseline yet, git missing: show it, don't crash)
            diff = None
            empty = f"No diff: {exc}"
        else:
            empty = "No pending change: the memory root matches the baseline."
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_checks, warnings, diff or "", empty)

    def _show_checks(self, warnings: list[str], diff: str, empty: str) -> None:
        self.disk_warnings = warnings
        self._show_warnings()
        self.edit_diff.show_diff(diff, empty=empty)

    def action_save(self) -> None:
        saved = []
        for pane_id, name in FILES.items():
            if self.dirty(pane_id):
                text = self.query_one(f"#{pane_id}", TextArea).text
                self.root.mkdir(parents=True, exist_ok=True)
                (self.root / name).write_text(text, encoding="utf-8")
                self.saved[pane_id] = text
                self._mark(pane_id)
                saved.append(name)
        if saved:
            self.notify_literal(f"Saved {', '.join(saved)} (pending change until committed or consolidated)")
            self.app.data_changed("memory-save")
        else:
            self.notify_literal("Nothing to save.")
        self._refresh_checks()

    def action_revert(self) -> None:
        pane_id = self.current_pane
        self.query_one(f"#{pane_id}", TextArea).load_text(self.saved.get(pane_id, ""))
        self._mark(pane_id)
        self._show_warnings()

    def action_commit(self) -> None:
        if any(self.dirty(p) for p in FILES):
            self.action_save()

        def decided(message: str | None) -> None:
            if message:
                self.app.start_task("commit", "Commit manual edit", tasks.commit_task(message))

        self.app.push_screen(
            TextPromptModal(
                "Commit manual edit",
                "Commit the memory root as it is on disk into the baseline, as your own change.",
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
        self.tabs.query_one("Tabs").focus()
