"""Messages between workers, widgets and the app. Workers only ever post these (thread-safe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


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
    """A long task returned; ``summary`` is shown as a notification (never as markup)."""

    name: str
    title: str
    result: Any
    summary: str


@dataclass
class TaskFailed(Message):
    name: str
    title: str
    error: str


@dataclass
class DataChanged(Message):
    """Something in the state database or the memory root changed: screens reload what they show."""

    source: str


@dataclass
class OpenRollout(Message):
    thread_id: str
