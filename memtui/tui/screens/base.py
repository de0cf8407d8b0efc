"""The frame every memtui screen shares: status bar, body, task bar, footer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from memtui.tui.widgets.status_bar import StatusBar
from memtui.tui.widgets.task_bar import TaskBar

if TYPE_CHECKING:
    from memtui.tui.app import MemtuiApp


class MemtuiScreen(Screen):
    """Subclasses implement ``compose_body`` and ``reload`` (called when the state changes)."""

    TITLE_TEXT = ""
    MODE = ""  # the screen tab highlighted in the status bar

    @property
    def mapp(self) -> MemtuiApp:
        return cast("MemtuiApp", self.app)

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        yield TaskBar()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def reload(self, source: str = "") -> None:
        """Reload what the screen shows; cheap, and runs queries in workers where they can be slow."""

    def on_screen_resume(self) -> None:
        if getattr(self, "_stale", False):
            self._stale = False
            self.reload("resume")

    def mark_stale(self, source: str) -> None:
        if self.is_current:
            self.reload(source)
        else:
            self._stale = True

    def notify_literal(self, message: str, **kwargs: Any) -> None:
        self.app.notify(message, markup=False, **kwargs)
