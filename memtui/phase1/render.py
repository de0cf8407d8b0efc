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

from typing import Any

import orjson

from memtui.citations.model import ENTRIES_OPEN, OPEN_TAG

ORIGIN_USER = "user"
ORIGIN_ASSISTANT = "assistant"
ORIGIN_TOOL_CALL = "tool call"
ORIGIN_TOOL_OUTPUT = "tool output"
ORIGIN_AGENT = "agent message"
ORIGIN_CONTEXT = "context"  # injected by the agent's tooling (``rollouts.user_words``): never the user's words
ORIGINS = (ORIGIN_USER, ORIGIN_ASSISTANT, ORIGIN_TOOL_CALL, ORIGIN_TOOL_OUTPUT, ORIGIN_AGENT, ORIGIN_CONTEXT)
CITES_MEMORY = "assistant, restating memory (carries a memory citation; not new evidence)"

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


def origin_of(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        return ORIGIN_USER if role == "user" else ORIGIN_CONTEXT if role == "context" else ORIGIN_ASSISTANT
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
    """``[item n] <origin>: <content>`` on one line."""
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
