"""Messages between workers and the app. Workers only ever post these (thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from memtui.tui.tasks import TaskOutcome


@dataclass
class TaskProgress(Message):
    """A long task moved on. Coalesced: only the newest progress of a task is kept in the queue."""

    name: str
    done: float
    total: float | None
    detail: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TaskProgress) and message.name == self.name


@dataclass
class TaskFinished(Message):
    """A long task returned; its outcome is shown as a notification (never as markup) and logged."""

    name: str
    title: str
    outcome: TaskOutcome


@dataclass
class TaskFailed(Message):
    name: str
    title: str
    error: str
