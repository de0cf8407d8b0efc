"""The normalized thread model (one per rollout file, Codex or Claude Code) and the rollout line models.

Line models follow the Codex rollout format and Claude Code transcripts. They are deliberately
loose (``extra="allow"``, every field optional but the tag): rollouts come from many agent versions and a newer
field must never make a line unreadable. Hot paths (ingest, the memory filter) work on plain dicts; these models
are the documented shape and what the readers hand to callers that want one typed line at a time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

SourceKind = Literal["codex", "claude"]
SessionSource = Literal["cli", "vscode", "exec", "mcp", "subagent", "internal", "custom", "unknown"]
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
    history_mode: str | None = None
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
