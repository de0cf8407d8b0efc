"""Running work with its progress, above the footer; hidden when nothing runs."""

from __future__ import annotations

import re
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, ProgressBar


class TaskLine(Horizontal):
    DEFAULT_CSS = """
    TaskLine { height: 1; }
    TaskLine > Label.title { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    TaskLine > ProgressBar { width: 34; }
    TaskLine > Label.detail { width: 1fr; color: $text-muted; }
    """

    def __init__(self, name: str, title: str) -> None:
        super().__init__(id="task-" + re.sub(r"[^A-Za-z0-9_-]", "-", name))
        self.task_name = name
        self.task_title = title

    def compose(self) -> ComposeResult:
        yield Label(Content(self.task_title), classes="title")
        yield ProgressBar(total=None, show_eta=False)
        yield Label("", classes="detail", markup=False)

    def on_mount(self) -> None:
        self._apply()

    def set_progress(self, done: float, total: float | None, detail: str) -> None:
        self.progress_state = (done, total, detail)
        self._apply()

    def _apply(self) -> None:
        bars = self.query(ProgressBar)
        if not bars:
            return  # not composed yet: on_mount applies the latest state
        done, total, detail = getattr(self, "progress_state", (0.0, None, ""))
        bars.first().update(total=total, progress=done)
        self.query_one(".detail", Label).update(Content(detail))


class TaskBar(Vertical):
    DEFAULT_CSS = """
    TaskBar { height: auto; max-height: 4; dock: bottom; background: $boost; display: none; }
    TaskBar.-busy { display: block; }
    """

    def on_mount(self) -> None:
        app: Any = self.app
        app.tasks_signal.subscribe(self, self._sync)
        self._sync(app.task_states)

    def _sync(self, states: dict[str, dict[str, Any]]) -> None:
        lines = {line.task_name: line for line in self.query(TaskLine)}
        for name, line in lines.items():
            if name not in states:
                line.remove()
        for name, state in states.items():
            line = lines.get(name)
            if line is None:
                line = TaskLine(name, state["title"])
                line.progress_state = (state["done"], state["total"], state["detail"])
                self.mount(line)
            else:
                line.set_progress(state["done"], state["total"], state["detail"])
        self.set_class(bool(states), "-busy")
