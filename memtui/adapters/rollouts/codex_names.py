"""Codex thread names: ``$CODEX_HOME/session_index.jsonl``, append-only ``{id, thread_name, updated_at}`` lines where
the newest entry for a thread wins (codex-rs ``rollout/src/session_index.rs``, ``append_thread_name``). A name set or
changed with ``/rename`` lives only there, never in the rollout, so ingest reads it beside the rollouts (and stores
it: ``memtui.services.ingest.apply_titles``)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson

SESSION_INDEX = "session_index.jsonl"


def thread_names(codex_home: Path) -> dict[str, str]:
    """Thread id -> its current name (the last non-empty entry; unreadable lines skipped, as Codex skips them)."""
    try:
        data = (codex_home / SESSION_INDEX).read_bytes()
    except OSError:
        return {}
    names: dict[str, str] = {}
    for line in data.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        tid, name = entry.get("id"), entry.get("thread_name")
        if isinstance(tid, str) and isinstance(name, str) and name.strip():
            names[tid.lower()] = name.strip()
    return names


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_NAME_ID = re.compile(rf"^rollout-.*?({_UUID})(?:_[^.]*)?\.jsonl(?:\.zst)?$")


def thread_id_from_name(name: str) -> str | None:
    """``rollout-<ts>-<uuid>.jsonl[.zst]`` (or ``..._<rollout id>.jsonl``) -> the thread uuid."""
    m = _NAME_ID.match(name)
    return m.group(1).lower() if m else None
