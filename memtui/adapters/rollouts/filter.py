"""The memory-relevant part of a rollout (what Codex keeps), as Phase 1 and the conversation view read it.

Codex: ``response_item`` lines pass ``sanitize_response_item`` (developer messages dropped; only the item types
of ``should_persist_response_item_for_memories`` kept); ``inter_agent_communication`` lines become
``agent_message`` items; every other line type is dropped (session_meta, turn_context, compacted, world_state,
token_usage_record, inter_agent_communication_metadata, unknown), except the events that carry the person's words
where no user message does: ``user_message`` (Codex Desktop) and, in paginated history (Codex 0.16x), ``item_completed``
with a ``UserMessage`` item (a paginated file writes every prompt both ways: it is read once). The oldest format
(a bare header line, then bare response items) is read the same way. A paginated fork's or revert's file starts
from the prefix its ``history_base`` names (``codex_state.history_prefix``): a fork's inherited turns are the
parent's, shown as ``context`` (``INHERITED``), never said again; a revert's prefix is the thread's own history.

Claude Code transcripts are mapped onto the same Responses-API item shapes so that everything downstream is
source-agnostic: user text -> ``message``/user/``input_text``, assistant text -> ``message``/assistant/
``output_text``, ``tool_use`` -> ``function_call``, ``tool_result`` -> ``function_call_output``; thinking,
sidechain, meta, compaction-summary, system and summary lines are dropped.

In user messages of both, only the person's own words stay a ``user`` message (``user_words.classify``, one
decision shared with previews, titles and the offline extractor): injected context Codex keeps for its model
(``<environment_context>``, ``<subagent_notification>``) becomes a ``context`` message, and all other injected
text (instruction files, compaction summaries, interrupt markers, command wrappers and output) is dropped.

The result is NOT redacted: the caller redacts the serialized string as a whole, after serializing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.rollouts import claude_tree, codex_state, jsonl
from memtui.adapters.rollouts.claude_tree import SpillReader
from memtui.adapters.rollouts.model import CALL_TYPES, OUTPUT_TYPES, content_text
from memtui.adapters.rollouts.user_words import CLAUDE_INJECTED_FLAGS, classify, classify_kind, user_words

# should_persist_response_item_for_memories (codex-rs/rollout/src/policy.rs)
PERSISTED_ITEM_TYPES = CALL_TYPES | OUTPUT_TYPES | {"agent_message"}

# Bytes of a line that hold the envelope type and the payload type in Codex's field order (``timestamp``,
# ``ordinal``, ``type``, ``payload``), and for an ``item_completed`` event the type of its item (after two ids).
_HEAD = 320
CONTEXT_ROLE = "context"  # injected context kept for the model, never the user's words (see ``user_words``)
INHERITED = "inherited_from_fork_parent"  # the label of a fork's inherited turns (context, never said again)


# A Claude Code sub-agent's transcript starts with the prompt the parent model wrote for it (and any later message the
# parent sends it) as user-role lines: another model's words, never the person's. They become ``agent_message``
# items from this author, as Codex records an inter-agent message.
PARENT_AGENT = "parent agent"


def parent_agent_item(text: str) -> dict[str, Any]:
    """A user-role text of a sub-agent's transcript: the parent model's message to it, not the person's words."""
    return {"type": "agent_message", "author": PARENT_AGENT, "content": [{"type": "input_text", "text": text}]}


def context_item(label: str, text: str) -> dict[str, Any]:
    """Injected context moved out of a user message: shown to the model as context, never as the user."""
    return {"type": "message", "role": CONTEXT_ROLE, "label": label, "content": [{"type": "input_text", "text": text}]}


def content_item_kinds(item: dict[str, Any]) -> list[str] | None:
    """``internal_chat_message_metadata_passthrough.content_item_kinds`` of a message (current Codex): what made
    each content part (``user.text``, ``hooks.additional_context``, ``agents_md.instructions``...); None when absent."""
    meta = item.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    if not isinstance(kinds, list) or not kinds:
        return None
    return [k if isinstance(k, str) else "" for k in kinds]


