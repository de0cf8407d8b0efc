"""Semantic validation of a stage-one output: the structure the prompt asks for, not only the JSON keys.

A small model can return the three keys with junk inside (``raw_memory: "</text-document>"``,
``rollout_summary: "{ {"``); the schema accepts that, this check does not. The no-op answer (both empty) and the
half-empty answer (discarded as a no-op by ``phase1.run``) pass: there is nothing to store.
"""

from __future__ import annotations

import re
from typing import Protocol

_HEADING = re.compile(r"^#{1,3} +\S", re.M)
_WORD = re.compile(r"[A-Za-z]{3,}")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)(.*)\Z", re.S)
# Placeholders of the prompt's formats copied instead of filled.
_PLACEHOLDER = re.compile(
    r"<(one-sentence summary|short task name|one dense line|one line: task|main task|what was asked|"
    r"validated fact|step|situation|quote)[^>]*>"
)


class StageOne(Protocol):
    raw_memory: str
    rollout_summary: str


def raw_memory_problem(text: str) -> str | None:
    m = _FRONT_MATTER.match(text.strip())
    if m is None:
        return "raw_memory does not start with front matter between two --- lines"
    front, body = m.groups()
    desc = re.search(r"^description:[ \t]*(.*)$", front, re.M)
    if desc is None or not _WORD.search(desc.group(1)):
        return "raw_memory front matter has no description"
    if not _WORD.search(body):
        return "raw_memory has nothing after its front matter"
    return None


def summary_problem(text: str) -> str | None:
    first = text.strip().splitlines()[0] if text.strip() else ""
    if not _HEADING.match(first) or not _WORD.search(first):
        return "rollout_summary does not start with a '# <summary>' heading"
    return None


def stage_one_problems(output: StageOne) -> list[str]:
    """Why the output is not a memory (empty = fine)."""
    raw, summary = output.raw_memory.strip(), output.rollout_summary.strip()
    if not raw or not summary:
        return []
    problems = [p for p in (raw_memory_problem(raw), summary_problem(summary)) if p]
    if m := _PLACEHOLDER.search(raw + "\n" + summary):
        problems.append(f"the format's placeholder {m.group(0)!r} was copied instead of filled")
    return problems
