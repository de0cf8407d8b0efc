"""Codex CLI rollouts: the index row from the head of a file, and typed line reading.

The index needs little: the first ``session_meta`` (id, cwd, source, git; the memory mode from the last one, as
Codex reads it), the first real user message
(the preview) and the first ``turn_context`` (the model). Each is found with a ``bytes.find`` for its exact
envelope text (``"type":"session_meta"`` can only occur unescaped as JSON structure, never inside a string), so
only a handful of lines are parsed whatever the file size. Whole-file facts are byte counts: lines, and a
clean-boundary count that proves every line is a well-formed record; only a file that fails that proof is parsed
line by line to count exactly what was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts import codex_state, jsonl
from memtui.adapters.rollouts.codex_names import thread_id_from_name
from memtui.adapters.rollouts.filter import codex_items, user_message_items
from memtui.adapters.rollouts.model import (
    PREVIEW_CHARS,
    CodexLine,
    Compacted,
    EventMsg,
    FileResult,
    InterAgentCommunication,
    LegacyHeader,
    LineStats,
    ResponseItem,
    SessionMeta,
    SessionSource,
    Thread,
    TurnContext,
    content_text,
    iso_to_epoch,
)
from memtui.adapters.rollouts.user_words import user_words

_LINE_START = b'{"timestamp":"'
_BOUNDARY = b'}\n{"timestamp":"'
_MAX_PREVIEW_CANDIDATES = 200
_ROLLBACK = "thread_rolled_back"
SKIP_EMPTY = "empty file"
SKIP_NO_META = "no session_meta and no thread id in the file name"
_DIRECT_SOURCES: dict[str, SessionSource] = {"cli": "cli", "vscode": "vscode", "exec": "exec", "mcp": "mcp"}
DEFAULT_SOURCE: SessionSource = "vscode"  # SessionSource::default() in codex-rs/protocol

_LINE_MODELS: dict[str, type[BaseModel]] = {
    "session_meta": SessionMeta,
    "response_item": ResponseItem,
    "event_msg": EventMsg,
    "turn_context": TurnContext,
    "compacted": Compacted,
    "inter_agent_communication": InterAgentCommunication,
}


def session_source(source: Any, payload: dict[str, Any]) -> tuple[SessionSource, str | None, str | None]:
    """Codex ``source`` -> (session_source, source_detail, parent_thread_id).

    A missing ``source`` (older CLIs wrote none) is Codex's own default, ``SessionSource::VSCode``
    (``#[default]`` in codex-rs/protocol): an interactive session, like Codex itself reads it."""
    parent = payload.get("parent_thread_id")
    if source is None:
        return DEFAULT_SOURCE, None, parent
    if isinstance(source, str):
        if source in _DIRECT_SOURCES:
            return _DIRECT_SOURCES[source], None, parent
        if source == "subagent":
            return "subagent", None, parent
        if source == "internal":
            return "internal", None, parent
        return "custom", source, parent
    if isinstance(source, dict) and source:
        key, value = next(iter(source.items()))
        if key == "custom":
            return "custom", value if isinstance(value, str) else None, parent
        if key == "subagent":
            return "subagent", _describe(value), parent or _find_key(value, "parent_thread_id")
        if key == "internal":
            return "internal", _describe(value), parent
        return "unknown", key, parent
    return "unknown", None, parent


def _describe(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value:
        first = next(iter(value))
        return first if isinstance(first, str) else None
    return None


def _find_key(value: Any, key: str) -> str | None:
    if isinstance(value, dict):
        found = value.get(key)
        if isinstance(found, str):
            return found
        for v in value.values():
            found = _find_key(v, key)
            if found:
                return found
    return None


def _first_envelope(data: bytes, type_name: str) -> dict[str, Any] | None:
    """The first line whose envelope ``type`` is ``type_name`` (searched lazily: usually within the head)."""
    needle = b'"type":"' + type_name.encode() + b'"'
    pos = data.find(needle)
    while pos >= 0:
        nxt, obj = jsonl.object_at(data, pos)
        if obj is not None and obj.get("type") == type_name and isinstance(obj.get("payload"), dict):
            return obj
        pos = data.find(needle, nxt)
    return None


def _last_envelope(data: bytes, type_name: str, thread_id: str | None) -> dict[str, Any] | None:
    """The last line whose envelope ``type`` is ``type_name`` and, for ``session_meta``, whose id is the thread's
    (searched from the end: the lines a user's mid-session change appends are the newest)."""
    needle = b'"type":"' + type_name.encode() + b'"'
    end = len(data)
    while (pos := data.rfind(needle, 0, end)) >= 0:
        start, _ = jsonl.line_bounds(data, pos)
        _, obj = jsonl.object_at(data, pos)
        if obj is not None and obj.get("type") == type_name and isinstance(obj.get("payload"), dict):
            payload = obj["payload"]
            if thread_id is None or (payload.get("id") or payload.get("session_id") or thread_id) == thread_id:
                return obj
        end = start
    return None


def memory_mode_of(data: bytes, thread_id: str | None = None, scan: jsonl.LineScan | None = None) -> str:
    """The thread's memory mode as Codex reads it (``rollout/src/metadata.rs``: the LAST ``session_meta``). Turning
    memories off mid-session appends a second ``session_meta`` with ``memory_mode: "disabled"``
    (``thread-store/src/local/update_thread_metadata.rs``); the first one still says what it said at the start.
    ``scan``: the file's line heads, when known, name the ``session_meta`` lines without a search of the bytes."""
    last = None
    if scan is not None and scan.heads is not None and scan.starts is not None:
        size = len(data) - (1 if data.endswith(b"\n") else 0)
        for index in range(len(scan.heads) - 1, -1, -1):
            if scan.heads[index].type != "session_meta":
                continue
            obj = jsonl.object_in(data, *scan.line_span(index, size))
            payload = obj.get("payload") if obj else None
            if isinstance(payload, dict) and (payload.get("id") or payload.get("session_id") or thread_id) == thread_id:
                last = obj
                break
    else:
        last = _last_envelope(data, "session_meta", thread_id)
    mode = last["payload"].get("memory_mode") if last else None
    return mode if isinstance(mode, str) and mode else "enabled"


def user_text(payload: dict[str, Any]) -> str | None:
    """The person's own words in a user ``message`` item or a ``user_message`` event (``user_words``)."""
    if payload.get("type") == "user_message":
        message = payload.get("message")
        if not isinstance(message, str) or payload.get("kind") not in (None, "plain"):
            return None
        return user_words(message)
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    # The same decision as the memory items (``content_item_kinds`` first, then the fragment's text).
    for item in user_message_items(payload):
        if item.get("role") != "user":
            continue
        for part in item.get("content") or ():
            text = part.get("text") if isinstance(part, dict) and part.get("type") in ("input_text", "text") else None
            if isinstance(text, str) and text:
                return text
    return None


def find_preview(data: bytes) -> str:
    """The first real user message: user messages (enveloped or bare) and user_message events, in file order."""
    for seen, pos in enumerate(_merged_positions(data, (b'"role":"user"', b'"type":"user_message"'))):
        if seen >= _MAX_PREVIEW_CANDIDATES:
            break
        _, obj = jsonl.object_at(data, pos)
        if not obj:
            continue
        payload = obj.get("payload") if obj.get("type") in ("response_item", "event_msg") else obj
        payload = payload if isinstance(payload, dict) else None
        text = user_text(payload) if payload else None
        if text and text.strip():
            return redact_text(text.strip())[:PREVIEW_CHARS]
    return ""


def rolled_back(data: bytes, scan: jsonl.LineScan | None = None) -> bool:
    """True when the rollout undoes turns (a ``thread_rolled_back`` event): its first prompt may be one of them.
    Told from the line heads the scan decoded when it has them, else by a search of the bytes."""
    if scan is not None and scan.heads is not None:
        return any(h.type == "event_msg" and h.payload is not None and h.payload.type == _ROLLBACK for h in scan.heads)
    return data.find(b'"' + _ROLLBACK.encode() + b'"') >= 0


def standing_preview(data: bytes) -> str:
    """The first prompt of the turns that stand (``filter.codex_items``, which undoes rolled-back turns); for a file
    with a history base, ``data`` is its prefix and its own lines (a fork's preview is its parent's first prompt, as
    Codex shows it)."""
    for item in codex_items(data):
        if item.get("type") == "message" and item.get("role") == "user":
            text = content_text(item.get("content")).strip()
            if text:
                return redact_text(text)[:PREVIEW_CHARS]
    return ""


def _merged_positions(data: bytes, needles: tuple[bytes, ...]) -> Iterator[int]:
    """Lazily, in file order, the start of each line holding any needle (each line once)."""
    nxt = {n: data.find(n) for n in needles}
    last_line = -1
    while True:
        live = [(pos, n) for n, pos in nxt.items() if pos >= 0]
        if not live:
            return
        pos, needle = min(live)
        nxt[needle] = data.find(needle, pos + len(needle))
        start, _ = jsonl.line_bounds(data, pos)
        if start != last_line:
            last_line = start
            yield pos


def line_accounting(data: bytes) -> jsonl.LineScan:
    """Exact line accounting (``jsonl.quick_scan``): no line parsed when every boundary is a clean record boundary."""
    return jsonl.quick_scan(data, _LINE_START, _BOUNDARY)


def legacy_header(data: bytes) -> LegacyHeader | None:
    """The header of the oldest rollout format (before ``session_meta``): the first line is a bare object with
    ``id`` and ``timestamp`` (and ``instructions``, later ``git``), followed by bare response items."""
    for _, obj in jsonl.iter_head_objects(data):
        if "type" in obj or "payload" in obj or not isinstance(obj.get("id"), str):
            return None
        try:
            return LegacyHeader.model_validate(obj)
        except ValueError:
            return None
    return None


_CWD_TAG = re.compile(rb"<cwd>([^<]{1,4096})</cwd>")


def _cwd_from_context(data: bytes) -> str | None:
    """The working directory named in the first ``<environment_context>`` (the oldest format has no other)."""
    m = _CWD_TAG.search(data)
    if not m:
        return None
    try:
        text = orjson.loads(b'"' + m.group(1) + b'"')  # the path is inside a JSON string: unescape it
    except orjson.JSONDecodeError:
        return None
    return text.strip() or None if isinstance(text, str) else None


def index_file(
    path: Path,
    data: bytes,
    *,
    size: int,
    mtime_ns: int,
    archived: bool,
    now: int,
    locate: codex_state.Locate | None = None,
) -> FileResult:
    """The index row of one Codex rollout, or the reason it has none.

    A paginated fork or revert (``history_base``) is previewed from its prefix and its own lines (``locate``
    finds the base's file; by default a search of the Codex home); its line counts and citations are its own.

    Dates come from the transcript: ``created_at`` from ``session_meta`` (or the old header), ``updated_at`` from
    the last line's timestamp; the file time only when the file holds no timestamp at all (a copied or synced
    folder gives every file a new mtime)."""
    result = FileResult(path=str(path), source_kind="codex", size=size, mtime_ns=mtime_ns)
    if jsonl.is_blank(data):
        result.reason = SKIP_EMPTY
        return result
    if not jsonl.looks_compact(data):
        data = jsonl.compact_lines(data)
    scan = line_accounting(data)
    stats = scan.stats
    result.lines, result.skipped_lines = stats.lines, stats.skipped
    result._scan = scan
    warnings = [w for w in (stats.describe(),) if w]

    found = _first_envelope(data, "session_meta")
    meta = SessionMeta.model_validate(found["payload"]) if found else None
    legacy = legacy_header(data) if meta is None else None
    if legacy is not None:
        meta = SessionMeta(id=legacy.id, timestamp=legacy.timestamp, cwd=legacy.cwd, git=legacy.git)
        warnings.insert(0, "pre-session_meta format")
    thread_id = meta.thread_id if meta else None
    if not thread_id:
        thread_id = thread_id_from_name(path.name)
        if not thread_id:
            result.reason = SKIP_NO_META
            return result
        warnings.insert(0, "no session_meta; id taken from the file name")
    payload = found["payload"] if found else {}
    source, detail, parent = session_source(meta.source if meta else None, payload)
    turn = _first_envelope(data, "turn_context")
    turn_payload = turn["payload"] if turn else {}
    prefix = codex_state.history_prefix(path, data, locate) if meta is not None and meta.history_base else None
    if prefix is not None and prefix.warning:
        warnings.append(prefix.warning)
    git = meta.git if meta else None
    created = iso_to_epoch((meta.timestamp if meta else None) or (found.get("timestamp") if found else None))
    updated = jsonl.transcript_updated_at(data, created, mtime_ns)
    cwd = (meta.cwd if meta else None) or turn_payload.get("cwd")
    if not cwd and legacy is not None:
        cwd = _cwd_from_context(data)
    result.thread = Thread(
        id=thread_id,
        source_kind="codex",
        path=str(path),
        cwd=cwd,
        originator=meta.originator if meta else None,
        cli_version=meta.cli_version if meta else None,
        session_source=source,
        source_detail=detail,
        parent_thread_id=parent,
        memory_mode=memory_mode_of(data, thread_id, scan)
        if found
        else (meta.memory_mode if meta else None) or "enabled",
        history_mode=(meta.history_mode if meta else None) or "legacy",
        git_branch=git.branch if git else None,
        git_commit=git.commit_hash if git else None,
        git_url=redact_text(git.repository_url) if git and git.repository_url else None,
        model=turn_payload.get("model") if isinstance(turn_payload.get("model"), str) else None,
        created_at=created,
        updated_at=updated,
        preview=standing_preview(prefix.data + data)
        if prefix is not None and prefix.data
        else standing_preview(data)
        if rolled_back(data, scan)
        else find_preview(data),
        items=stats.records,
        bytes=size,
        archived=archived,
        skipped_lines=stats.skipped,
        ingest_reason="; ".join(warnings) or None,
        ingested_at=now,
    )
    result.reason = result.thread.ingest_reason
    return result


def parse_line(lineno: int, obj: dict[str, Any]) -> CodexLine:
    """One decoded line as a ``CodexLine``; unknown line types keep their raw payload and no typed item."""
    raw_type = obj.get("type")
    line_type = raw_type if isinstance(raw_type, str) else "unknown"
    payload = obj.get("payload")
    model = _LINE_MODELS.get(line_type)
    item = None
    if model is not None and isinstance(payload, dict):
        try:
            item = model.model_validate(payload)
        except ValueError:
            item = None
    return CodexLine(lineno=lineno, timestamp=obj.get("timestamp"), type=line_type, payload=payload, item=item)


def iter_lines(path: Path, stats: LineStats | None = None) -> Iterator[CodexLine]:
    """Every readable line of a rollout as a typed ``CodexLine`` (bad lines counted in ``stats``)."""
    data, _ = jsonl.read_bytes(path)
    for lineno, obj in jsonl.iter_objects(data, stats):
        yield parse_line(lineno, obj)
