"""Trust classes: who stands behind a memory statement, derived from the transcript items it cites.

``user``: the user's own words. ``observed``: the agent saw it happen (a command it ran, its exit status or test
result). ``tool``: only tool output, fetched content, a file's contents or another agent's message supports it.
``agent``: only the assistant's own reasoning, or nothing (a statement without a citation). The model's own claim
about a statement never counts: the class comes from the items.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from memtui.adapters.rollouts.model import Origin, TranscriptItem


class Trust(StrEnum):
    USER = "user"
    OBSERVED = "observed"
    TOOL = "tool"
    AGENT = "agent"


# Higher is stronger evidence; a statement citing several items is as strong as its best one.
RANK = {Trust.AGENT: 0, Trust.TOOL: 1, Trust.OBSERVED: 2, Trust.USER: 3}

# Tools whose output is the result of a command the agent ran (exit status, test output): what it saw happen.
SHELL_TOOLS = frozenset(
    {"shell", "exec_command", "local_shell", "bash", "container.exec", "run_command", "shell_command", "exec"}
)

_ITEM_REF = re.compile(r"\[items?\s+(\d+(?:\s*(?:,|-|–)\s*\d+)*)\]", re.I)


def cited_items(text: str) -> list[int]:
    """``[item 7]``, ``[items 3, 5]``, ``[items 4-6]`` -> [7], [3, 5], [4, 5, 6] (in order, once each)."""
    out: list[int] = []
    for m in _ITEM_REF.finditer(text):
        for part in re.split(r"\s*,\s*", m.group(1)):
            bounds = re.split(r"\s*[-–]\s*", part)
            if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
                lo, hi = int(bounds[0]), int(bounds[1])
                nums: Iterable[int] = range(lo, min(hi, lo + 50) + 1) if hi >= lo else [lo]
            else:
                nums = [int(b) for b in bounds if b.isdigit()]
            out += [n for n in nums if n > 0 and n not in out]
    return out


def item_classes(items: Iterable[TranscriptItem]) -> list[Trust]:
    """The class each memory item lends a statement that cites it (index N-1 for ``[item N]``)."""
    out: list[Trust] = []
    for item in items:
        match item.origin:
            case Origin.USER:
                out.append(Trust.USER)
            case Origin.TOOL_CALL:
                out.append(Trust.OBSERVED)  # the agent's own action: that it ran is seen, not claimed
            case Origin.TOOL_OUTPUT:
                out.append(Trust.OBSERVED if item.tool in SHELL_TOOLS else Trust.TOOL)
            case Origin.ASSISTANT | Origin.COMMENTARY:
                out.append(Trust.AGENT)  # the agent's own words, final or in progress
            case Origin.AGENT | Origin.CONTEXT:
                out.append(Trust.TOOL)  # another agent's message, injected context: text from outside
    return out


def class_of(cited: list[int], classes: list[Trust]) -> Trust:
    """The class of a statement citing ``cited`` (1-based): its best cited item; none (or none valid) is agent."""
    found = [classes[n - 1] for n in cited if 0 < n <= len(classes)]
    return max(found, key=RANK.__getitem__) if found else Trust.AGENT


def weaker(a: Trust, b: Trust) -> Trust:
    return a if RANK[a] <= RANK[b] else b
