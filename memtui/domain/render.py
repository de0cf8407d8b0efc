"""The Phase 1 rendering of a rollout: one numbered line per memory item, labelled with who produced it.

Codex sends the filtered items as one JSON array, which leaves the model to work out from ``role`` and ``type``
fields whose words are the user's. Here every item is one line, ``[item N] <origin>: <content>``, where N is the
item's 1-based position in ``memory_items`` (the numbering issues 11 and 12 share) and the origin is one of
``user``, ``assistant``, ``tool call``, ``tool output``, ``agent message`` or ``context`` (injected context such as
``<environment_context>``, which the memory filter keeps but never counts as the user's words). Content is JSON-encoded, so it never
holds a raw newline: a line that starts with ``[item`` is always a label, and no text inside a rollout can forge one.
An assistant reply that carries a memory citation says so in its label, because it restates memory rather than
adding evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import IntEnum
from typing import Any

import orjson

from memtui.adapters.rollouts.model import ACTION_CALL_TYPES, Origin, TranscriptItem
from memtui.domain.citation import ENTRIES_OPEN, OPEN_TAG


class Tier(IntEnum):
    """What the budget keeps first (codex-rs ``memories/write/src/rollout_input.rs``, ``Tier``): the person's words
    are the last thing cut, a tool dump the first."""

    HUMAN = 0
    FINAL = 1
    OTHER_AGENT = 2
    COMMENTARY = 3
    CONTEXT = 4
    TOOL = 5


TIER_OF: dict[Origin, Tier] = {
    Origin.USER: Tier.HUMAN,
    Origin.ASSISTANT: Tier.FINAL,
    Origin.AGENT: Tier.OTHER_AGENT,
    Origin.COMMENTARY: Tier.COMMENTARY,
    Origin.CONTEXT: Tier.CONTEXT,
    Origin.TOOL_CALL: Tier.TOOL,
    Origin.TOOL_OUTPUT: Tier.TOOL,
}

CITES_MEMORY = "assistant, restating memory (carries a memory citation; not new evidence)"

# Per-item caps, in bytes of the rendered line (``rollout_input.rs``: ``TOOL_OUTPUT_TOKENS`` = 2,000 at 4 bytes a
# token, ``MAX_ROW_BYTES`` = 10,000, each less a reserve for the marker).
TRUNCATION_RESERVE_BYTES = 96
TOOL_OUTPUT_BYTES = 2_000 * 4 - TRUNCATION_RESERVE_BYTES
MAX_ROW_BYTES = 10_000 - TRUNCATION_RESERVE_BYTES
_LABEL = re.compile(r"^\[item \d+\] ")
# Longest first: "assistant commentary" before "assistant", "tool call" before "tool output".
_ORIGIN_WORDS = sorted(Origin, key=len, reverse=True)


def origin_of_line(line: str) -> Origin | None:
    """The origin a rendered line states after its ``[item N]`` label; None for a line that is not an item."""
    m = _LABEL.match(line)
    if not m:
        return None
    rest = line[m.end() :]
    for origin in _ORIGIN_WORDS:
        if rest.startswith(origin) and rest[len(origin) : len(origin) + 1] in (":", " ", ","):
            return origin
    return None


def cut_middle(line: str, max_bytes: int) -> str:
    """``line`` within ``max_bytes`` (UTF-8): its head and tail around a marker saying how much was cut; a line
    never gains a raw newline, so it stays one item."""
    data = line.encode("utf-8")
    if len(data) <= max_bytes:
        return line
    keep = max(0, max_bytes - 64)
    head = data[: keep * 2 // 3].decode("utf-8", errors="ignore")
    tail = data[len(data) - keep // 3 :].decode("utf-8", errors="ignore") if keep // 3 else ""
    cut = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}…[memtui: {cut} bytes cut]…{tail}"


def _q(value: Any) -> str:
    return orjson.dumps(value).decode()


def cites_memory(text: str) -> bool:
    """True when an assistant reply carries a memory citation block (wrapped or bare)."""
    return OPEN_TAG in text or ENTRIES_OPEN in text


def render_item(item: TranscriptItem) -> str:
    """``[item n] <origin>: <content>`` on one line, within the per-item caps (tool output ~2,000 tokens, any item
    10,000 bytes): one long dump never crowds out the rest."""
    line = _render_item(item)
    cap = TOOL_OUTPUT_BYTES if item.origin is Origin.TOOL_OUTPUT else MAX_ROW_BYTES
    return cut_middle(line, cap)


def _render_item(item: TranscriptItem) -> str:
    n, kind, origin = item.number, item.type, item.origin
    said: str = origin
    if kind == "message":
        if origin is Origin.ASSISTANT and cites_memory(item.text):
            said = CITES_MEMORY
        if origin is Origin.CONTEXT and item.label:
            said = f"{Origin.CONTEXT} {item.label}"
        return f"[item {n}] {said}: {_q(item.text)}"
    if kind == "local_shell_call":
        return f"[item {n}] {origin} shell: {_q(item.arguments)}"
    if kind in ACTION_CALL_TYPES:
        return f"[item {n}] {origin} {item.name or '?'}: {_q(item.arguments)}"
    if item.is_output:
        return f"[item {n}] {origin}: {_q(item.text)}"
    if kind == "agent_message":
        return f"[item {n}] {origin} from {item.author or '?'}: {_q(item.text)}"
    rest = {k: v for k, v in item.raw.items() if k not in ("type", "id")}
    return f"[item {n}] {origin} {kind}: {_q(rest)}"


def render_items(items: Iterable[TranscriptItem]) -> str:
    """The whole rollout as numbered lines; line N is item N. Not redacted: the caller redacts the text."""
    return "\n".join(render_item(item) for item in items)
