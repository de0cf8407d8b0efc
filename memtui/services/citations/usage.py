"""Count citations as memory usage: ``usage_count`` / ``last_usage`` of the cited threads' stage-1 rows.

Usage ranks Phase 2 input (``get_phase2_input_selection``), so a citation must be counted
exactly once. Every counted citation is a ``citation_events`` row whose key is the idempotency key: the
insert and the usage bump happen in one transaction, and a key that already exists counts nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from memtui.adapters.redact import redact_text
from memtui.core import clock
from memtui.domain.citation import MemoryCitation
from memtui.services.agent_view import AgentView
from memtui.services.citations.check import cited_lines, hash_lines
from memtui.services.citations.parse import parse_citations
from memtui.state import citations as citation_store
from memtui.state import outputs
from memtui.state.db import immediate

Origin = Literal["rollout", "manual"]


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` on its own, a savepoint inside a caller's transaction (e.g. an ingest batch)."""
    if not conn.in_transaction:
        with immediate(conn):
            yield
        return
    conn.execute("SAVEPOINT memtui_citation")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK TO memtui_citation")
        conn.execute("RELEASE memtui_citation")
        raise
    conn.execute("RELEASE memtui_citation")


def _bump_usage(conn: sqlite3.Connection, thread_ids: list[str], now: int) -> int:
    return outputs.bump_usage(conn, thread_ids, now)


def record_stage1_output_usage(conn: sqlite3.Connection, thread_ids: list[str]) -> int:
    """Each id in the list (duplicates counted again) gets ``usage_count+1`` and ``last_usage=now``; missing rows
    are ignored. One transaction, one timestamp. Returns the number of rows updated."""
    with _transaction(conn):
        return _bump_usage(conn, list(thread_ids), clock.now_s())


def _memory_root() -> Path:
    from memtui.core.paths import resolve_paths

    return resolve_paths().memory_root


def record_citation(
    conn: sqlite3.Connection,
    citation: MemoryCitation,
    origin: Origin,
    key: str,
    thread_id: str | None = None,
    *,
    memory_root: Path | None = None,
) -> bool:
    """Store one citation event with its entries (and the sha256 of each cited text, for the stale check), and
    bump usage for its valid rollout ids. ``INSERT OR IGNORE`` on ``key``: returns False, counting nothing, when
    the key was already recorded."""
    root = memory_root or _memory_root()
    ids = citation.thread_ids
    hashes = []
    view = AgentView(root)
    for entry in citation.entries:
        lines = cited_lines(root, entry, view)
        hashes.append(hash_lines(lines) if lines is not None else None)
    now = clock.now_s()
    with _transaction(conn):
        body = redact_text(citation.format())
        if not citation_store.insert_event(conn, key, origin, thread_id, body, orjson.dumps(ids).decode(), now):
            return False
        citation_store.insert_entries(
            conn,
            [
                (key, redact_text(e.path), e.line_start, e.line_end, redact_text(e.note), h)
                for e, h in zip(citation.entries, hashes, strict=True)
            ],
        )
        _bump_usage(conn, ids, now)
    return True


@dataclass
class FoundCitation:
    key: str  # f"{thread_id}:{line_number}" — 1-based line in the rollout file
    kind: str  # "message" (assistant message text with a citation block) or "event" (agent_message.memory_citation)
    text: str | None  # the assistant message text (kind="message")
    structured: dict[str, Any] | None  # the memory_citation object (kind="event")


def _citation_of(found: FoundCitation) -> MemoryCitation | None:
    if found.kind == "message" and found.text:
        return parse_citations(found.text).citation
    if found.kind == "event" and isinstance(found.structured, dict):
        citation = MemoryCitation.from_codex(found.structured)
        return citation if citation.entries or citation.rollout_ids else None
    return None


def fingerprint(citation: MemoryCitation) -> str:
    """Content hash that is equal for the message text and the structured event Codex writes for one answer."""
    data = orjson.dumps(citation.fingerprint_data(), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:24]


def record_rollout_citations(
    conn: sqlite3.Connection, thread_id: str, found: list[FoundCitation], *, memory_root: Path | None = None
) -> int:
    """Count each citation in a rollout exactly once, however often the rollout is re-ingested. Returns how many
    were newly counted.

    Codex writes one citation twice (assistant message text and ``event_msg`` ``memory_citation``), so citations
    are grouped by content: a fingerprint seen n times among messages and m times among events is n_max =
    max(n, m) citations, keyed ``{thread_id}#{fingerprint}#{i}``. Keys do not depend on line numbers, so a
    rollout that grew keeps its old keys and only new occurrences count.
    """
    counts: dict[str, dict[str, int]] = {}
    citations: dict[str, MemoryCitation] = {}
    for f in found:
        citation = _citation_of(f)
        if citation is None:
            continue
        fp = fingerprint(citation)
        citations.setdefault(fp, citation)
        per_kind = counts.setdefault(fp, {})
        per_kind[f.kind] = per_kind.get(f.kind, 0) + 1
    newly = 0
    for fp, per_kind in counts.items():
        for i in range(max(per_kind.values())):
            key = f"{thread_id}#{fp}#{i}"
            if citation_store.has_event(conn, key):
                continue  # counted by an earlier ingest; skip reading the memory files again
            if record_citation(conn, citations[fp], "rollout", key, thread_id, memory_root=memory_root):
                newly += 1
    return newly


_MARKERS = ("<oai-mem-citation>", "<citation_entries>", "<rollout_ids>", "<thread_ids>")


def _texts(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        p["text"] for p in content if isinstance(p, dict) and p.get("type") in kinds and isinstance(p.get("text"), str)
    )


def may_cite(kind: Any, payload_type: Any, role: Any) -> bool:
    """False only for a line ``found_in_rollout_line`` never takes, judged by the same fields (its ``type``, its
    payload's ``type`` and ``role``): lets ingest search the marker in those lines alone."""
    if kind == "event_msg":
        return bool(payload_type == "agent_message")
    if kind == "response_item":
        return bool(payload_type == "message" and role == "assistant")
    return bool(kind == "assistant")


def found_in_rollout_line(thread_id: str, line_number: int, record: Any) -> FoundCitation | None:
    """The citation one parsed rollout line carries, if any, ready for ``record_rollout_citations``.

    Knows Codex ``response_item`` assistant messages, Codex ``event_msg`` ``agent_message.memory_citation`` and
    Claude Code ``assistant`` lines. ``line_number`` is 1-based.
    """
    if not isinstance(record, dict):
        return None
    key = f"{thread_id}:{line_number}"
    payload = record.get("payload")
    kind = record.get("type")
    text = ""
    if kind == "event_msg" and isinstance(payload, dict) and payload.get("type") == "agent_message":
        structured = payload.get("memory_citation")
        if isinstance(structured, dict):
            return FoundCitation(key=key, kind="event", text=None, structured=structured)
        return None
    if kind == "response_item" and isinstance(payload, dict):
        if payload.get("type") == "message" and payload.get("role") == "assistant":
            text = _texts(payload.get("content"), ("output_text", "text"))
    elif kind == "assistant" and isinstance(record.get("message"), dict):  # Claude Code
        text = _texts(record["message"].get("content"), ("text",))
    if text and any(m in text for m in _MARKERS):
        return FoundCitation(key=key, kind="message", text=text, structured=None)
    return None
