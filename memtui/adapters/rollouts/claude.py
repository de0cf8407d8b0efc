"""Claude Code transcripts (``$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl``) into the thread model.

Lines are ``{"type": "user"|"assistant"|"summary"|"system"|..., "sessionId", "cwd", "gitBranch", "isSidechain",
"timestamp", "message": {"role", "content"}}``; ``content`` is a string or a list of blocks (text, tool_use,
tool_result, thinking). A transcript whose lines are sidechain lines is a sub-agent's (session_source
``subagent``, its parent the session it belongs to); a main session is ``cli``. Summary lines give the title.
Unlike Codex lines the field order varies, so the head is read line by line until every fact is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts import jsonl
from memtui.adapters.rollouts.claude_tree import is_prompt_line
from memtui.adapters.rollouts.claude_tree import parent_of as claude_parent
from memtui.adapters.rollouts.filter import claude_items, queued_prompt
from memtui.adapters.rollouts.model import (
    PREVIEW_CHARS,
    ClaudeLine,
    FileResult,
    LineStats,
    Thread,
    content_text,
    iso_to_epoch,
)
from memtui.adapters.rollouts.user_words import CLAUDE_INJECTED_FLAGS, user_words

SKIP_EMPTY = "empty file"
SKIP_NO_SESSION = "no Claude Code session lines (no sessionId)"
_HEAD_LINES = 400  # lines read at most for the head facts
_SETTLED = 20  # summary (title) lines come first; past this, stop as soon as the facts are known


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
TITLE_CHARS = 200


def user_text(obj: dict[str, Any]) -> str | None:
    """The person's own words in a user line (``user_words``): not tool results, meta or compaction-summary
    lines, command wrappers, interrupt markers or reminders."""
    if obj.get("type") != "user" or any(obj.get(flag) for flag in CLAUDE_INJECTED_FLAGS):
        return None
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return user_words(content)
    for block in content if isinstance(content, list) else ():
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        words = user_words(text) if isinstance(text, str) else None
        if words:
            return words
    return None


def _summary_of_this_file(data: bytes, obj: dict[str, Any]) -> str | None:
    """A ``summary`` line's text when its ``leafUuid`` is a message of this file. Claude Code also writes
    summaries of other sessions into a transcript; those say nothing about this one."""
    summary, leaf = obj.get("summary"), obj.get("leafUuid")
    if not isinstance(summary, str) or not summary.strip() or not isinstance(leaf, str) or not leaf:
        return None
    needle = b'"uuid":"' + leaf.encode() + b'"'
    if data.find(needle) < 0 and data.find(b'"uuid": "' + leaf.encode() + b'"') < 0:
        return None
    return summary.strip()


def first_prompt_stands(data: bytes, head_parents: dict[str, str | None], uid: str | None) -> bool:
    """True when nothing shows that the first prompt (``uid``) lies on an abandoned branch. Since it is the first
    prompt, a branch replacing it must start at a prompt whose parent is one of its ancestors (or, when it is a
    root, a second root): only the few lines naming one of those parents are parsed, not the whole file."""
    if uid is None:
        return True
    chain: list[str | None] = []
    node = head_parents.get(uid)
    seen: set[str] = set()
    while True:
        chain.append(node)
        if node is None or node in seen or node not in head_parents:
            break
        seen.add(node)
        node = head_parents[node]
    spaced = b'"parentUuid": ' in data[:4096]  # Claude Code writes compact JSON; a re-serialised file may not
    sep = b'"parentUuid": ' if spaced else b'"parentUuid":'
    for parent in chain:
        for needle in (sep + (b"null" if parent is None else b'"' + parent.encode() + b'"'),):
            pos = data.find(needle)
            while pos >= 0:
                nxt, obj = jsonl.object_at(data, pos)
                if obj is not None and obj.get("uuid") != uid and is_prompt_line(obj) and not obj.get("isSidechain"):
                    return False
                pos = data.find(needle, max(nxt, pos + 1))
    return True


def custom_title(data: bytes, scan: jsonl.LineScan | None = None) -> str | None:
    """The title the person set (``/rename``): the last ``custom-title`` line's ``customTitle`` (found from the line
    heads when the scan has them, else by searching the bytes from the end)."""
    obj: dict[str, Any] | None = None
    if scan is not None and scan.heads is not None and scan.starts is not None:
        size = len(data) - (1 if data.endswith(b"\n") else 0)
        for index in range(len(scan.heads) - 1, -1, -1):
            if scan.heads[index].type == "custom-title":
                obj = jsonl.object_in(data, *scan.line_span(index, size))
                break
    else:
        for needle in (b'"type":"custom-title"', b'"type": "custom-title"'):
            pos = data.rfind(needle)
            if pos >= 0:
                obj = jsonl.object_at(data, pos)[1]
                break
    title = obj.get("customTitle") if obj else None
    return title.strip() if isinstance(title, str) and title.strip() else None


def standing_preview(data: bytes) -> str:
    """The first prompt of the conversation that stands (``filter.claude_items``), redacted and cut."""
    for item in claude_items(data, None):
        if item.get("type") == "message" and item.get("role") == "user":
            text = content_text(item.get("content")).strip()
            if text:
                return redact_text(text)[:PREVIEW_CHARS]
    return ""


def title_from_prompt(prompt: str) -> str:
    """The first line of the first real prompt, cut: the title when no summary of this file exists."""
    line = prompt.strip().split("\n", 1)[0].strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def index_file(path: Path, data: bytes, *, size: int, mtime_ns: int, now: int) -> FileResult:
    """The index row of one Claude Code transcript, or the reason it has none.

    The title is a ``summary`` line whose ``leafUuid`` is a message of this file, else the first real prompt.
    Dates come from the transcript (first and last timestamps), the file time only when it has none."""
    result = FileResult(path=str(path), source_kind="claude", size=size, mtime_ns=mtime_ns)
    if jsonl.is_blank(data):
        result.reason = SKIP_EMPTY
        return result
    session_id = cwd = branch = version = model = title = created = agent_id = None
    preview = ""
    sidechain: bool | None = None
    preview_uuid: str | None = None
    head_parents: dict[str, str | None] = {}  # uuid -> parent of the head's lines (the first prompt's ancestors)
    for lineno, obj in jsonl.iter_head_objects(data):
        kind = obj.get("type")
        if isinstance(obj.get("uuid"), str) and not preview:
            head_parents[obj["uuid"]] = claude_parent(obj)
        if kind == "summary" and title is None:
            summary = _summary_of_this_file(data, obj)
            if summary:
                title = redact_text(summary)[:PREVIEW_CHARS]
        if kind == "attachment" and not preview:
            queued = queued_prompt(obj)
            if queued and queued.strip():
                preview = redact_text(queued.strip())[:PREVIEW_CHARS]
                preview_uuid = _str(obj.get("uuid"))
        if kind not in ("user", "assistant", "system"):
            continue
        session_id = session_id or _str(obj.get("sessionId"))
        cwd = cwd or _str(obj.get("cwd"))
        branch = branch or _str(obj.get("gitBranch"))
        version = version or _str(obj.get("version"))
        agent_id = agent_id or _str(obj.get("agentId"))
        created = created or iso_to_epoch(obj.get("timestamp"))
        if sidechain is None and kind in ("user", "assistant"):
            sidechain = bool(obj.get("isSidechain"))
        if kind == "assistant" and model is None and isinstance(obj.get("message"), dict):
            model = _str(obj["message"].get("model"))
        if not preview and (sidechain or not obj.get("isSidechain")):
            text = user_text(obj)
            if text and text.strip():
                preview = redact_text(text.strip())[:PREVIEW_CHARS]
                preview_uuid = _str(obj.get("uuid"))
        if session_id and ((preview and model and lineno > _SETTLED) or lineno >= _HEAD_LINES):
            break
    scan = jsonl.quick_scan(data, b"{", b"}\n{")
    stats = scan.stats
    result.lines, result.skipped_lines = stats.lines, stats.skipped
    result._scan = scan
    stem = path.name.removesuffix(".zst").removesuffix(".jsonl")
    is_sub = bool(sidechain) or path.parent.name == "subagents" or stem.startswith("agent-")
    if not session_id and is_sub and path.parent.name == "subagents":
        session_id = path.parent.parent.name  # <session>/subagents/agent-<id>.jsonl
    if not session_id:
        result.reason = SKIP_NO_SESSION
        return result
    if is_sub:
        # A sub-agent transcript carries its parent's sessionId; its file name (agent-<id>) is unique only within
        # that session, so the id is qualified by it (the same name under another session is another thread).
        name = stem if stem != session_id else f"agent-{agent_id or 'sidechain'}"
        thread_id, parent = f"{session_id}:{name}", session_id
    else:
        # Claude Code names a session's file after it; a resumed session copies earlier lines (with the old
        # sessionId) into its new file, so the name, when it is a session id, is what tells the files apart.
        thread_id, parent = (stem if _UUID.match(stem) else session_id), None
    if not is_sub and not first_prompt_stands(data, head_parents, preview_uuid):
        preview = standing_preview(data)
    named = custom_title(data, scan)
    if named:
        title = redact_text(named)[:PREVIEW_CHARS]
    if title is None and preview:
        title = title_from_prompt(preview)
    result.thread = Thread(
        id=thread_id,
        source_kind="claude",
        path=str(path),
        cwd=cwd,
        originator="claude_code",
        cli_version=version,
        session_source="subagent" if is_sub else "cli",
        source_detail=agent_id if is_sub else None,
        parent_thread_id=parent,
        git_branch=branch,
        model=model,
        created_at=created,
        updated_at=jsonl.transcript_updated_at(data, created, mtime_ns),
        preview=preview,
        title=title,
        items=stats.records,
        bytes=size,
        skipped_lines=stats.skipped,
        ingest_reason=stats.describe(),
        ingested_at=now,
    )
    result.reason = result.thread.ingest_reason
    return result


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_line(lineno: int, obj: dict[str, Any]) -> ClaudeLine:
    """One decoded transcript line as a ``ClaudeLine`` (unknown ``type`` values are kept)."""
    data = {**obj, "lineno": lineno}
    if not isinstance(data.get("type"), str):
        data["type"] = "unknown"
    if not isinstance(data.get("message"), dict):
        data.pop("message", None)
    try:
        return ClaudeLine.model_validate(data)
    except ValueError:
        return ClaudeLine(lineno=lineno, type=data["type"])


def iter_lines(path: Path, stats: LineStats | None = None) -> Iterator[ClaudeLine]:
    data, _ = jsonl.read_bytes(path)
    for lineno, obj in jsonl.iter_objects(data, stats):
        yield parse_line(lineno, obj)
