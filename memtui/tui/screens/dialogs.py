# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Modal dialogs: confirm (y/n), confirm with a reason or message field, a multi-line text editor, a picker."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from memtui.tui.widgets.vim import VimOptionList


class ConfirmModal(ModalScreen[bool]):
    """``y``/``enter`` confirms, ``n``/``escape`` cancels."""

    BINDINGS = [
        Binding("y", "confirm", "Yes", id="dialog.confirm"),
        Binding("n,escape", "cancel", "No", id="dialog.cancel"),
    ]

    def __init__(self, title: str, body: str, confirm_label: str = "Confirm", danger: bool = False) -> None:
        super().__init__()
        self.title_text, self.body, self.confirm_label, self.danger = title, body, confirm_label, danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(self.title_text), classes="dialog-title")
            yield Static(Content(self.body), classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.confirm_label, variant="error" if self.danger else "primary", id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#confirm", Button).focus()

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)


class TextPromptModal(ModalScreen[str | None]):
    """A confirmation that needs text: the reject reason, a commit message, a file path."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(
        self,
        title: str,
        body: str,
        placeholder: str,
        confirm_label: str = "Confirm",
        value: str = "",
        danger: bool = False,
        required: bool = True,
    ) -> None:
        super().__init__()
        self.title_text, self.body, self.placeholder = title, body, placeholder
        self.confirm_label, self.value, self.danger, self.required = confirm_label, value, danger, required

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Content(self.title_text), classes="dialog-title")
            yield Static(Content(self.body), classes="dialog-body")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt")
            yield Static("", id="prompt-error", classes="dialog-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.confirm_label, variant="error" if self.danger else "primary", id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        prompt = self.query_one("#prompt", Input)
        prompt.cursor_blink = getattr(self.app, "cursor_blink", True)  # (off in snapshots: a blink is a diff)
        prompt.focus()

    @on(Input.Submitted, "#prompt")
    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        text = self.query_one("#prompt", Input).value.strip()
        if self.required and not text:
            error = self.query_one("#prompt-error", Static)
            error.update(Content(f"Required: type the {self.placeholder.split(' (')[0]} first (esc cancels)."))
            error.display = True
            self.query_one("#prompt", Input).focus()
            return
        self.dismiss(text)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class TextAreaModal(ModalScreen[str | None]):
    """Edit several lines of text (a hunk's new lines); ``ctrl+s`` or the button keeps it, ``escape`` cancels."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Use this text", id="dialog.save"),
        Binding("escape", "cancel", "Cancel", id="dialog.cancel"),
    ]

    def __init__(self, title: str, body: str, text: str, confirm_label: str = "Save") -> None:
        super().__init__()
        self.title_text, self.body, self.text, self.confirm_label = title, body, text, confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide text-dialog"):
            yield Label(Content(self.title_text), classes="dialog-title")
            yield Static(Content(self.body), classes="dialog-body")
            yield TextArea(self.text, id="amend-text", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="dialog-buttons"):
                yield Label(Content("ctrl+s keeps this text · esc cancels"), classes="dialog-keys")
                yield Button(self.confirm_label, variant="primary", id="confirm")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#amend-text", TextArea).focus()

    @on(Button.Pressed, "#confirm")
    def action_save(self) -> None:
        self.dismiss(self.query_one("#amend-text", TextArea).text)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class PickModal(ModalScreen[Any]):
    """Pick one of several labelled values (literal labels)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]

    def __init__(self, title: str, choices: list[tuple[str, Any]], empty: str = "Nothing to pick.") -> None:
        super().__init__()
        self.title_text, self.choices, self.empty = title, choices, empty

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Content(self.title_text), classes="dialog-title")
            if self.choices:
                yield VimOptionList(*[Option(Content(label), id=str(i)) for i, (label, _) in enumerate(self.choices)])
            else:
                yield Static(Content(self.empty), classes="dialog-body")

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.choices[int(event.option.id or 0)][1])

    def action_cancel(self) -> None:
        self.dismiss(None)
