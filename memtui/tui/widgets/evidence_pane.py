# ruff: noqa: RUF012  (Textual declares BINDINGS as mutable class attributes)
"""The evidence behind the highlighted hunk: the rollouts (project, date, title) and the matching raw memory."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from memtui.tui.widgets.text import mark_redactions
from memtui.tui.widgets.vim import VimOptionList


def _day(ts: int | None) -> str:
    from memtui.tui.format import fmt_time

    return fmt_time(ts)[:10] if ts else "-"


class EvidencePane(VimOptionList):
    """One option per rollout behind the hunk; ``enter`` opens it at the cited transcript item."""

    DEFAULT_CSS = """
    EvidencePane { height: 9; border: none; border-top: hkey $panel; padding: 0 1; }
    EvidencePane:focus { background-tint: $foreground 3%; }
    """

    BINDINGS = [Binding("escape", "leave", "Back to the diff", show=False)]

    class Leave(Message):
        """Back to the view the pane belongs to (esc)."""

    def action_leave(self) -> None:
        self.post_message(self.Leave())

    class Open(Message):
        """Open this rollout, at this transcript item (None: at the top)."""

        def __init__(self, thread_id: str, item: int | None) -> None:
            super().__init__()
            self.thread_id, self.item = thread_id, item

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.evidence: list[Any] = []
        self.border_title = "Evidence"

    def show(self, evidence: list[Any] | None, note: str = "") -> None:
        self.evidence = list(evidence or [])
        self.clear_options()
        if not self.evidence:
            self.add_option(
                Option(
                    Content(note or "No evidence: this hunk is not in MEMORY.md or memory_summary.md."), disabled=True
                )
            )
            return
        for i, e in enumerate(self.evidence):
            via = {"task": "task", "health": "said later"}.get(e.via, f"match {e.score:.2f}")
            items = f"  ↵ item {e.items[0]}" if e.items else ""
            head = Content.assemble(
                (e.project or "(unknown project)", "bold"),
                f"  {_day(e.date)}  ",
                (e.title or e.thread_id, ""),
                (f"  ({via})", "$text-muted"),
            )
            excerpt = Content("  “").append(mark_redactions(e.excerpt or "-")).append(Content("”"))
            line = Content.assemble(excerpt, (items, "$text-accent"))
            self.add_option(Option(Content("\n").join([head, line]), id=str(i)))
        self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is None:
            return
        e = self.evidence[int(event.option.id)]
        self.post_message(self.Open(e.thread_id, e.items[0] if e.items else None))
