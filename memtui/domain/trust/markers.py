"""The ``[trust:...]`` marker each memory statement carries, and which lines are statements.

A marker ends the line it classifies, in words an agent reads without being told: ``[trust:user]``,
``[trust:observed]``, ``[trust:tool]``, ``[trust:agent]``, optionally followed by a possible-injection flag naming
the item (and rollout) it came from, and ``approved`` when a person let a tool-only line into what agents load:
``[trust:tool; injection? shell, item 7 @019e0a1b; approved]``. memtui writes every marker; a marker a model wrote
is replaced by the derived one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memtui.domain.trust.classes import Trust

_MARKER = re.compile(r"\s*\[trust:(user|observed|tool|agent)((?:;[^\]\n]*)?)\]")
_FLAG = re.compile(r"injection\?\s*(\w+)(?:,\s*item\s+(\d+))?(?:\s*@([0-9A-Za-z-]+))?")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
_KEY_LINE = re.compile(r"^\s*(?:[-*]\s+)?[a-z_][a-z0-9_]{0,30}:(?:\s|$)")
_NOT_STATEMENT_SECTIONS = ("rollout_summary_files", "keywords", "what's in memory", "older memory topics")
_PRESENTS_AS_USER = re.compile(
    r"\bthe user(?:'s)?\s+(?:(?:has\s+)?(?:said|says|asked|asks|wrote|writes|told|prefers?|preferences?|wants?|"
    r"likes?|insists?|requires?|requested|requests|corrected|expects?|decided|chose|approved|instructed|"
    r"always|never|does\s+not\s+want|doesn'?t\s+want))\b"
    r"|\buser\s+(?:preference|prefers|wants|instruction)\b"
    r"|^\s*[-*]\s+(?:remember|forget):"
    r"|\bper the user\b|\bas the user (?:said|asked|wants)\b",
    re.I,
)


@dataclass(frozen=True)
class Marker:
    trust: Trust
    flag: str | None = None  # possible injection: instruction | shell | credentials | url
    item: int | None = None  # the item the flagged text came from
    thread: str | None = None  # the first 8 characters of that item's rollout id (in MEMORY.md)
    approved: bool = False  # a person let this line into what agents load

    def render(self) -> str:
        parts = [f"trust:{self.trust.value}"]
        if self.flag:
            where = f", item {self.item}" if self.item else ""
            where += f" @{self.thread}" if self.thread else ""
            parts.append(f"injection? {self.flag}{where}")
        if self.approved:
            parts.append("approved")
        return "[" + "; ".join(parts) + "]"

    @property
    def untrusted(self) -> bool:
        """Kept out of what agents load by default: tool-only or flagged, and no person approved it."""
        return (self.trust == Trust.TOOL or self.flag is not None) and not self.approved


def parse(line: str) -> Marker | None:
    """The (last) marker on a line, or None."""
    found = list(_MARKER.finditer(line))
    if not found:
        return None
    m = found[-1]
    rest = m.group(2) or ""
    flag = _FLAG.search(rest)
    return Marker(
        trust=Trust(m.group(1)),
        flag=flag.group(1) if flag else None,
        item=int(flag.group(2)) if flag and flag.group(2) else None,
        thread=flag.group(3) if flag else None,
        approved=bool(re.search(r";\s*approved\b", rest)),
    )


def strip(line: str) -> str:
    """The line without any trust marker (a newline at the end is kept)."""
    end = "\n" if line.endswith("\n") else ""
    return _MARKER.sub("", line.rstrip("\n")).rstrip() + end


def strip_all(text: str) -> str:
    """Every marker removed from a whole text (keywords, titles and matching read past them)."""
    return _MARKER.sub("", text)


def has_marker(line: str) -> bool:
    return _MARKER.search(line) is not None


def set_marker(line: str, marker: Marker) -> str:
    """The line with exactly ``marker`` at its end."""
    end = "\n" if line.endswith("\n") else ""
    return strip(line.rstrip("\n")).rstrip() + " " + marker.render() + end


def approve(line: str) -> str:
    """The line with its marker marked approved by a person (unchanged without a marker)."""
    m = parse(line)
    return set_marker(line, replace(m, approved=True)) if m is not None else line


def approve_untrusted(text: str) -> str:
    """``text`` with every untrusted statement marked approved: a person's explicit per-hunk decision."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = parse(line)
        if m is not None and m.untrusted:
            lines[i] = approve(line)
    return "\n".join(lines)


def presents_as_user(line: str) -> bool:
    """True when the line attributes its content to the user (said, prefers, wants, remember:, ...) or carries a
    ``[trust:user]`` marker."""
    m = parse(line)
    return (m is not None and m.trust == Trust.USER) or _PRESENTS_AS_USER.search(strip(line)) is not None


def statement_lines(text: str) -> list[int]:
    """Indexes of the lines of a memory file that are statements: everything but headings, blank lines, comments,
    ``key: value`` metadata, labels ending in ``:``, and the file lists, keywords and index of a memory file."""
    out: list[int] = []
    headings: dict[int, str] = {}  # level -> title of the headings enclosing the line
    fenced = False
    for i, raw in enumerate(text.split("\n")):
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not line:
            continue
        if h := _HEADING.match(raw):
            level = len(raw.lstrip()) - len(raw.lstrip().lstrip("#"))
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = h.group(1).strip().lower()
            continue
        if any(title.startswith(s) for title in headings.values() for s in _NOT_STATEMENT_SECTIONS):
            continue
        body = strip(line)
        if (
            body in ("v1", "---")
            or body.startswith(("<!--", "_", "|"))
            or body.endswith(":")
            or (_KEY_LINE.match(body) and not presents_as_user(body))
        ):
            continue
        out.append(i)
    return out
