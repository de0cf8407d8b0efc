"""The trust classes of the highlighted hunk's new lines and what to look at twice (``trust.review``)."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static


class TrustLine(Static):
    """Hidden when the hunk adds no classified or flagged line."""

    DEFAULT_CSS = """
    TrustLine { height: auto; max-height: 6; padding: 0 1; overflow-y: auto; }
    """

    def show(self, trust: Any) -> None:
        summary = trust.summary() if trust is not None else ""
        self.display = bool(summary)
        if not summary:
            self.update("")
            return
        lines = [Content(summary).stylize("bold")]
        for f in trust.flags:
            style = "$text-warning" if f.kind == "tool-only" else "$text-error"
            lines.append(Content("⚑ " + f.render()).stylize(style))
        self.update(Content("\n").join(lines))
