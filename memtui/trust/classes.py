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
from typing import Any

from memtui.phase1 import render


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


def item_origin(item: dict[str, Any]) -> str:
    """The origin label of a memory item (the one place trust reads it, so a new labelling swaps in here)."""
    return render.origin_of(item)


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


def _call_name(item: dict[str, Any]) -> str:
    if item.get("type") == "local_shell_call":
        return "local_shell"
    return str(item.get("name") or "").lower()


def item_classes(items: list[dict[str, Any]]) -> list[Trust]:
    """The class each memory item lends a statement that cites it (index N-1 for ``[item N]``)."""
    calls: dict[str, str] = {}
    out: list[Trust] = []
    for item in items:
        origin = item_origin(item)
        if origin == render.ORIGIN_USER:
            out.append(Trust.USER)
        elif origin == render.ORIGIN_TOOL_CALL:
            if item.get("call_id"):
                calls[str(item["call_id"])] = _call_name(item)
            out.append(Trust.OBSERVED)  # the agent's own action: that it ran is seen, not claimed
        elif origin == render.ORIGIN_TOOL_OUTPUT:
            name = calls.get(str(item.get("call_id") or ""), "")
            out.append(Trust.OBSERVED if name in SHELL_TOOLS else Trust.TOOL)
        elif origin == render.ORIGIN_ASSISTANT:
            out.append(Trust.AGENT)
        else:  # another agent's message, injected context: text from outside the conversation
            out.append(Trust.TOOL)
    return out


def class_of(cited: list[int], classes: list[Trust]) -> Trust:
    """The class of a statement citing ``cited`` (1-based): its best cited item; none (or none valid) is agent."""
    found = [classes[n - 1] for n in cited if 0 < n <= len(classes)]
    return max(found, key=RANK.__getitem__) if found else Trust.AGENT


def weaker(a: Trust, b: Trust) -> Trust:
    return a if RANK[a] <= RANK[b] else b
