"""The review's view of trust: per hunk, the classes of the lines it adds and what to look at twice.

Flags: a line only tool output or fetched content supports (until a person approves it for agents), imperative
text that came from tool output (possible injection, with the item and rollout it came from), and hidden
characters (removed from a line the run wrote, or still in a line, shown escaped).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from memtui.core.hidden import has_hidden, reveal
from memtui.domain.trust import markers
from memtui.domain.trust.classes import Trust

CLASS_ORDER = [t.value for t in (Trust.USER, Trust.OBSERVED, Trust.TOOL, Trust.AGENT)]


@dataclass(frozen=True)
class LineFlag:
    line: int  # line number on the new side
    kind: str  # tool-only | injection | hidden
    text: str  # what the reviewer reads

    def render(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass
class HunkTrust:
    classes: Counter[str] = field(default_factory=Counter)
    flags: list[LineFlag] = field(default_factory=list)

    def summary(self) -> str:
        """``trust: user 2, tool 1 · flags: ...`` (empty when the hunk adds no classified line)."""
        if not self.classes and not self.flags:
            return ""
        parts = [f"{c} {self.classes[c]}" for c in CLASS_ORDER if self.classes[c]]
        head = "trust: " + (", ".join(parts) if parts else "no classified lines")
        if self.flags:
            head += f" · {len(self.flags)} flag(s)"
        return head

    def as_json(self) -> dict[str, object]:
        return {
            "classes": {c: self.classes[c] for c in CLASS_ORDER if self.classes[c]},
            "flags": [{"line": f.line, "kind": f.kind, "text": f.text} for f in self.flags],
        }


def line_flags(n: int, line: str, marker: markers.Marker | None, hidden_removed: int = 0) -> list[LineFlag]:
    out: list[LineFlag] = []
    if marker is not None and marker.flag:
        where = f"item {marker.item}" if marker.item else "an item"
        where += f" of rollout {marker.thread}" if marker.thread else ""
        state = " (approved by a person)" if marker.approved else ""
        out.append(LineFlag(n, "injection", f"possible injection ({marker.flag}) from {where}{state}"))
    elif marker is not None and marker.trust == Trust.TOOL and not marker.approved:
        out.append(LineFlag(n, "tool-only", "only tool output or fetched content supports this; agents do not load it"))
    if hidden_removed:
        out.append(LineFlag(n, "hidden", f"the run wrote {hidden_removed} hidden character(s) here; removed"))
    if has_hidden(line):
        out.append(LineFlag(n, "hidden", f"hidden characters: {reveal(line).strip()[:120]}"))
    return out


def hunk_trust(text: str, new_start: int, hidden: dict[str, int] | None = None) -> HunkTrust:
    """The classes and flags of the lines a hunk (its diff text, header first) adds. ``hidden``: line number (as a
    string, from the run's trust report) -> hidden characters the run tried to write there."""
    out = HunkTrust()
    n = new_start
    for raw in text.split("\n")[1:]:
        if raw.startswith("+"):
            line = raw[1:]
            marker = markers.parse(line)
            if marker is not None:
                out.classes[marker.trust.value] += 1
            out.flags += line_flags(n, line, marker, int((hidden or {}).get(str(n), 0)))
            n += 1
        elif raw.startswith(" "):
            n += 1
    return out
