"""The normalized thread model (one per rollout file, Codex or Claude Code) and the rollout line models.

Line models follow the Codex rollout format and Claude Code transcripts. They are deliberately
loose (``extra="allow"``, every field optional but the tag): rollouts come from many agent versions and a newer
field must never make a line unreadable. Hot paths (ingest, the memory filter) work on plain dicts; these models
are the documented shape and what the readers hand to callers that want one typed line at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, overload

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

SourceKind = str  # the ``kind`` of a registered transcript source (``memtui.adapters.sources.registry``)
SessionSource = Literal["cli", "vscode", "exec", "mcp", "subagent", "internal", "custom", "unknown"]
# The sessions a person had with an agent, in its terminal or editor (Codex's INTERACTIVE_SESSION_SOURCES): the only
# ones Phase 1 reads. Every source maps its own session kinds onto ``SessionSource`` (a sub-agent is ``subagent``).
INTERACTIVE_SOURCES: tuple[SessionSource, ...] = ("cli", "vscode")
IngestStatus = Literal["indexed", "skipped", "missing"]

PREVIEW_CHARS = 1000  # the preview is the start of the first real user message, redacted before it is cut
CITATION_MARKER = b"citation"  # common to <oai-mem-citation>, <citation_entries> and "memory_citation"


def iso_to_epoch(value: Any) -> int | None:
    """RFC 3339 (``2026-07-01T09:12:44.512Z``) -> unix seconds; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- Codex -------------------------------------------------------------------------------------------------------


class GitInfo(_Loose):
    commit_hash: str | None = None
    branch: str | None = None
    repository_url: str | None = None


class HistoryBase(_Loose):
    """``session_meta.history_base`` (paginated history, Codex 0.16x): the first ``end_byte_offset`` bytes (the lines
    with ``ordinal`` below ``end_ordinal_exclusive``) of ``thread_id``'s file are this file's prefix."""

    thread_id: str = ""
    end_ordinal_exclusive: int | None = None
    end_byte_offset: int | None = None


class SessionMeta(_Loose):
    """``session_meta`` payload: ``SessionMeta`` fields flattened plus ``git`` (§15.1)."""

    id: str | None = None
    session_id: str | None = None
    forked_from_id: str | None = None
    parent_thread_id: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    originator: str | None = None
    cli_version: str | None = None
    source: Any = None  # "cli" | {"custom": name} | {"subagent": {...}} | {"internal": ...}
    thread_source: str | None = None
    agent_nickname: str | None = None
    agent_role: str | None = Field(default=None, alias="agent_type")
    model_provider: str | None = None
    memory_mode: str | None = None
    history_mode: str | None = None  # "legacy" | "paginated" (every new session since Codex 0.16x)
    history_base: HistoryBase | None = None
    git: GitInfo | None = None

    @property
    def thread_id(self) -> str | None:
        return self.id or self.session_id


class LegacyHeader(_Loose):
    """The first line of the oldest rollouts, before ``session_meta`` existed (Codex CLI spring 2025):
    ``{"id", "timestamp", "instructions"?, "git"?}``, followed by bare response items and ``record_type`` lines."""

    id: str
    timestamp: str | None = None
    instructions: str | None = None
    cwd: str | None = None
    git: GitInfo | None = None


class ResponseItem(_Loose):
    """A Responses-API item (§15.2); ``type`` tells the variant, unknown variants stay readable."""

    type: str = "other"
    role: str | None = None
    content: Any = None


class EventMsg(_Loose):
    type: str = "other"


class TurnContext(_Loose):
    turn_id: str | None = None
    cwd: str | None = None
    model: str | None = None


class Compacted(_Loose):
    message: str = ""
    replacement_history: list[dict[str, Any]] | None = None


class InterAgentCommunication(_Loose):
    id: str | None = None
    author: str = ""
    recipient: str = ""
    other_recipients: list[str] = Field(default_factory=list)
    content: str = ""
    encrypted_content: str | None = None
    trigger_turn: bool = False


class CodexLine(_Loose):
    """One rollout line: ``{timestamp, ordinal?, type, payload}``; ``item`` is the typed payload."""

    lineno: int
    timestamp: str | None = None
    type: str
    payload: Any = None
    item: SessionMeta | ResponseItem | EventMsg | TurnContext | Compacted | InterAgentCommunication | None = None


# --- Claude Code ------------------------------------------------------------------------------------------------


class ClaudeMessage(_Loose):
    role: str | None = None
    content: Any = None  # a string, or a list of blocks: text | tool_use | tool_result | thinking | image
    model: str | None = None


