"""Usage counting: the reference's ``record_stage1_output_usage``, recorded citations, idempotent re-ingest."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core import clock
from memtui.core.paths import resolve_paths
from memtui.services.citations import CitationEntry, MemoryCitation
from memtui.services.citations.check import hash_lines
from memtui.services.citations.usage import (
    FoundCitation,
    fingerprint,
    found_in_rollout_line,
    record_citation,
    record_rollout_citations,
    record_stage1_output_usage,
)
from memtui.state.db import connect, immediate
from tests.conftest import approve_root

A = "019c6e27-e55b-73d1-87d8-4e01f1f75043"
B = "019dff00-1234-7abc-8def-001122334455"
ROLLOUT = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def root() -> Path:
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\nline two\nline three\n")
    approve_root(root)  # a citation's hash is of the lines agents read: the approved memory
    return root


@pytest.fixture
def conn() -> sqlite3.Connection:
    conn = connect(resolve_paths().state_db)
    for tid in (A, B):
        conn.execute(
            "INSERT INTO stage1_outputs(thread_id, source_updated_at, raw_memory, rollout_summary, generated_at) "
            "VALUES (?, 1, 'raw', 'summary', 1)",
            (tid,),
        )
    return conn


def usage(conn: sqlite3.Connection, tid: str) -> tuple[int | None, int | None]:
    row = conn.execute("SELECT usage_count, last_usage FROM stage1_outputs WHERE thread_id=?", (tid,)).fetchone()
    return row[0], row[1]


def events(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM citation_events").fetchone()[0]


def test_record_stage1_output_usage_updates_usage_metadata(conn, frozen_clock):
    missing = "019e0000-0000-7000-8000-000000000000"
    assert usage(conn, A) == (None, None)
    assert record_stage1_output_usage(conn, [A, A, B, missing]) == 3
    assert usage(conn, A) == (2, frozen_clock) and usage(conn, B) == (1, frozen_clock)
    assert record_stage1_output_usage(conn, []) == 0


def test_record_citation_counts_once_per_key_and_stores_hashes(conn, root, frozen_clock):
    citation = MemoryCitation(
        entries=[
            CitationEntry(path="MEMORY.md", line_start=2, line_end=3, note="token=abcdefgh12345 note"),
            CitationEntry(path="gone.md", line_start=1, line_end=1, note=""),
        ],
        rollout_ids=[A, "not-a-uuid", B.upper()],
    )
    assert record_citation(conn, citation, "manual", "k", memory_root=root) is True
    assert record_citation(conn, citation, "manual", "k", memory_root=root) is False
    assert usage(conn, A) == (1, frozen_clock) and usage(conn, B)[0] == 1
    ev = conn.execute("SELECT * FROM citation_events").fetchone()
    assert json.loads(ev["rollout_ids"]) == [A, B] and ev["origin"] == "manual" and ev["recorded_at"] == frozen_clock
    assert "abcdefgh12345" not in ev["body"] and "[REDACTED_SECRET]" in ev["body"]
    rows = conn.execute("SELECT path, note, text_hash FROM citation_entries ORDER BY id").fetchall()
    assert rows[0]["text_hash"] == hash_lines(["line two", "line three"]) and "abcdefgh12345" not in rows[0]["note"]
    assert rows[1]["text_hash"] is None  # nothing to hash: the file is missing


def msg(line: int, text: str) -> FoundCitation:
    return FoundCitation(key=f"{ROLLOUT}:{line}", kind="message", text=text, structured=None)


def ev(line: int, data: dict) -> FoundCitation:
    return FoundCitation(key=f"{ROLLOUT}:{line}", kind="event", text=None, structured=data)


CITED_A = MemoryCitation(
    entries=[CitationEntry(path="MEMORY.md", line_start=2, line_end=2, note="tz")], rollout_ids=[A, "nope"]
)
CITED_B = MemoryCitation(rollout_ids=[B])


def answer(c: MemoryCitation) -> str:
    return "The fix is to pin TZ.\n" + c.format()


def test_message_and_event_of_one_answer_count_once(conn, root):
    found = [msg(5, answer(CITED_A)), ev(6, CITED_A.to_codex())]
    assert record_rollout_citations(conn, ROLLOUT, found, memory_root=root) == 1
    assert usage(conn, A)[0] == 1 and usage(conn, B)[0] is None
    assert fingerprint(CITED_A) == fingerprint(MemoryCitation.from_codex(CITED_A.to_codex()))


def test_reingest_is_idempotent_even_after_the_rollout_grew(conn, root):
    first = [msg(5, answer(CITED_A)), ev(6, CITED_A.to_codex())]
    assert record_rollout_citations(conn, ROLLOUT, first, memory_root=root) == 1
    assert record_rollout_citations(conn, ROLLOUT, first, memory_root=root) == 0
    # The agent cited the same memory again in a later answer, and cited B once (event only, older Codex).
    grown = [*first, msg(40, answer(CITED_A)), ev(41, CITED_A.to_codex()), ev(50, CITED_B.to_codex())]
    assert record_rollout_citations(conn, ROLLOUT, grown, memory_root=root) == 2
    assert record_rollout_citations(conn, ROLLOUT, grown, memory_root=root) == 0
    assert usage(conn, A)[0] == 2 and usage(conn, B)[0] == 1
    assert events(conn) == 3
    keys = [r[0] for r in conn.execute("SELECT key FROM citation_events WHERE origin='rollout' ORDER BY key")]
    assert all(k.startswith(f"{ROLLOUT}#") for k in keys)


def test_unparseable_and_citation_free_items_count_nothing(conn, root):
    found = [
        msg(1, "no citation here"),
        msg(2, "<oai-mem-citation>\n<citation_entries>\nbroken\n</citation_entries>\n</oai-mem-citation>"),
        ev(3, {"entries": "nope"}),
        FoundCitation(key=f"{ROLLOUT}:4", kind="event", text=None, structured=None),
        msg(5, answer(MemoryCitation(rollout_ids=["not-a-uuid"]))),
    ]
    # Only the last one is a citation; it is recorded (for the audit trail) but its id is not counted.
    assert record_rollout_citations(conn, ROLLOUT, found, memory_root=root) == 1
    assert usage(conn, A)[0] is None and usage(conn, B)[0] is None
    assert json.loads(conn.execute("SELECT rollout_ids FROM citation_events").fetchone()[0]) == []


def test_cli_record_counts_each_time_and_reports(conn, root, capsys, monkeypatch):
    text = answer(CITED_A).replace("</citation_entries>", "missing.md:1-1|note=[m]\n</citation_entries>")
    for expected in (1, 2):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert main(["cite", "record", "-"]) == 0
        out = capsys.readouterr().out
        assert f"counted   {A}  usage_count {expected}" in out
        assert "missing file" in out and "skipped   nope  (not a UUID)" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["cite", "record", "-", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counted"][0]["usage_count"] == 3 and data["key"].startswith("manual:")
    assert events(conn) == 3
    monkeypatch.setattr("sys.stdin", io.StringIO("nothing cited"))
    assert main(["cite", "record", "-"]) == 1


def test_manual_record_sets_last_usage_from_the_clock(conn, root, monkeypatch, capsys):
    clock.freeze(1_000)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer(CITED_B)))
    assert main(["cite", "record", "-"]) == 0
    assert usage(conn, B) == (1, 1_000)


def test_rollout_citations_compose_with_the_callers_transaction(conn, root):
    """Ingest may record citations inside its own write transaction; a rollback there takes them back too."""
    found = [msg(5, answer(CITED_A))]
    with pytest.raises(RuntimeError), immediate(conn):
        assert record_rollout_citations(conn, ROLLOUT, found, memory_root=root) == 1
        raise RuntimeError("ingest failed later")
    assert events(conn) == 0 and usage(conn, A)[0] is None
    with immediate(conn):
        assert record_rollout_citations(conn, ROLLOUT, found, memory_root=root) == 1
    assert events(conn) == 1 and usage(conn, A)[0] == 1


def test_found_in_rollout_line_reads_codex_and_claude_records(conn, root):
    text = answer(CITED_A)
    lines = [
        {"type": "session_meta", "payload": {"id": ROLLOUT}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        },
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
        },
        {
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "x", "memory_citation": CITED_A.to_codex()},
        },
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "no citation"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer(CITED_B)}]}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "plain"}]},
        },
        "not a dict",
    ]
    found = [f for n, rec in enumerate(lines, 1) if (f := found_in_rollout_line(ROLLOUT, n, rec))]
    assert [(f.key, f.kind) for f in found] == [
        (f"{ROLLOUT}:3", "message"),
        (f"{ROLLOUT}:4", "event"),
        (f"{ROLLOUT}:6", "message"),
    ]
    assert record_rollout_citations(conn, ROLLOUT, found, memory_root=root) == 2
    assert usage(conn, A)[0] == 1 and usage(conn, B)[0] == 1
