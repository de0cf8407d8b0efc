"""Gemini CLI sessions (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``) into the thread model.

Read as Gemini CLI's own loader reads them (``loadConversationRecord``, packages/core/src/services/
chatRecordingService.ts, 0.61): one JSON record a line, appended as the session runs:

* the header, ``{sessionId, projectHash, startTime, lastUpdated, kind}`` (``kind`` ``main`` or ``subagent``; the
  legacy ``session-*.json`` is that header with a ``messages`` array, one object for the whole file);
* a message, ``{id, timestamp, type: user|gemini|info|error|warning, content, displayContent?, toolCalls?, model?}``.
  A record with an ``id`` already seen replaces it in place (a ``gemini`` turn is written again with its
  ``toolCalls`` and their results);
* ``{"$set": {...}}``: metadata (``lastUpdated``, ``summary``...); ``$set.messages`` replaces every message (the
  session's first record carries the ``<session_context>`` message so);
* ``{"$rewindTo": id}``: that message and every later one are gone (``/rewind``); an unknown id empties the session.

What the person typed is ``displayContent`` when Gemini CLI wrote one (``content`` then holds the ``@file`` text it
sent the model); ``<session_context>`` (GEMINI.md, the folder listing), ``<hook_context>`` (a hook's additional
context), tool responses and the harness's own continuations ("Please continue.", an AfterAgent hook's reason, both
recorded with the original prompt's ``displayContent``) are never the person's words. A sub-agent's file
(``kind: subagent``, under ``chats/<parent session id>/``) starts with the parent model's prompt, after its own
``<loaded_context>``: another model's words, kept as an ``agent_message``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts import jsonl
from memtui.adapters.rollouts.filter import context_item, parent_agent_item
from memtui.adapters.rollouts.model import PREVIEW_CHARS, FileResult, LineStats, Thread, iso_to_epoch
from memtui.adapters.rollouts.user_words import classify

KIND = "gemini"
SKIP_EMPTY = "empty file"
SKIP_NO_SESSION = "no Gemini CLI session header (no sessionId and projectHash)"
SKIP_SUPERSEDED = "a legacy .json session Gemini CLI rewrote as .jsonl (read there)"
PROJECT_ROOT_FILE = ".project_root"  # tmp/<project>/.project_root: the folder a project slug belongs to
# Context files Gemini CLI puts into a user-role record: the session's first message, and a sub-agent's first prompt
# (its GEMINI.md, as ``<loaded_context>`` ahead of the parent model's words).
INJECTED_STARTS = ("<session_context>", "<loaded_context>")
# Gemini CLI's continuation prompts: ``GeminiClient.sendMessageStream`` (the next-speaker check) sends this as the
# user's turn, recorded with the original prompt's ``displayContent``.
CONTINUE_PROMPT = "Please continue."
REFERENCED_FILES = "--- Content from referenced files ---"  # ``@file`` expansion (atCommandProcessor)
TITLE_CHARS = 200


@dataclass
class Session:
    """The messages that stand at the end of the file, in Gemini CLI's order, and the session's metadata."""

    meta: dict[str, Any] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    stats: LineStats = field(default_factory=LineStats)
    first: int | None = None  # the earliest timestamp of any record (epoch seconds)
    last: int | None = None

    @property
    def session_id(self) -> str | None:
        value = self.meta.get("sessionId")
        return value if isinstance(value, str) and value else None

    @property
    def is_session(self) -> bool:
        return self.session_id is not None and isinstance(self.meta.get("projectHash"), str)


def _seen(session: Session, value: Any) -> None:
    at = iso_to_epoch(value)
    if at is not None:
        session.first = at if session.first is None else min(session.first, at)
        session.last = at if session.last is None else max(session.last, at)


def _put(session: Session, message: dict[str, Any]) -> None:
    session.messages[message["id"]] = message  # a dict keeps the first insertion's place, as a JS Map does
    _seen(session, message.get("timestamp"))


def _is_message(record: dict[str, Any]) -> bool:
    return isinstance(record.get("id"), str)


def parse(data: bytes) -> Session:
    """Every record applied in order, as Gemini CLI's loader applies them."""
    session = Session()
    whole = _legacy_object(data)
    records = [whole] if whole is not None else [obj for _, obj in jsonl.iter_objects(data, session.stats)]
    if whole is not None:
        session.stats.lines = 1
    for record in records:
        if isinstance(record.get("$rewindTo"), str):
            ids = list(session.messages)
            target = record["$rewindTo"]
            for gone in ids[ids.index(target) :] if target in ids else ids:
                del session.messages[gone]
        elif _is_message(record):
            _put(session, record)
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                session.messages.clear()
                for message in update["messages"]:
                    if isinstance(message, dict) and _is_message(message):
                        _put(session, message)
            session.meta.update({k: v for k, v in update.items() if k != "messages"})
            _seen(session, update.get("lastUpdated"))
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            session.meta.update({k: v for k, v in record.items() if k != "messages"})
            for message in record.get("messages") or ():
                if isinstance(message, dict) and _is_message(message):
                    _put(session, message)
            _seen(session, record.get("startTime"))
            _seen(session, record.get("lastUpdated"))
    return session