class ClaudeLine(_Loose):
    lineno: int
    type: str  # user | assistant | summary | system | ...
    sessionId: str | None = None
    cwd: str | None = None
    gitBranch: str | None = None
    isSidechain: bool = False
    isMeta: bool = False
    timestamp: str | None = None
    version: str | None = None
    agentId: str | None = None
    message: ClaudeMessage | None = None
    summary: str | None = None


# --- the normalized thread --------------------------------------------------------------------------------------


class LineStats(BaseModel):
    """What the tolerant reader saw. ``skipped`` lines were not used; ``repaired`` ones were (with U+FFFD)."""

    lines: int = 0
    blank: int = 0
    invalid_json: int = 0
    truncated_last: int = 0
    repaired_utf8: int = 0
    trailing_blank: int = 0  # empty lines ending the file: neither records nor bad lines

    @property
    def skipped(self) -> int:
        return self.blank + self.invalid_json + self.truncated_last

    @property
    def records(self) -> int:
        return self.lines - self.skipped - self.trailing_blank

    def describe(self) -> str | None:
        parts = [
            f"{n} {label}"
            for n, label in (
                (self.blank, "blank"),
                (self.invalid_json, "not JSON"),
                (self.truncated_last, "truncated last line"),
                (self.repaired_utf8, "invalid UTF-8 repaired"),
            )
            if n
        ]
        return ", ".join(parts) or None


class Thread(BaseModel):
    """One row of ``threads``: everything the index, Phase 1 eligibility and the UI need about a rollout."""

    id: str
    source_kind: SourceKind
    path: str
    cwd: str | None = None
    originator: str | None = None
    cli_version: str | None = None
    session_source: SessionSource = "unknown"
    source_detail: str | None = None
    parent_thread_id: str | None = None
    memory_mode: str = "enabled"
    history_mode: str = "legacy"
    git_branch: str | None = None
    git_commit: str | None = None
    git_url: str | None = None
    model: str | None = None
    created_at: int | None = None
    updated_at: int
    preview: str = ""  # redacted
    title: str | None = None  # redacted
    items: int = 0
    bytes: int = 0
    archived: bool = False
    skipped_lines: int = 0
    ingest_status: IngestStatus = "indexed"
    ingest_reason: str | None = None
    ingested_at: int = 0


class FileResult(BaseModel):
    """What reading one file produced: a thread, or the reason there is none; plus its line accounting."""

    path: str
    source_kind: SourceKind
    size: int
    mtime_ns: int
    thread: Thread | None = None
    reason: str | None = None  # skip reason when thread is None, else a warning
    lines: int = 0
    skipped_lines: int = 0
    citation_lines: list[int] = Field(default_factory=list)  # 1-based lines holding citation markers
    # ``jsonl.LineScan`` of the file (typed Any: jsonl imports this module): lets the citation search skip lines
    # that cannot hold one. Never stored.
    _scan: Any = PrivateAttr(default=None)

    @property
    def scan(self) -> Any:
        return self._scan

    @property
    def status(self) -> str:
        return "indexed" if self.thread is not None else "skipped"


# --- the transcript: memory items as one typed shape ---------------------------------------------------------------
#
# ``rollouts.filter`` writes the memory items as Responses-API dicts (the wire shape: what Phase 1 serializes and
# hashes). Every reader (the Phase 1 rendering, the offline extractor, trust classes, quotes, search, the detail
# screen) reads them through ``Transcript``: one list of call types, one text extractor, calls paired to outputs.

RawItem = Mapping[str, Any]  # one memory item as the filter wrote it

# What the agent asked a tool to do, and what came back (``should_persist_response_item_for_memories``).
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
# The calls that act (their arguments say what the agent did); a web or tool search only looks something up.
ACTION_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


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


