# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""The help screen: what each screen is for, and every active key with its binding id (for remapping)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

INTRO = """memtui curates the long-term memory of your coding agents.
1 Rollouts: every indexed session; Enter opens one (conversation, memory, job history).
2 Jobs: stage-1 extraction jobs and the Phase 2 consolidation job; retry or release stale leases.
3 Review: the consolidation awaiting review, hunk by hunk with its evidence; space leaves a hunk out, e amends
  it, v focuses the evidence (Enter opens the rollout at the cited item); approve or reject.
4 Memory: edit MEMORY.md and memory_summary.md; commit your edit as a manual change.
5 Citations: paste an agent answer; Enter jumps to the cited lines or opens a cited rollout.
6 History: every decision and each kept version's diff; r restores a version through review.
ctrl+p opens the command palette (ingest, Phase 1, Phase 2, approve, reject, screens).
Keys can be remapped by binding id (App.set_keymap / make_app(keymap=...))."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, bindings: list[tuple[str, str, str]], home: str) -> None:
        super().__init__()
        self.rows = bindings
        self.home = home

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static(Content("memtui help"), classes="dialog-title")
            yield Static(Content(INTRO), id="help-intro")
            yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("Key", key="key", width=16)
        table.add_column("Action", key="action", width=28)
        table.add_column("Binding id", key="id", width=26)
        for key, desc, binding_id in self.rows:
            table.add_row(Content(key), Content(desc), Content(binding_id))
        table.focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