def _legacy_object(data: bytes) -> dict[str, Any] | None:
    """The legacy ``session-*.json``: one pretty-printed object holding the header and ``messages`` (its first line
    is not a JSON object of its own, as every line of a ``.jsonl`` session is)."""
    body = data.removeprefix(jsonl.BOM).lstrip()
    first = body.split(b"\n", 1)[0]
    if not body.startswith(b"{"):
        return None
    try:
        orjson.loads(first)
        return None
    except orjson.JSONDecodeError:
        pass
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("messages"), list) else None


# --- items ---------------------------------------------------------------------------------------------------------


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return (
        [p if isinstance(p, dict) else {"text": p} for p in content if isinstance(p, (dict, str))]
        if isinstance(content, list)
        else []
    )


def _texts(content: Any) -> list[str]:
    return [p["text"] for p in _parts(content) if isinstance(p.get("text"), str)]


def _joined(content: Any) -> str:
    return "".join(_texts(content))


def _function_responses(content: Any) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in _parts(content) if isinstance(p.get("functionResponse"), dict)]


def _response_text(response: dict[str, Any]) -> str:
    body = response.get("response")
    if isinstance(body, dict):
        for key in ("output", "error"):
            if isinstance(body.get(key), str):
                return str(body[key])
        return orjson.dumps(body).decode()
    return body if isinstance(body, str) else ""


def _result_text(result: Any) -> str:
    """A tool call's recorded ``result``: a string, or parts (``functionResponse`` and text)."""
    if isinstance(result, str):
        return result
    out = []
    for part in _parts(result):
        if isinstance(part.get("functionResponse"), dict):
            out.append(_response_text(part["functionResponse"]))
        elif isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(t for t in out if t)