def content_text(content: Any) -> str:
    """The text of a ``content`` (or list-shaped ``output``): a string as is, or the typed parts one per line, with
    an image or encrypted part named where it stood. The one text extractor every transcript reader uses."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        if isinstance(text, str):
            parts.append(text)
        elif part.get("type") == "input_image":
            parts.append("[image]")
        elif part.get("type") == "encrypted_content":
            parts.append("[encrypted content]")
    return "\n".join(parts)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _origin(raw: RawItem) -> Origin:
    kind = raw.get("type")
    if kind == "message":
        role = raw.get("role")
        if role == "user":
            return Origin.USER
        if role == "context":
            return Origin.CONTEXT
        return Origin.COMMENTARY if raw.get("phase") == "commentary" else Origin.ASSISTANT
    if kind in CALL_TYPES:
        return Origin.TOOL_CALL
    if kind == "agent_message":
        return Origin.AGENT
    return Origin.TOOL_OUTPUT  # an output, or anything else the filter kept: produced by the environment


def _arguments(raw: RawItem) -> Any:
    """What a call asked for: ``function_call`` arguments decoded from their JSON string (kept as the string when
    they are not JSON), a custom tool's input, a local shell call's command."""
    kind = raw.get("type")
    if kind == "function_call":
        args = raw.get("arguments")
        if isinstance(args, str):
            try:
                return orjson.loads(args)
            except orjson.JSONDecodeError:
                return args
        return args
    if kind == "custom_tool_call":
        return raw.get("input", "")
    if kind == "local_shell_call":
        action = raw.get("action")
        return action.get("command") if isinstance(action, dict) else None
    return None


def _item_text(raw: RawItem, origin: Origin) -> str:
    kind = raw.get("type")
    if kind == "tool_search_output":
        return _json(raw.get("tools", []))
    if kind in OUTPUT_TYPES:
        out = raw.get("output")
        return out if isinstance(out, str) else content_text(out) if isinstance(out, list) else _json(out)
    if origin is Origin.TOOL_CALL:
        return ""
    return content_text(raw.get("content"))


@dataclass(eq=False, slots=True)
class TranscriptItem:
    """One memory item, typed. ``number`` is its 1-based place in the transcript (what ``[item N]`` cites); a call
    knows its ``output`` and an output its ``call`` (paired by ``call_id``); ``raw`` is the wire dict."""

    number: int
    type: str
    origin: Origin
    raw: RawItem = field(repr=False)
    role: str | None = None
    text: str = ""  # message and agent message: their words; output: what came back; call: ""
    name: str = ""  # a call's tool name ("" when the item names none)
    arguments: Any = None  # a call's arguments (``_arguments``)
    call_id: str | None = None
    label: str | None = None  # a context item's label (``<environment_context>``...)
    author: str | None = None  # an agent message's sender
    output: TranscriptItem | None = field(default=None, repr=False)
    call: TranscriptItem | None = field(default=None, repr=False)

    @classmethod
    def of(cls, number: int, raw: RawItem) -> TranscriptItem:
        origin = _origin(raw)
        kind = raw.get("type")
        call_id = raw.get("call_id")
        name = raw.get("name")
        label = raw.get("label")
        author = raw.get("author")
        role = raw.get("role")
        return cls(
            number=number,
            type=kind if isinstance(kind, str) else "",
            origin=origin,
            raw=raw,
            role=role if isinstance(role, str) else None,
            text=_item_text(raw, origin),
            name=name if isinstance(name, str) else "",
            arguments=_arguments(raw) if origin is Origin.TOOL_CALL else None,
            call_id=str(call_id) if call_id else None,
            label=label if isinstance(label, str) and label else None,
            author=author if isinstance(author, str) and author else None,
        )

    @property
    def is_call(self) -> bool:
        return self.type in CALL_TYPES

    @property
    def is_output(self) -> bool:
        return self.type in OUTPUT_TYPES

    @property
    def tool(self) -> str:
        """The tool a call (or an output, through its call) used, lower case: a local shell call is ``local_shell``."""
        call = self if self.is_call else self.call
        if call is None:
            return ""
        return "local_shell" if call.type == "local_shell_call" else call.name.lower()


class Transcript(Sequence[TranscriptItem]):
    """The memory items of one rollout, typed and numbered, with every output paired to the latest call before it
    that has its ``call_id``. ``raw`` keeps the wire dicts (serialized and hashed unchanged)."""

    __slots__ = ("_items", "raw")

    def __init__(self, raw: Sequence[RawItem]) -> None:
        self.raw = list(raw)
        self._items = [TranscriptItem.of(n, item) for n, item in enumerate(self.raw, 1)]
        open_calls: dict[str, TranscriptItem] = {}
        for item in self._items:
            if item.call_id is None:
                continue
            if item.is_call:
                open_calls[item.call_id] = item
            elif item.is_output and (call := open_calls.get(item.call_id)) is not None:
                item.call = call
                if call.output is None:
                    call.output = item

    @overload
    def __getitem__(self, index: int) -> TranscriptItem: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[TranscriptItem]: ...
    def __getitem__(self, index: int | slice) -> TranscriptItem | Sequence[TranscriptItem]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[TranscriptItem]:
        return iter(self._items)

    def user_texts(self) -> list[str]:
        """The text of every ``user`` message, in order: only the person's own words (``rollouts.filter``)."""
        return [i.text for i in self._items if i.origin is Origin.USER]

    def calls(self) -> list[TranscriptItem]:
        return [i for i in self._items if i.is_call]
