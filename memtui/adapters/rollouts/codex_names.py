"""Codex thread names: ``$CODEX_HOME/session_index.jsonl``, append-only ``{id, thread_name, updated_at}`` lines where
the newest entry for a thread wins (codex-rs ``rollout/src/session_index.rs``, ``append_thread_name``). A name set or
changed with ``/rename`` lives only there, never in the rollout, so ingest reads it beside the rollouts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts.model import PREVIEW_CHARS
from memtui.state.threads import set_codex_titles

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


def apply_thread_names(conn: sqlite3.Connection, codex_home: Path) -> int:
    """Set the title of every indexed Codex thread that has a name (redacted, like every stored title); returns the
    number of rows changed. A rename touches no rollout file, so this runs on every ingest, not per read file."""
    names = thread_names(codex_home)
    if not names:
        return 0
    rows = [(title, tid) for tid, name in names.items() for title in (redact_text(name)[:PREVIEW_CHARS],)]
    return set_codex_titles(conn, rows)
