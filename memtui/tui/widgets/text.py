"""Text from data is never markup: citation notes like ``|note=[...]`` and model output stay literal."""

from __future__ import annotations

from textual.content import Content

from memtui.redact import PLACEHOLDER

REDACTION_STYLE = "bold reverse $error"


def literal(text: str) -> Content:
    return Content(text)


def mark_redactions(text: str) -> Content:
    """Literal text with every redaction placeholder shown as a visible red marker."""
    content = Content(text)
    start = text.find(PLACEHOLDER)
    while start != -1:
        content = content.stylize(REDACTION_STYLE, start, start + len(PLACEHOLDER))
        start = text.find(PLACEHOLDER, start + len(PLACEHOLDER))
    return content


def count_redactions(text: str) -> int:
    return text.count(PLACEHOLDER)
