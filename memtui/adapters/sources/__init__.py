"""Transcript sources: one package per coding agent (``codex``, ``claude``, ...) behind one protocol
(``protocol.TranscriptSource``), found by ``registry``. What the rest of memtui calls to read any agent's session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtui.adapters.rollouts.filter import serialize_items
from memtui.adapters.rollouts.model import Transcript
from memtui.adapters.sources.registry import source


def items_from_bytes(data: bytes, source_kind: str, path: Path | None = None) -> list[dict[str, Any]]:
    """The memory items of a session's bytes, read by the source of ``source_kind``."""
    return source(source_kind).items(path, data)


def memory_items(path: Path, source_kind: str) -> list[dict[str, Any]]:
    """The memory-relevant items of a session, in order. Raises ``jsonl.UnreadableFile``."""
    reader = source(source_kind)
    data, _ = reader.load(Path(path))
    return reader.items(Path(path), data)


def read_transcript(path: Path, source_kind: str) -> Transcript:
    """``memory_items`` typed and numbered, calls paired to their outputs. Raises ``jsonl.UnreadableFile``."""
    return Transcript(memory_items(path, source_kind))


def serialize_memory_rollout(path: Path, source_kind: str) -> str:
    """The memory items as one compact JSON array string. Not redacted: the caller redacts the whole string."""
    return serialize_items(memory_items(path, source_kind))
