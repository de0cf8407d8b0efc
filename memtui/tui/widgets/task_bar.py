"""Running work with its progress: one line per task between the screen's body and its footer.

Each line has a spinner, the task's title, a bar (an indeterminate one while the total is unknown), the step
and counts (``12/40``) and what is happening now. Hidden when nothing runs; never shares the footer's row."""

from __future__ import annotations

import re

from textual import getters
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, ProgressBar

from memtui.core import clock
from memtui.tui.app import MemtuiApp, TaskState

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def counts_text(state: TaskState) -> str:
    """``12/40`` and the elapsed time, so even an indeterminate task shows it is alive."""
    elapsed = max(0.0, clock.now() - state.started)
    took = f"{elapsed:.0f}s" if elapsed < 90 else f"{elapsed / 60:.0f}m"
    if state.total:
        return f"{state.done:,.0f}/{state.total:,.0f} · {took}"
    return took


class TaskLine(Horizontal):
    DEFAULT_CSS = """
    TaskLine { height: 1; }
    TaskLine > Label.spinner { width: 2; color: $accent; padding: 0 0 0 1; }
    TaskLine > Label.title { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    TaskLine > ProgressBar { width: 28; }
    TaskLine > Label.counts { width: auto; padding: 0 1; }
    TaskLine > Label.detail { width: 1fr; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    Screen.-narrow TaskLine > ProgressBar { width: 14; }
    """

    def __init__(self, state: TaskState) -> None:
        super().__init__(id="task-" + re.sub(r"[^A-Za-z0-9_-]", "-", state.name))
        self.task_name = state.name
        self.state = state
        self.frame = 0

    def compose(self) -> ComposeResult:
        yield Label(SPINNER[0], classes="spinner")
        yield Label(Content(self.state.title), classes="title")
        yield ProgressBar(total=None, show_eta=False, show_percentage=False)
        yield Label("", classes="counts", markup=False)
        yield Label("", classes="detail", markup=False)

    def on_mount(self) -> None:
        self.apply()
        self.set_interval(0.1, self.spin)

    def spin(self) -> None:
        self.frame = (self.frame + 1) % len(SPINNER)
        self.query_one(".spinner", Label).update(SPINNER[self.frame])
        self.query_one(".counts", Label).update(counts_text(self.state))

    def apply(self) -> None:
        if not self.is_mounted:
            return  # not composed yet: on_mount applies the latest state
        bar = self.query_one(ProgressBar)
        bar.update(total=self.state.total, progress=self.state.done)
        self.query_one(".counts", Label).update(counts_text(self.state))
        self.query_one(".detail", Label).update(Content(self.state.detail))


class TaskBar(Vertical):
    DEFAULT_CSS = """
    TaskBar { height: auto; max-height: 4; background: $boost; display: none; }
    TaskBar.-busy { display: block; }
    """

    app = getters.app(MemtuiApp)

    def on_mount(self) -> None:
        self.app.tasks_signal.subscribe(self, self._sync)
        self._sync(self.app.task_states)

    def _sync(self, states: dict[str, TaskState]) -> None:
        lines = {line.task_name: line for line in self.query(TaskLine)}
        for name, line in lines.items():
            if name not in states:
                line.remove()
        for name, state in states.items():
            shown = lines.get(name)
            if shown is None:
                self.mount(TaskLine(state))
            else:
                shown.state = state
                shown.apply()
        self.set_class(bool(states), "-busy")
