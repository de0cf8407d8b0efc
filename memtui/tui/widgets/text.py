"""Text from data is never markup: citation notes like ``|note=[...]`` and model output stay literal."""

from __future__ import annotations

from textual.content import Content

from memtui.adapters.redact import PLACEHOLDER
from memtui.core.hidden import HIDDEN_ESCAPE, reveal

REDACTION_STYLE = "bold reverse $error"
HIDDEN_STYLE = "bold reverse $warning"


def literal(text: str) -> Content:
    return Content(text)


def mark_hidden(content: Content) -> Content:
    """Escapes standing for hidden characters (``trust.hidden.reveal``) stand out like redactions."""
    for m in HIDDEN_ESCAPE.finditer(content.plain):
        content = content.stylize(HIDDEN_STYLE, m.start(), m.end())
    return content


def mark_redactions(text: str) -> Content:
    """Literal text with every redaction placeholder shown as a visible red marker, and every hidden character
    (bidi control, zero-width, tag character...) as a visible escape."""
    text = reveal(text)
    content = Content(text)
    start = text.find(PLACEHOLDER)
    while start != -1:
        content = content.stylize(REDACTION_STYLE, start, start + len(PLACEHOLDER))
        start = text.find(PLACEHOLDER, start + len(PLACEHOLDER))
    return mark_hidden(content)


def count_redactions(text: str) -> int:
    return text.count(PLACEHOLDER)
