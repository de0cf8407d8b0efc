"""A person's lines inside the offline consolidator's generated block: binding input, never proposed for removal.

The offline merge regenerates everything between its markers. A line there that has none of the generator's shapes
(a ``[Task n]`` bullet, a task heading, a summary pointer...) and that no stage-1 memory in the database derives was
written by a person, committed or not; like the agent, which is told to keep a person's edits, the offline merge
keeps it. (A generated bullet a person reworded keeps its ``[Task n]`` shape and is regenerated.) Each such line
goes back after the line it followed (matched by text, then by content without task numbers), else at the end of its
task group, else at the end of the block. Only a forget request (``Forgetting``) or the person (deleting it) removes
it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memtui.state.tombstones import normalize_memory_line

_DIGITS = re.compile(r"\d+")
GROUP_PREFIX = "# Task Group:"


def line_key(line: str) -> str:
    """What a line says, without bullet, ``[Task n]`` references, spacing and numbers (which change run to run)."""
    return normalize_memory_line(_DIGITS.sub("0", line))


@dataclass(frozen=True)
class PersonLine:
    text: str
    after: str | None  # the non-blank line it followed in the old block
    group: str | None  # the ``# Task Group:`` line it sat under


def person_lines(block: str, machine: Callable[[str], bool], begin: str, end: str) -> list[PersonLine]:
    """The lines of ``block`` (one generated block, markers included) for which ``machine`` says the generator
    cannot have written them."""
    out: list[PersonLine] = []
    after: str | None = None
    group: str | None = None
    for line in block.splitlines():
        text = line.rstrip()
        if not text.strip() or text in (begin, end):
            continue
        if text.startswith(GROUP_PREFIX):
            group = text
        if not machine(text) and after != "### keywords":  # the keywords line has no shape of its own
            out.append(PersonLine(text, after, group))
        after = text
    return out


def _find(lines: list[str], text: str | None) -> int | None:
    if text is None:
        return None
    for i, line in enumerate(lines):
        if line == text:
            return i
    key = line_key(text)
    for i, line in enumerate(lines):
        if line.strip() and line_key(line) == key:
            return i
    return None


def _group_end(lines: list[str], group: str | None, end: str) -> int | None:
    start = _find(lines, group)
    if start is None:
        return None
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(GROUP_PREFIX) or lines[i] == end:
            return i
    return len(lines)


def keep_person_lines(new_block: str, kept: list[PersonLine], end: str, drops: Callable[[str], bool]) -> str:
    """``new_block`` with the person's lines put back (those a forget request targets are left out)."""
    lines = new_block.split("\n")
    for p in kept:
        if drops(p.text) or p.text in lines:
            continue
        at = _find(lines, p.after)
        if at is not None:
            lines.insert(at + 1, p.text)
            continue
        at = _group_end(lines, p.group, end)
        if at is None:
            at = next((i for i, line in enumerate(lines) if line == end), len(lines))
        while at > 0 and not lines[at - 1].strip():
            at -= 1
        lines.insert(at, p.text)
    return "\n".join(lines)
