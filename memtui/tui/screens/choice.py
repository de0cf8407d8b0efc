# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Dialogs for the review gate: a choice between several named actions, and a read-only difference."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from memtui.tui.widgets.diff_view import DiffView


@dataclass(frozen=True)
class Choice:
    label: str
    value: str
    variant: str = "default"  # Button variant: primary, error, warning, default


class ChoiceModal(ModalScreen[str | None]):
    """Pick one of a few actions (buttons, left/right or tab to move, enter to press); ``escape`` is None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(self, title: str, body: str, choices: list[Choice], focus: str | None = None) -> None:
        super().__init__()
        self.title_text, self.body, self.choices = title, body, choices
        self.focus_value = focus or choices[0].value  # the button enter presses: the safe one

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Content(self.title_text), classes="dialog-title")
            yield Static(Content(self.body), classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                for choice in self.choices:
                    yield Button(choice.label, variant=choice.variant, id=f"choice-{choice.value}")  # type: ignore[arg-type]

    def on_mount(self) -> None:
        self.query_one(f"#choice-{self.focus_value}", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss((event.button.id or "").removeprefix("choice-") or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class DiffModal(ModalScreen[None]):
    """A difference to read before deciding; ``escape``, ``enter`` or ``q`` closes it."""

    BINDINGS = [Binding("escape,enter,q", "close", "Close", id="dialog.close")]

    def __init__(self, title: str, diff: str, empty: str = "No difference.") -> None:
        super().__init__()
        self.title_text, self.diff, self.empty = title, diff, empty

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide diff-dialog"):
            yield Label(Content(self.title_text), classes="dialog-title")
            yield DiffView(id="dialog-diff")

    def on_mount(self) -> None:
        view = self.query_one(DiffView)
        view.show_diff(self.diff, empty=self.empty)
        view.focus()

    def action_close(self) -> None:
        self.dismiss(None)
