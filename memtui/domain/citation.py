"""The citation data model: what an agent's citation block says, independent of how it was written.

Field names follow Codex's ``MemoryCitation`` (snake_case here; ``from_codex``/``to_codex`` speak the
camelCase JSON that Codex attaches to ``event_msg`` ``agent_message.memory_citation``).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OPEN_TAG = "<oai-mem-citation>"
CLOSE_TAG = "</oai-mem-citation>"
ENTRIES_OPEN, ENTRIES_CLOSE = "<citation_entries>", "</citation_entries>"
IDS_OPEN, IDS_CLOSE = "<rollout_ids>", "</rollout_ids>"
LEGACY_IDS_OPEN, LEGACY_IDS_CLOSE = "<thread_ids>", "</thread_ids>"

U32_MAX = 2**32 - 1
_HEX = "[0-9a-fA-F]"
# The spellings uuid::Uuid::parse_str accepts (Codex's ThreadId): hyphenated, simple, braced, urn.
_UUID_RE = re.compile(
    rf"(?:urn:uuid:)?(?:\{{)?({_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}|{_HEX}{{32}})(?:\}})?"
)


def canonical_thread_id(value: str) -> str | None:
    """The lowercase hyphenated form of a rollout id, or None when it is not a UUID (Codex drops those)."""
    m = _UUID_RE.fullmatch(value.strip())
    if not m or (value.strip().startswith("{") != value.strip().endswith("}")):
        return None
    return str(uuid.UUID(m.group(1)))


class CitationEntry(BaseModel):
    """One cited line range of a memory file; ``path`` is relative to the memory root (or absolute)."""

    model_config = ConfigDict(frozen=True)

    path: str
    line_start: int = Field(ge=0, le=U32_MAX)
    line_end: int = Field(ge=0, le=U32_MAX)
    note: str = ""

    def format(self) -> str:
        """``path:start-end|note=[note]``; a note is written on one line so the block stays parseable."""
        note = self.note.replace("\n", " ")
        return f"{self.path}:{self.line_start}-{self.line_end}|note=[{note}]"


class MemoryCitation(BaseModel):
    """Entries plus the rollout (thread) ids the cited memories came from, deduplicated, first-seen order."""

    entries: list[CitationEntry] = Field(default_factory=list)
    rollout_ids: list[str] = Field(default_factory=list)

    @property
    def thread_ids(self) -> list[str]:
        """The rollout ids that are UUIDs, canonicalised and deduplicated: the ones usage counting uses."""
        out: list[str] = []
        for rid in self.rollout_ids:
            tid = canonical_thread_id(rid)
            if tid and tid not in out:
                out.append(tid)
        return out

    @property
    def invalid_ids(self) -> list[str]:
        return [rid for rid in self.rollout_ids if canonical_thread_id(rid) is None]

    def format(self, wrapped: bool = True) -> str:
        """The text block an agent emits; ``parse_citations`` reads it back to an equal model.

        Round-trips whenever paths and notes hold no line breaks or citation tags, which is always the case
        for a citation that came out of the parser.
        """
        lines = [
            ENTRIES_OPEN,
            *(e.format() for e in self.entries),
            ENTRIES_CLOSE,
            IDS_OPEN,
            *self.rollout_ids,
            IDS_CLOSE,
        ]
        if wrapped:
            lines = [OPEN_TAG, *lines, CLOSE_TAG]
        return "\n".join(lines)

    def fingerprint_data(self) -> dict[str, Any]:
        """Order-insensitive, whitespace-normalised content: the same citation written twice compares equal."""
        entries = sorted((e.path.strip(), e.line_start, e.line_end, " ".join(e.note.split())) for e in self.entries)
        return {"entries": [list(e) for e in entries], "rollout_ids": sorted({r.strip() for r in self.rollout_ids})}

    def to_codex(self) -> dict[str, Any]:
        return {
            "entries": [
                {"path": e.path, "lineStart": e.line_start, "lineEnd": e.line_end, "note": e.note} for e in self.entries
            ],
            "rolloutIds": list(self.rollout_ids),
        }

    @classmethod
    def from_codex(cls, data: dict[str, Any]) -> MemoryCitation:
        """Read Codex's camelCase object (snake_case accepted too). Malformed entries and ids are skipped:
        a rollout written by another program must never stop an ingest."""
        if not isinstance(data, dict):
            raise TypeError(f"memory_citation must be an object, not {type(data).__name__}")
        entries: list[CitationEntry] = []
        for raw in data.get("entries") or []:
            if not isinstance(raw, dict):
                continue
            start, end = raw.get("lineStart", raw.get("line_start")), raw.get("lineEnd", raw.get("line_end"))
            if (
                not isinstance(start, int)
                or not isinstance(end, int)
                or isinstance(start, bool)
                or isinstance(end, bool)
            ):
                continue
            try:
                entries.append(
                    CitationEntry(
                        path=str(raw.get("path", "")).strip(),
                        line_start=start,
                        line_end=end,
                        note=str(raw.get("note") or "").strip(),
                    )
                )
            except (ValidationError, TypeError):
                continue
        ids: list[str] = []
        raw_ids = data.get("rolloutIds", data.get("rollout_ids", data.get("threadIds", data.get("thread_ids"))))
        for rid in raw_ids or []:
            if isinstance(rid, str) and rid.strip() and rid.strip() not in ids:
                ids.append(rid.strip())
        return cls(entries=[e for e in entries if e.path], rollout_ids=ids)