def _user_parts(message: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The person's words in a user message, and the context items around them."""
    words: list[str] = []
    context: list[dict[str, Any]] = []
    display = message.get("displayContent")
    sent = _texts(message.get("content"))
    typed = _texts(display) if display is not None else None
    after_files = False
    for text in sent:
        trimmed = text.strip()
        if trimmed.startswith(INJECTED_STARTS) or not trimmed:
            continue  # GEMINI.md and the folder listing: instructions, dropped like Codex's AGENTS.md
        if trimmed == REFERENCED_FILES.strip() or after_files:
            after_files = trimmed != "--- End of content ---"
            continue  # an @file's text, sent to the model, never typed
        fragment = classify(text)
        if fragment.kind == "context":
            context.append(context_item(fragment.label, fragment.text))
        elif fragment.kind == "user" and typed is None:
            words.append(fragment.text)
    for text in typed or ():
        fragment = classify(text)
        if fragment.kind == "user":
            words.append(fragment.text)
    return words, context


def _is_continuation(message: dict[str, Any], previous_display: str | None) -> bool:
    """A turn Gemini CLI sent for the person: "Please continue." (the next-speaker check) or an AfterAgent hook's
    reason, both recorded with the displayContent of the prompt that started the turn."""
    display = message.get("displayContent")
    if display is None:
        return False
    sent = _joined(message.get("content")).strip()
    if sent == CONTINUE_PROMPT:
        return True
    return (
        previous_display is not None
        and _joined(display) == previous_display
        and not sent.startswith(_joined(display).strip())
    )


def items(data: bytes, *, subagent: bool | None = None) -> list[dict[str, Any]]:
    """The memory items of a session (Responses-API dicts): the person's words as ``user`` messages, the model's
    text, its tool calls with their results; a sub-agent's prompt (another model's words) as an ``agent_message``."""
    session = parse(data)
    sub = session.meta.get("kind") == "subagent" if subagent is None else subagent
    out: list[dict[str, Any]] = []
    answered: set[str] = set()
    previous_display: str | None = None
    for message in session.messages.values():
        kind = message.get("type")
        if kind == "user":
            responses = _function_responses(message.get("content"))
            if responses:
                for response in responses:
                    call_id = str(response.get("id") or "")
                    if call_id not in answered:
                        answered.add(call_id)
                        out.append(
                            {"type": "function_call_output", "call_id": call_id, "output": _response_text(response)}
                        )
                continue
            if _is_continuation(message, previous_display):
                continue
            display = message.get("displayContent")
            previous_display = _joined(display) if display is not None else _joined(message.get("content"))
            words, context = _user_parts(message)
            out.extend(context)
            if words and sub:
                out.append(parent_agent_item("\n".join(words)))
            elif words:
                out.append(
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": w} for w in words]}
                )
        elif kind == "gemini":
            text = _joined(message.get("content"))
            if text.strip():
                out.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
            for call in message.get("toolCalls") or ():
                if not isinstance(call, dict):
                    continue
                call_id = str(call.get("id") or "")
                out.append(
                    {
                        "type": "function_call",
                        "name": str(call.get("name", "")),
                        "arguments": orjson.dumps(call.get("args") or {}).decode(),
                        "call_id": call_id,
                    }
                )
                if call.get("result") is not None:
                    answered.add(call_id)
                    out.append(
                        {"type": "function_call_output", "call_id": call_id, "output": _result_text(call["result"])}
                    )
        # info / error / warning: Gemini CLI's own notices, and thoughts: dropped like reasoning
    return out


# --- the index row -------------------------------------------------------------------------------------------------


def project_root(path: Path, project_hash: str | None, gemini_dir: Path) -> str | None:
    """The folder the session ran in: ``tmp/<project>/.project_root`` (the slug's owner, Gemini CLI's
    ``ProjectRegistry``) when its sha256 is the header's ``projectHash``, else the ``projects.json`` entry whose
    sha256 it is (a legacy ``tmp/<sha256>/`` folder)."""
    project_dir = _project_dir(path)
    marker = project_dir / PROJECT_ROOT_FILE if project_dir is not None else None
    try:
        root = marker.read_text(encoding="utf-8").strip() if marker is not None else ""
    except OSError:
        root = ""
    if root and (project_hash is None or _sha(root) == project_hash):
        return root
    try:
        projects = orjson.loads((gemini_dir / "projects.json").read_bytes()).get("projects", {})
    except (OSError, orjson.JSONDecodeError, AttributeError):
        projects = {}
    for folder in projects if isinstance(projects, dict) else ():
        if isinstance(folder, str) and _sha(folder) == project_hash:
            return folder
    return root or None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _project_dir(path: Path) -> Path | None:
    """``tmp/<project>`` of ``tmp/<project>/chats/<file>`` or ``tmp/<project>/chats/<parent>/<file>``."""
    for parent in path.parents:
        if parent.name == "chats":
            return parent.parent
    return None


def parent_session(path: Path) -> str | None:
    """A sub-agent's parent session: the folder it is written in (``chats/<parent session id>/<id>.jsonl``)."""
    return path.parent.name if path.parent.name != "chats" else None


def _title(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def index_file(path: Path, data: bytes, *, size: int, mtime_ns: int, now: int, gemini_dir: Path) -> FileResult:
    """The index row of one Gemini CLI session, or the reason it has none. Dates come from the records (the
    header's ``startTime``, the messages' timestamps, ``lastUpdated``), the file time only when they have none."""
    result = FileResult(path=str(path), source_kind=KIND, size=size, mtime_ns=mtime_ns)
    if jsonl.is_blank(data):
        result.reason = SKIP_EMPTY
        return result
    if path.suffix == ".json" and path.with_suffix(".jsonl").exists():
        result.reason = SKIP_SUPERSEDED
        return result
    session = parse(data)
    result.lines, result.skipped_lines = session.stats.lines, session.stats.skipped
    if not session.is_session:
        result.reason = SKIP_NO_SESSION
        return result
    sub = session.meta.get("kind") == "subagent" or parent_session(path) is not None
    parent = parent_session(path) if sub else None
    session_id = str(session.session_id)
    thread_id = f"{parent}:{session_id}" if parent and not session_id.startswith(parent) else session_id
    memory = items(data, subagent=sub)
    preview = ""
    for item in memory:
        if item.get("role") == "user" or (sub and item.get("type") == "agent_message"):
            preview = redact_text("\n".join(p["text"] for p in item["content"]).strip())[:PREVIEW_CHARS]
            break
    summary = session.meta.get("summary")
    title = redact_text(summary.strip())[:PREVIEW_CHARS] if isinstance(summary, str) and summary.strip() else None
    model = next(
        (
            m["model"]
            for m in session.messages.values()
            if m.get("type") == "gemini" and isinstance(m.get("model"), str)
        ),
        None,
    )
    cwd = project_root(path, session.meta.get("projectHash"), gemini_dir)
    if cwd is None and isinstance(session.meta.get("directories"), list) and session.meta["directories"]:
        cwd = str(session.meta["directories"][0])
    created = session.first  # a resumed session's file holds a second header, with a later startTime
    updated = session.last or created or mtime_ns // 1_000_000_000
    result.thread = Thread(
        id=thread_id,
        source_kind=KIND,
        path=str(path),
        cwd=cwd,
        originator="gemini_cli",
        session_source="subagent" if sub else "cli",
        parent_thread_id=parent,
        model=model,
        created_at=created,
        updated_at=max(updated, created or 0),
        preview=preview,
        title=title or (_title(preview) if preview else None),
        items=len(session.messages),
        bytes=size,
        skipped_lines=session.stats.skipped,
        ingest_reason=session.stats.describe(),
        ingested_at=now,
    )
    result.reason = result.thread.ingest_reason
    return result
