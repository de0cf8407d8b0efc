"""What agents load follows trust: tool-only and flagged statements stay out until a person approves them.

One function, ``trusted_text``, is the rule; every read path (the export prompt, the AGENTS.md / CLAUDE.md block,
the MCP server) passes the memory text through it. A statement marked ``tool``, or flagged as possible injection,
is left out unless its marker says ``approved`` (a person's per-hunk decision in the review, recorded in the
history); the ``export_tool_statements`` setting lets them through. Hidden characters never leave: they are removed
whatever the setting.
"""

from __future__ import annotations

from dataclasses import dataclass

from memtui.core.hidden import strip_hidden
from memtui.domain.trust import markers

LEFT_OUT = "[left out: a tool-only or flagged statement no person approved]"
LEFT_OUT_HEADING = "[left out: a tool-only or flagged heading no person approved]"


@dataclass(frozen=True)
class TrustedText:
    text: str
    left_out: int  # statements kept out
    hidden_removed: int


def trusted_text(text: str, *, include_untrusted: bool = False, keep_lines: bool = False) -> TrustedText:
    """``text`` as agents may load it. ``keep_lines`` puts a placeholder where a statement was left out, so line
    numbers (and the citations that use them) stay those of the file."""
    clean = strip_hidden(text)
    if include_untrusted:
        return TrustedText(clean.text, 0, clean.removed)
    lines = clean.text.split("\n")
    out: list[str] = []
    drop = set()
    for i, line in enumerate(lines):  # any line: a flagged heading or label is left out like a statement
        m = markers.parse(line)
        if m is not None and m.untrusted:
            drop.add(i)
    for i, line in enumerate(lines):
        if i not in drop:
            out.append(line)
        elif (level := _heading_level(line)) > 0:
            # a heading stays a heading, so what stands under it keeps its own section, never the one before
            out.append(f"{'#' * level} {LEFT_OUT_HEADING}")
        elif keep_lines:
            out.append(LEFT_OUT)
    return TrustedText("\n".join(out), len(drop), clean.removed)


def _heading_level(line: str) -> int:
    stripped = line.lstrip()
    level = len(stripped) - len(stripped.lstrip("#"))
    return level if 0 < level <= 6 and stripped[level : level + 1] in (" ", "") else 0