def user_message_items(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A user message as memory items, in order: runs of the user's own words (and images) stay a user message,
    injected context becomes context items, everything else injected is dropped (``user_words.classify``)."""
    content = item.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        return []
    kinds = content_item_kinds(item)
    if kinds is not None and len(kinds) != len(content):
        # Kinds that do not pair with the parts: the whole message is harness context only when none is the user's
        # (``rollout_input.rs``: all kinds outside ``user.*``), else the parts are judged by their text.
        whole = kinds[0] if kinds and not any(k.startswith("user.") for k in kinds) else None
        kinds = [whole] * len(content) if whole else None
    out: list[dict[str, Any]] = []
    run: list[Any] = []
    changed = False

    def flush() -> None:
        if run:
            out.append({**item, "content": list(run)})
            run.clear()

    for index, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") in ("input_text", "text") and isinstance(part.get("text"), str):
            kind = kinds[index] if kinds is not None else None
            fragment = classify_kind(kind, part["text"]) if kind else classify(part["text"])
            if fragment.kind == "user":
                run.append(part if fragment.text == part["text"] else {**part, "text": fragment.text})
                changed |= fragment.text != part["text"]
                continue
            changed = True
            if fragment.kind == "context":
                flush()
                out.append(context_item(fragment.label, fragment.text))
        else:
            run.append(part)
    if not changed and not out:
        return [item] if run else []
    flush()
    return out


def sanitize_response_item(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Codex's ``sanitize_response_item_for_memories``, then the user's words told from injected text:
    the items to keep for this one (none, one, or a user message split around context)."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role == "developer":
            return []
        if role != "user":
            return [item]
        return user_message_items(item)
    return [item] if kind in PERSISTED_ITEM_TYPES else []


def inter_agent_to_item(comm: dict[str, Any]) -> dict[str, Any]:
    """``InterAgentCommunication::to_model_input_item``: an ``agent_message`` response item."""
    author, recipient = comm.get("author", ""), comm.get("recipient", "")
    encrypted = comm.get("encrypted_content")
    if encrypted is not None:
        message_type = "NEW_TASK" if comm.get("trigger_turn") else "MESSAGE"
        content = [
            {
                "type": "input_text",
                "text": f"Message Type: {message_type}\nTask name: {recipient}\nSender: {author}\nPayload:\n",
            },
            {"type": "encrypted_content", "encrypted_content": encrypted},
        ]
    else:
        content = [{"type": "input_text", "text": comm.get("content", "")}]
    item: dict[str, Any] = {"type": "agent_message"}
    if comm.get("id") is not None:
        item["id"] = comm["id"]
    item.update(author=author, recipient=recipient, content=content)
    if comm.get("internal_chat_message_metadata_passthrough") is not None:
        item["internal_chat_message_metadata_passthrough"] = comm["internal_chat_message_metadata_passthrough"]
    return item


# --- Codex ------------------------------------------------------------------------------------------------------

_DROPPED_LINES = frozenset(
    {
        b"event_msg",
        b"turn_context",
        b"session_meta",
        b"compacted",
        b"world_state",
        b"token_usage_record",
        b"inter_agent_communication_metadata",
    }
)
_DROPPED_ITEMS = frozenset(
    {
        b"reasoning",
        b"compaction",
        b"compaction_summary",
        b"context_compaction",
        b"compaction_trigger",
        b"image_generation_call",
        b"additional_tools",
    }
)
# What each line kind of a Codex rollout gives (``kind`` or ``kind:payload type``; ``item_completed`` by its item's
# type), as ``tests/test_rollouts_codex_0169.py`` checks on real 0.169 sessions. Read: the memory items above, the
# events that carry the person's words or undo turns, and the lines the index reads (``rollouts.codex``). Skipped,
# knowingly: bookkeeping, settings, usage, world snapshots (``world_state`` repeats AGENTS.md and the environment,
# never the person), reasoning, and the events that repeat an item a ``response_item`` already holds.
CODEX_LINES_READ = frozenset(
    {
        "session_meta",  # the index: id, source, memory mode, history mode and base
        "turn_context",  # the index: model, cwd
        "inter_agent_communication",
        "event_msg:user_message",
        "event_msg:item_completed:UserMessage",
        "event_msg:thread_rolled_back",
        "response_item:message",
        *(f"response_item:{t}" for t in sorted(PERSISTED_ITEM_TYPES)),
    }
)
CODEX_LINES_SKIPPED = frozenset(
    {
        *(k.decode() for k in _DROPPED_LINES if k not in (b"event_msg", b"turn_context", b"session_meta")),
        *(f"response_item:{k.decode()}" for k in _DROPPED_ITEMS),
        "event_msg:item_completed:AgentMessage",  # the assistant message's response_item
        "event_msg:item_completed:CollabAgentToolCall",  # the spawn call's function_call
        "event_msg:item_completed:Reasoning",
        "event_msg:item_completed:CommandExecution",
        "event_msg:task_started",
        "event_msg:task_complete",
        "event_msg:thread_settings_applied",
        "event_msg:token_count",
        "event_msg:turn_aborted",
        "event_msg:agent_message",
        "event_msg:agent_reasoning",
        "event_msg:exec_command_begin",
        "event_msg:exec_command_end",
    }
)
_TYPE = b'"type":"'
_USER_MESSAGE_EVENT = b'"payload":{"type":"user_message"'
_ROLLBACK_EVENT = b'"payload":{"type":"thread_rolled_back"'
_ITEM_COMPLETED_EVENT = b'"payload":{"type":"item_completed"'
_USER_MESSAGE_ITEM = b'"item":{"type":"UserMessage"'
_PAYLOAD_TYPE = b'"payload":{"type":"'


def _droppable(line: bytes) -> bool:
    """True when the line's head alone shows it can only be dropped (Codex writes ``timestamp``, ``type``,
    ``payload`` in that order and the item's ``type`` first): saves parsing event_msg and reasoning blobs.
    ``user_message`` events and ``item_completed`` events of a ``UserMessage`` are read: some prompts exist only
    there; ``thread_rolled_back`` events undo turns."""
    head = line[:_HEAD]
    i = head.find(_TYPE)
    if i < 0:
        return False
    i += len(_TYPE)
    kind = head[i : head.find(b'"', i)]
    if kind == b"event_msg":
        if _ITEM_COMPLETED_EVENT in head:
            return _USER_MESSAGE_ITEM not in head
        return _USER_MESSAGE_EVENT not in head and _ROLLBACK_EVENT not in head
    if kind in _DROPPED_LINES:
        return True
    if kind != b"response_item":
        return False
    j = head.find(_PAYLOAD_TYPE, i)
    if j < 0:
        return False
    j += len(_PAYLOAD_TYPE)
    return head[j : head.find(b'"', j)] in _DROPPED_ITEMS


def _kept_lines(data: bytes) -> Iterator[tuple[bytes, bool, int]]:
    """``(stripped line, is_last, start offset)`` of the lines ``jsonl.iter_raw_lines`` yields, less those
    ``_droppable`` by their head: judged on a slice of the head, so the bytes of a dropped line (reasoning blobs,
    events) are never copied."""
    n = len(data)
    ends_open = not data.endswith(b"\n")
    pos = 3 if data.startswith(jsonl.BOM) else 0  # the BOM that may open line one
    find = data.find
    while pos < n:
        end = find(b"\n", pos)
        if end < 0:
            end = n
        stop = end - 1 if end > pos and data[end - 1] == 13 else end  # a CR before the newline is not content
        head = data[pos : min(stop, pos + _HEAD)]
        if head and not head.isspace():
            if not _droppable(head):
                yield data[pos:stop], ends_open and end == n, pos
        elif head and not data[pos:stop].isspace():
            line = data[pos:stop]  # starts with more whitespace than a head holds
            if not _droppable(line):
                yield line, ends_open and end == n, pos
        pos = end + 1


def _event_user_text(payload: dict[str, Any]) -> str | None:
    """The person's words in a ``user_message`` event (older Codex also sent injected context this way, with a
    ``kind`` other than ``plain``)."""
    message = payload.get("message")
    if not isinstance(message, str) or payload.get("kind") not in (None, "plain"):
        return None
    return user_words(message)


def _completed_user_text(payload: dict[str, Any]) -> str | None:
    """The person's words in an ``item_completed`` event of a ``UserMessage`` item (paginated history): its text
    parts, judged like any user text."""
    item = payload.get("item")
    if not isinstance(item, dict) or item.get("type") != "UserMessage":
        return None
    parts = item.get("content")
    texts = [p["text"] for p in parts or () if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return user_words("\n".join(texts)) if texts else None


def _response_payload(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The response item of a line: the envelope's payload (Codex writes item ``metadata`` beside ``payload``,
    never inside it: ``RolloutLine``), or the bare item of the pre-``session_meta`` format."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind == "response_item" and isinstance(payload, dict):
        return payload
    if isinstance(kind, str) and payload is None and "timestamp" not in obj and "record_type" not in obj:
        return obj  # the oldest format: response items written bare, one per line
    return None


def _is_user_turn(what: str, value: dict[str, Any]) -> bool:
    return what == "event" or (value.get("type") == "message" and value.get("role") == "user")


Parsed = list[tuple[str, dict[str, Any], bool]]  # (item | event, value, inherited from a fork's parent)


def roll_back(parsed: Parsed, num_turns: Any) -> None:
    """``thread_rolled_back`` (codex-rs ``ThreadRolledBackEvent { num_turns }``): the last ``num_turns`` user turns
    are undone, as Codex drops them when it rebuilds the history; a turn starts at a user message (a user message
    and its ``user_message`` event are one turn)."""
    if not isinstance(num_turns, int) or isinstance(num_turns, bool) or num_turns <= 0:
        return
    starts: list[int] = []
    for index, (what, value, _) in enumerate(parsed):
        if not _is_user_turn(what, value):
            continue
        if starts and all(_is_user_turn(*parsed[j][:2]) for j in range(starts[-1], index + 1)):
            continue  # the event that repeats the message just before it: the same turn
        starts.append(index)
    if starts:
        del parsed[starts[-min(num_turns, len(starts))] :]


def _inherited(item: dict[str, Any]) -> dict[str, Any] | None:
    """A fork's inherited item, as its Phase 1 input holds it: the parent's messages (its person's words and its
    assistant's) as context, said once in the parent, never again here; its tool calls and outputs left to the
    parent's own extraction; context stays context."""
    if item.get("type") == "message":
        if item.get("role") == CONTEXT_ROLE:
            return item
        text = content_text(item.get("content")).strip()
        return context_item(INHERITED, text) if text else None
    if item.get("type") == "agent_message":
        text = content_text(item.get("content")).strip()
        return context_item(INHERITED, text) if text else None
    return None


def codex_items(data: bytes, inherited_until: int = 0) -> list[dict[str, Any]]:
    """The memory items of a Codex rollout's bytes. Lines that can only be dropped are not even parsed.

    A ``user_message`` or ``item_completed`` ``UserMessage`` event whose text no user message carries (Codex Desktop
    keeps some prompts only there) becomes a user message at its place; one that repeats a user message is a
    duplicate and is dropped. ``inherited_until``: the bytes before it are another thread's history (a fork's
    parent): its items become context (``_inherited``), after rollbacks and dedup."""
    parsed: Parsed = []
    said: Counter[str] = Counter()
    loads = orjson.loads
    for line, last, start in _kept_lines(data):
        inherited = start < inherited_until
        try:
            obj = loads(line)
        except orjson.JSONDecodeError:
            obj = jsonl.loads_line(line, last=last)  # the rare path: repairs, lone surrogates
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        payload = obj.get("payload")
        if kind == "event_msg":
            event = payload.get("type") if isinstance(payload, dict) else None
            if event in ("user_message", "item_completed"):
                assert isinstance(payload, dict)
                text = _event_user_text(payload) if event == "user_message" else _completed_user_text(payload)
                if text:
                    parsed.append(("event", {"text": text}, inherited))
            elif event == "thread_rolled_back":
                assert isinstance(payload, dict)
                roll_back(parsed, payload.get("num_turns"))
            continue
        if kind == "inter_agent_communication" and isinstance(payload, dict):
            parsed.append(("item", inter_agent_to_item(payload), inherited))
            continue
        item = _response_payload(obj)
        if item is None:
            continue
        if item.get("type") in PERSISTED_ITEM_TYPES:  # kept as is (``sanitize_response_item``), never a message
            parsed.append(("item", item, inherited))
            continue
        for kept in sanitize_response_item(item):
            parsed.append(("item", kept, inherited))
    for what, kept, _ in parsed:
        if what == "item" and kept.get("type") == "message" and kept.get("role") == "user":
            texts = [p["text"].strip() for p in kept["content"] if isinstance(p, dict) and "text" in p]
            said.update(texts)
            if len(texts) > 1:
                said["\n".join(texts)] += 1
    out: list[dict[str, Any]] = []
    for what, value, inherited in parsed:
        if what == "item":
            item = _inherited(value) if inherited else value
        elif said[value["text"]] > 0:
            said[value["text"]] -= 1
            continue
        else:
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": value["text"]}]}
            item = _inherited(item) if inherited else item
        if item is not None:
            out.append(item)
    return out


def codex_items_at(path: Path | None, data: bytes) -> list[dict[str, Any]]:
    """``codex_items`` of a file read from where its history begins: a paginated fork's or revert's prefix
    (``codex_state.history_prefix``, found from ``path``) first, then its own lines."""
    prefix = codex_state.history_prefix(path, data) if path is not None else None
    if prefix is None or not prefix.data:
        copied = codex_state.legacy_fork_copied(path, data) if path is not None and prefix is None else 0
        items = codex_items(data, inherited_until=copied)
    else:
        inherited = prefix.inherited_bytes(codex_state.thread_id_of(data))
        if inherited and path is not None and not codex_state.parents_enabled(path, prefix):
            # A parent whose person turned its memory off: its words reach no memory, not even through a fork.
            items = codex_items(prefix.data[inherited:] + data)
        else:
            items = codex_items(prefix.data + data, inherited_until=inherited)
    parent = codex_state.spawning_parent(data)
    return [_from_parent_agent(i, parent) for i in items] if parent is not None else items


def _from_parent_agent(item: dict[str, Any], parent: str) -> dict[str, Any]:
    """In a sub-agent's thread a user-role prompt is the task its parent agent gave (Codex records it as
    ``user.text`` with a ``user`` provenance, like a person's): an agent message from the parent, never the user."""
    if item.get("type") != "message" or item.get("role") != "user":
        return item
    return {"type": "agent_message", "author": parent, "recipient": "", "content": item.get("content", [])}


# --- Claude Code ------------------------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _claude_blocks(content: Any) -> Iterable[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def queued_prompt(obj: dict[str, Any]) -> str | None:
    """The prompt of an ``attachment`` line of type ``queued_command``: what the person typed while Claude Code was
    busy, delivered into the running turn with no ``user`` line of its own. Only a human's prompt counts: another
    session's message (``origin.kind`` ``peer``), an automatic continuation, a task notification or a meta one is not
    the person's words."""
    attachment = obj.get("attachment")
    if obj.get("type") != "attachment" or not isinstance(attachment, dict):
        return None
    if attachment.get("type") != "queued_command" or attachment.get("isMeta"):
        return None
    if attachment.get("commandMode", "prompt") != "prompt":
        return None
    origin = attachment.get("origin")
    if isinstance(origin, dict) and origin.get("kind", "human") != "human":
        return None
    prompt = attachment.get("prompt")
    text = _text_of(prompt) if isinstance(prompt, (str, list)) else ""
    return user_words(text) if text else None


def claude_line_items(
    obj: dict[str, Any], *, sidechain_ok: bool = False, spill: SpillReader | None = None
) -> Iterator[dict[str, Any]]:
    """The Responses-API items one Claude Code transcript line maps to (none for dropped lines).

    ``sidechain_ok``: the file is a sub-agent's own transcript, where every line is a sidechain line; its user-role
    text is the parent model's (``parent_agent_item``), never the person's."""
    kind = obj.get("type")
    if kind == "attachment":
        words = queued_prompt(obj)
        if words:
            yield {"type": "message", "role": "user", "content": [{"type": "input_text", "text": words}]}
        return
    if kind not in ("user", "assistant") or (obj.get("isSidechain") and not sidechain_ok):
        return
    if kind == "user" and any(obj.get(flag) for flag in CLAUDE_INJECTED_FLAGS):
        return  # written by Claude Code: skill and command expansions, compaction summaries
    if kind == "assistant" and obj.get("isApiErrorMessage"):
        return  # "API Error: 529 ..." written by Claude Code when the request failed: not the assistant's words
    message = obj.get("message")
    if not isinstance(message, dict):
        return
    texts: list[dict[str, Any]] = []
    text_type = "input_text" if kind == "user" else "output_text"

    from_parent = kind == "user" and sidechain_ok and bool(obj.get("isSidechain"))

    def flush() -> Iterator[dict[str, Any]]:
        if texts and from_parent:
            yield parent_agent_item("\n".join(t["text"] for t in texts))
        elif texts:
            yield {"type": "message", "role": kind, "content": list(texts)}
        texts.clear()

    for block in _claude_blocks(message.get("content")):
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            if kind != "user":
                texts.append({"type": text_type, "text": block["text"]})
                continue
            fragment = classify(block["text"])
            if fragment.kind == "user":
                texts.append({"type": text_type, "text": fragment.text})
            elif fragment.kind == "context":
                yield from flush()
                yield context_item(fragment.label, fragment.text)
        elif btype == "tool_use" and kind == "assistant":
            yield from flush()
            yield {
                "type": "function_call",
                "name": str(block.get("name", "")),
                "arguments": orjson.dumps(block.get("input", {})).decode(),
                "call_id": str(block.get("id", "")),
            }
        elif btype == "tool_result":
            yield from flush()
            call_id = str(block.get("tool_use_id", ""))
            output = _text_of(block.get("content"))
            if spill is not None:
                output = spill.follow(call_id, output)
            yield {"type": "function_call_output", "call_id": call_id, "output": output}
        # thinking / redacted_thinking / image / unknown blocks: dropped like reasoning
    yield from flush()


def claude_items(data: bytes, path: Path | None = None) -> list[dict[str, Any]]:
    """The memory items of a Claude Code transcript: only the conversation that stands (``claude_tree``), sidechain
    lines only in a sub-agent's own file, tool output spilled to ``tool-results/`` followed when ``path`` is known."""
    lines = [obj for _, obj in jsonl.iter_objects(data)]
    tree = claude_tree.standing(lines)
    sidechain_ok = tree.sub_agent_file
    spill = SpillReader(path) if path is not None else None
    out: list[dict[str, Any]] = []
    for obj in lines:
        if tree.abandoned(obj):
            continue
        out.extend(claude_line_items(obj, sidechain_ok=sidechain_ok, spill=spill))
    return out


def serialize_items(items: list[dict[str, Any]]) -> str:
    """One compact JSON array, like ``serde_json::to_string(Vec<ResponseItem>)``."""
    return orjson.dumps(items).decode()
