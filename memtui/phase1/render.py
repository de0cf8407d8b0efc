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
from enum import IntEnum, StrEnum
from typing import Any

import orjson

from memtui.citations.model import ENTRIES_OPEN, OPEN_TAG


class Origin(StrEnum):
    """Who produced an item: the word that follows ``[item N]`` in the Phase 1 input (typed, so other readers of
    that input, such as trust classes, never guess from free text)."""

    USER = "user"
    ASSISTANT = "assistant"
    COMMENTARY = "assistant commentary"  # a Codex message with ``phase: "commentary"``: progress, not the answer
    TOOL_CALL = "tool call"
    TOOL_OUTPUT = "tool output"
    AGENT = "agent message"
    CONTEXT = "context"  # injected by the agent's tooling (``rollouts.user_words``): never the user's words


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

ORIGIN_USER = Origin.USER
ORIGIN_ASSISTANT = Origin.ASSISTANT
ORIGIN_TOOL_CALL = Origin.TOOL_CALL
ORIGIN_TOOL_OUTPUT = Origin.TOOL_OUTPUT
ORIGIN_AGENT = Origin.AGENT
ORIGIN_CONTEXT = Origin.CONTEXT
ORIGINS = tuple(Origin)
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


_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}


def _q(value: Any) -> str:
    return orjson.dumps(value).decode()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif part.get("type") == "input_image":
            parts.append("[image]")
        elif part.get("type") == "encrypted_content":
            parts.append("[encrypted content]")
    return "\n".join(parts)


def cites_memory(text: str) -> bool:
    """True when an assistant reply carries a memory citation block (wrapped or bare)."""
    return OPEN_TAG in text or ENTRIES_OPEN in text


def origin_of(item: dict[str, Any]) -> Origin:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role == "user":
            return Origin.USER
        if role == "context":
            return Origin.CONTEXT
        return Origin.COMMENTARY if item.get("phase") == "commentary" else Origin.ASSISTANT
    if kind in _CALLS:
        return ORIGIN_TOOL_CALL
    if kind in _OUTPUTS:
        return ORIGIN_TOOL_OUTPUT
    if kind == "agent_message":
        return ORIGIN_AGENT
    return ORIGIN_TOOL_OUTPUT  # anything else the filter kept was produced by the environment, not by a person


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            return _q(orjson.loads(raw))
        except orjson.JSONDecodeError:
            return _q(raw)
    return _q(raw)


def render_item(n: int, item: dict[str, Any]) -> str:
    """``[item n] <origin>: <content>`` on one line, within the per-item caps (tool output ~2,000 tokens, any item
    10,000 bytes): one long dump never crowds out the rest."""
    line = _render_item(n, item)
    cap = TOOL_OUTPUT_BYTES if origin_of(item) is Origin.TOOL_OUTPUT else MAX_ROW_BYTES
    return cut_middle(line, cap)


def _render_item(n: int, item: dict[str, Any]) -> str:
    kind = item.get("type")
    origin = origin_of(item)
    if kind == "message":
        text = _text(item.get("content"))
        if origin == ORIGIN_ASSISTANT and cites_memory(text):
            origin = CITES_MEMORY
        if origin == ORIGIN_CONTEXT and item.get("label"):
            origin = f"{ORIGIN_CONTEXT} {item['label']}"
        return f"[item {n}] {origin}: {_q(text)}"
    if kind in ("function_call", "custom_tool_call"):
        name = item.get("name") or "?"
        args = _arguments(item.get("arguments")) if kind == "function_call" else _q(item.get("input", ""))
        return f"[item {n}] {origin} {name}: {args}"
    if kind == "local_shell_call":
        action = item.get("action") or {}
        return f"[item {n}] {origin} shell: {_q(action.get('command'))}"
    if kind in _OUTPUTS:
        out = item.get("output")
        text = out if isinstance(out, str) else _text(out) if isinstance(out, list) else _q(out)
        if kind == "tool_search_output":
            text = _q(item.get("tools", []))
        return f"[item {n}] {origin}: {_q(text)}"
    if kind == "agent_message":
        author = item.get("author") or "?"
        return f"[item {n}] {origin} from {author}: {_q(_text(item.get('content')))}"
    rest = {k: v for k, v in item.items() if k not in ("type", "id")}
    return f"[item {n}] {origin} {kind}: {_q(rest)}"


def render_items(items: list[dict[str, Any]]) -> str:
    """The whole rollout as numbered lines; item N is ``items[N-1]``. Not redacted: the caller redacts the text."""
    return "\n".join(render_item(n, item) for n, item in enumerate(items, 1))
