"""One line saying whether memory would leak across projects (``memtui lint``), for the review and the editor."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import work
from textual.content import Content
from textual.widgets import Static

from memtui.services.lint import LintFinding, lint_memory, lint_summary_line

if TYPE_CHECKING:
    from memtui.state.status import Status
    from memtui.tui.app import MemtuiApp


class LintLine(Static):
    """Re-checked whenever the app's status is refreshed (after every task, and on its timer)."""

    DEFAULT_CSS = """
    LintLine { height: 1; padding: 0 1; color: $text-muted; }
    LintLine.-findings { color: $text-warning; }
    """

    def on_mount(self) -> None:
        app = cast("MemtuiApp", self.app)
        app.status_signal.subscribe(self, self._on_status)
        self.check()

    def _on_status(self, _status: Status) -> None:
        self.check()

    @work(thread=True, exclusive=True, group="lint", exit_on_error=False)
    def check(self) -> None:
        app = cast("MemtuiApp", self.app)
        conn = app.ctx.new_conn()
        try:
            findings = lint_memory(app.ctx.paths.memory_root, conn)
        finally:
            conn.close()
        app.call_from_thread(self._show, findings)

    def _show(self, findings: list[LintFinding]) -> None:
        # the rule is already named in words by the summary; the line shows where and why, not the CLI's rule code
        first = f"  first: {findings[0].file}:{findings[0].line}: {findings[0].message}" if findings else ""
        self.update(Content(lint_summary_line(findings) + first))
        self.set_class(bool(findings), "-findings")
