"""``run_ingest`` end to end on real files and a real SQLite database: bad input, incremental runs, archived
threads, redaction of what is stored, citations, paging, the CLI, and that only MEMTUI_HOME is written."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from pathlib import Path

import pytest
import zstandard

from memtui.adapters.rollouts import codex, jsonl
from memtui.adapters.rollouts.model import LineStats
from memtui.adapters.sources import memory_items
from memtui.cli import main
from memtui.core import clock
from memtui.services.context import Context, open_context
from memtui.services.ingest import DUPLICATE, run_ingest
from memtui.state.threads import ThreadFilter, count_threads, get_thread, list_threads, skipped_files
from tests.fixtures.rollouts import (
    BASE_TIME,
    codex_lines,
    new_thread_id,
    set_mtime,
    write_claude_session,
    write_codex_rollout,
)

TID = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def ctx(isolated_env):
    context = open_context()
    yield context
    context.close()


def _file_row(ctx: Context, path: Path):
    return ctx.conn.execute("SELECT * FROM ingest_files WHERE path=?", (str(path),)).fetchone()


def _write_raw(codex_home: Path, data: bytes, name: str = f"rollout-2026-07-01T09-12-44-{TID}.jsonl") -> Path:
    folder = codex_home / "sessions" / "2026" / "07" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def _good_lines(**kw) -> list[bytes]:
    return [json.dumps(x, separators=(",", ":"), ensure_ascii=False).encode() for x in codex_lines(thread_id=TID, **kw)]


# --- bad input, one test each -------------------------------------------------------------------------------


def test_blank_lines_are_skipped_and_counted(ctx, isolated_env):
    good = _good_lines()
    path = _write_raw(isolated_env["CODEX_HOME"], b"\n".join([good[0], b"", *good[1:3], b"   ", *good[3:]]) + b"\n\n")
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.ingest_status == "indexed"
    # The two blank lines inside count; the empty line ending the file ("\n\n") is not a bad line.
    assert t.skipped_lines == 2 and s.lines_skipped == 2 and t.ingest_reason == "2 blank"
    assert t.items == len(good)
    assert _file_row(ctx, path)["skipped_lines"] == 2


def test_trailing_empty_lines_are_not_bad_lines(ctx, isolated_env):
    good = _good_lines()
    _write_raw(isolated_env["CODEX_HOME"], b"\n".join(good) + b"\n\n\r\n  \n")
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert (t.skipped_lines, s.lines_skipped, t.ingest_reason, t.items) == (0, 0, None, len(good))


def test_non_json_lines_are_skipped_and_counted(ctx, isolated_env):
    good = _good_lines()
    data = b"\n".join([good[0], b"this is not json", *good[1:4], b"{broken: json}", b"[1, 2]", *good[4:]]) + b"\n"
    _write_raw(isolated_env["CODEX_HOME"], data)
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t.skipped_lines == 3 and s.lines_skipped == 3 and "3 not JSON" in t.ingest_reason
    assert t.items == len(good) and t.preview.startswith("The checkout tests fail")


def test_invalid_utf8_is_repaired_and_the_line_kept(ctx, isolated_env):
    good = _good_lines(user_messages=["caf\u00e9 menu"])
    data = b"\n".join(good).replace("caf\u00e9".encode(), b"caf\xe9") + b"\n"  # a latin-1 byte, invalid UTF-8
    _write_raw(isolated_env["CODEX_HOME"], data)
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t.preview == "caf\ufffd menu"
    assert t.skipped_lines == 0  # repaired, not skipped
    stats = LineStats()
    assert len(list(jsonl.iter_objects(Path(t.path).read_bytes(), stats))) == t.items
    assert (stats.repaired_utf8, stats.skipped) == (2, 0)  # the response item and the user_message event
    user_items = [i for i in memory_items(Path(t.path), "codex") if i.get("role") == "user"]
    assert user_items[-1]["content"][0]["text"] == "caf\ufffd menu"


def test_bom_at_the_start_is_accepted(ctx, isolated_env):
    _write_raw(isolated_env["CODEX_HOME"], b"\xef\xbb\xbf" + b"\n".join(_good_lines()) + b"\n")
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.skipped_lines == 0 and t.cwd == "/home/ana/src/shop-api"


def test_crlf_line_ends_are_accepted(ctx, isolated_env):
    good = _good_lines()
    _write_raw(isolated_env["CODEX_HOME"], b"\r\n".join(good) + b"\r\n")
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t.skipped_lines == 0 and t.items == len(good) and t.ingest_reason is None
    assert t.preview == "The checkout tests fail on CI; find out why. Don't edit yet."
    assert len(memory_items(Path(t.path), "codex")) == 3  # environment context, question, answer


def test_truncated_last_line_keeps_the_rest(ctx, isolated_env):
    good = _good_lines()
    _write_raw(isolated_env["CODEX_HOME"], b"\n".join(good) + b"\n" + good[-1][: len(good[-1]) // 2])
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.skipped_lines == 1 and "1 truncated last line" in t.ingest_reason
    assert t.items == len(good)


def test_unknown_line_and_item_types_are_tolerated(ctx, isolated_env):
    extra = [
        {"timestamp": "2026-07-01T10:00:00.000Z", "type": "realtime_item", "payload": {"audio": "..."}},
        {
            "timestamp": "2026-07-01T10:00:01.000Z",
            "type": "response_item",
            "payload": {"type": "hologram_call", "x": 1},
        },
        {"timestamp": "2026-07-01T10:00:02.000Z", "type": "event_msg", "payload": {"type": "brand_new_event"}},
        {"record_type": "state"},  # legacy line without an envelope
    ]
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, extra_lines=extra)
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t.skipped_lines == 0 and t.items == len(path.read_bytes().splitlines())
    assert not any(i.get("type") == "hologram_call" for i in memory_items(path, "codex"))


def test_a_50_mb_tool_output_on_one_line(ctx, isolated_env):
    huge = "0123456789abcdef" * (50 * 1024 * 1024 // 16)
    path = write_codex_rollout(
        isolated_env["CODEX_HOME"], thread_id=TID, tool_calls=[{"name": "exec_command", "output": huge}]
    )
    assert path.stat().st_size > 50 * 1024 * 1024
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.skipped_lines == 0 and t.bytes == path.stat().st_size
    assert t.preview.startswith("The checkout tests fail")
    outputs = [i for i in memory_items(path, "codex") if i["type"] == "function_call_output"]
    assert len(outputs[0]["output"]) == len(huge)


def test_no_session_meta_takes_the_id_from_the_file_name(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, session_meta=False)
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.path == str(path)
    # No source: Codex's default (SessionSource::VSCode), an interactive session; cwd from turn_context.
    assert t.session_source == "vscode" and t.cwd == "/home/ana/src/shop-api"
    assert "no session_meta" in t.ingest_reason


def test_no_session_meta_and_no_id_in_the_name_is_skipped_with_a_reason(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], session_meta=False, file_name="rollout-scratch.jsonl")
    s = run_ingest(ctx)
    assert s.skipped == 1 and s.skipped_by_reason == {codex.SKIP_NO_META: 1}
    row = _file_row(ctx, path)
    assert (row["status"], row["reason"], row["thread_id"]) == ("skipped", codex.SKIP_NO_META, None)
    assert count_threads(ctx.conn) == 0


def test_empty_file_is_skipped_with_a_reason(ctx, isolated_env):
    path = _write_raw(isolated_env["CODEX_HOME"], b"")
    s = run_ingest(ctx)
    assert s.skipped_by_reason == {"empty file": 1}
    assert _file_row(ctx, path)["reason"] == "empty file"
    assert skipped_files(ctx.conn)[0].path == str(path)


def test_corrupt_zst_is_skipped_with_a_reason(ctx, isolated_env):
    path = _write_raw(
        isolated_env["CODEX_HOME"], b"\x28\xb5\x2f\xfd garbage that is not zstd", name=f"rollout-x-{TID}.jsonl.zst"
    )
    good = write_codex_rollout(isolated_env["CODEX_HOME"], compress=True)  # the run goes on after it
    s = run_ingest(ctx)
    assert s.skipped_by_reason == {"corrupt zstd stream": 1} and s.new == 1
    assert _file_row(ctx, path)["status"] == "skipped"
    assert _file_row(ctx, good)["status"] == "indexed"


def test_truncated_zst_keeps_what_decompressed(ctx, isolated_env):
    noise = os.urandom(300_000).hex()  # incompressible, so the frame has many blocks
    data = b"\n".join(_good_lines(tool_calls=[{"output": noise}])) + b"\n"
    packed = zstandard.ZstdCompressor().compress(data)
    _write_raw(isolated_env["CODEX_HOME"], packed[: len(packed) * 2 // 3], name=f"rollout-x-{TID}.jsonl.zst")
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t is not None and t.preview.startswith("The checkout") and "truncated zstd stream" in t.ingest_reason


def test_compressed_rollout_is_indexed_and_filtered(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, compress=True)
    assert path.name.endswith(".jsonl.zst")
    run_ingest(ctx)
    assert get_thread(ctx.conn, TID).preview.startswith("The checkout")
    assert len(memory_items(path, "codex")) == 3


def test_unreadable_file_is_skipped_not_fatal(ctx, isolated_env):
    folder = isolated_env["CODEX_HOME"] / "sessions" / "2026" / "07" / "01"
    folder.mkdir(parents=True)
    (folder / f"rollout-x-{TID}.jsonl").mkdir()  # a directory with a rollout name: never a file, not listed
    write_codex_rollout(isolated_env["CODEX_HOME"])
    assert run_ingest(ctx).new == 1


# --- incremental runs ---------------------------------------------------------------------------------------


def test_unchanged_files_are_not_reread(ctx, isolated_env, monkeypatch):
    for _ in range(3):
        write_codex_rollout(isolated_env["CODEX_HOME"])
    write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"])
    assert run_ingest(ctx).new == 4
    reads = []
    real = jsonl.read_bytes
    monkeypatch.setattr(jsonl, "read_bytes", lambda p: reads.append(p) or real(p))
    s = run_ingest(ctx)
    assert (s.new, s.updated, s.unchanged, s.files) == (0, 0, 4, 4)
    assert reads == []


def test_same_size_and_mtime_means_unchanged_even_if_bytes_differ(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, user_messages=["first version"])
    run_ingest(ctx)
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"first version", b"other version"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run_ingest(ctx).unchanged == 1
    assert get_thread(ctx.conn, TID).preview == "first version"


def test_touched_file_is_reread_and_updated(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, mtime=1_790_000_000)
    run_ingest(ctx)
    first = get_thread(ctx.conn, TID).updated_at
    assert first == 1782897173  # the last line's timestamp, 2026-07-01T09:12:53Z, not the mtime
    with path.open("ab") as f:
        f.write(b'{"timestamp":"2026-07-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count"}}\n')
    set_mtime(path, 1_790_000_500.75)
    s = run_ingest(ctx)
    assert (s.new, s.updated, s.unchanged) == (0, 1, 0)
    t = get_thread(ctx.conn, TID)
    assert t.updated_at == 1782900000  # the new last event
    assert _file_row(ctx, path)["mtime_ns"] == path.stat().st_mtime_ns
    set_mtime(path, 1_790_000_900)  # mtime alone changes: re-read, same content, same date
    assert run_ingest(ctx).updated == 1
    assert get_thread(ctx.conn, TID).updated_at == 1782900000


def test_changed_file_without_a_later_timestamp_still_moves_its_watermark(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID)
    run_ingest(ctx)
    before = get_thread(ctx.conn, TID).updated_at
    with path.open("ab") as f:  # new content, but its timestamp is not later than the last one
        f.write(b'{"timestamp":"2026-07-01T09:00:00.000Z","type":"response_item","payload":{"type":"message",')
        f.write(b'"role":"user","content":[{"type":"input_text","text":"one more thing"}]}}\n')
    run_ingest(ctx)
    assert get_thread(ctx.conn, TID).updated_at == before + 1  # past the old watermark: extracted again
    run_ingest(ctx)
    assert get_thread(ctx.conn, TID).updated_at == before + 1  # unchanged file: not moved again


def test_file_that_became_bad_flags_its_thread(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID)
    run_ingest(ctx)
    path.write_bytes(b"")
    s = run_ingest(ctx)
    assert s.skipped == 1
    t = get_thread(ctx.conn, TID)
    assert (t.ingest_status, t.ingest_reason) == ("skipped", "empty file")


def test_vanished_file_flags_its_thread_missing(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID)
    run_ingest(ctx)
    path.unlink()
    s = run_ingest(ctx)
    assert s.missing == 1 and _file_row(ctx, path) is None
    assert get_thread(ctx.conn, TID).ingest_status == "missing"


def test_archived_threads_are_indexed_and_marked(ctx, isolated_env):
    live = write_codex_rollout(isolated_env["CODEX_HOME"])
    old = write_codex_rollout(isolated_env["CODEX_HOME"], archived=True)
    run_ingest(ctx)
    by_path = {t.path: t for t in list_threads(ctx.conn)}
    assert by_path[str(live)].archived is False and by_path[str(old)].archived is True
    assert count_threads(ctx.conn, ThreadFilter(archived=True)) == 1


def test_moving_a_rollout_to_archived_sessions_moves_the_thread(ctx, isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID)
    run_ingest(ctx)
    target = isolated_env["CODEX_HOME"] / "archived_sessions" / path.name
    target.parent.mkdir(parents=True)
    path.rename(target)
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert (s.new, s.missing) == (1, 1)
    assert (t.path, t.archived, t.ingest_status) == (str(target), True, "indexed")


def test_duplicate_thread_id_keeps_the_newer_file(ctx, isolated_env):
    old = write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, user_messages=["old"], mtime=1_782_000_100)
    new = write_codex_rollout(  # newer by its transcript (the mtime says the opposite and does not count)
        isolated_env["CODEX_HOME"],
        thread_id=TID,
        user_messages=["new"],
        mtime=1_782_000_000,
        when=BASE_TIME + timedelta(hours=1),
        file_name=f"rollout-b-{TID}.jsonl",
    )
    s = run_ingest(ctx)
    assert get_thread(ctx.conn, TID).path == str(new)
    assert s.skipped_by_reason == {DUPLICATE: 1}
    assert _file_row(ctx, old)["status"] == "skipped"


# --- what is stored -----------------------------------------------------------------------------------------


def test_preview_secret_never_reaches_the_database_file(ctx, isolated_env):
    key = "sk-proj-" + "Q7vN2xLp9TmR4sWk8YbZ3cHd" * 2
    write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, user_messages=[f"use {key} for the deploy"])
    write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"], summary=f"key {key}", user_messages=[f"here: {key}"])
    run_ingest(ctx)
    ctx.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert "[REDACTED_SECRET]" in get_thread(ctx.conn, TID).preview
    home = isolated_env["MEMTUI_HOME"]
    for f in home.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f
            assert key[8:30].encode() not in f.read_bytes(), f


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def test_nothing_is_written_outside_memtui_home(ctx, isolated_env, tmp_path):
    write_codex_rollout(isolated_env["CODEX_HOME"])
    write_codex_rollout(isolated_env["CODEX_HOME"], archived=True, compress=True)
    write_codex_rollout(isolated_env["CODEX_HOME"], extra_lines=["garbage", b"\xff"])
    write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"])
    home = isolated_env["MEMTUI_HOME"]
    outside = {name: _tree(p) for name, p in isolated_env.items() if name != "MEMTUI_HOME"}
    top = sorted(p.name for p in tmp_path.iterdir())
    run_ingest(ctx)
    run_ingest(ctx)
    assert {name: _tree(p) for name, p in isolated_env.items() if name != "MEMTUI_HOME"} == outside
    assert sorted(p.name for p in tmp_path.iterdir()) == top
    assert (home / "state.sqlite").is_file()


def test_citations_are_found_and_counted(ctx, isolated_env):
    block = (
        "Fixed.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-2|note=[tz pitfall]\n</citation_entries>\n"
        "<rollout_ids>\n019dff00-1234-7abc-8def-001122334455\n</rollout_ids>\n</oai-mem-citation>"
    )
    event = {
        "timestamp": "2026-07-01T10:00:00.000Z",
        "type": "event_msg",
        "payload": {
            "type": "agent_message",
            "message": "Fixed.",
            "memory_citation": {
                "entries": [{"path": "MEMORY.md", "lineStart": 1, "lineEnd": 2, "note": "tz pitfall"}],
                "rolloutIds": ["019dff00-1234-7abc-8def-001122334455"],
            },
        },
    }
    write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, assistant_messages=[block], extra_lines=[event])
    write_codex_rollout(isolated_env["CODEX_HOME"], user_messages=["what is a citation_entries tag?"])  # no citation
    s = run_ingest(ctx)
    # The assistant message appears as a response_item (with the block) and as an agent_message event (without):
    # one message citation and one event citation.
    assert s.citations_found == 2 and s.citation_errors == []


# --- progress, cancel, CLI, paging --------------------------------------------------------------------------


def test_progress_is_reported_and_cancel_stops_early(ctx, isolated_env):
    for _ in range(5):
        write_codex_rollout(isolated_env["CODEX_HOME"])
    cancel = threading.Event()
    seen = []

    def progress(done, total, path):
        seen.append((done, total))
        if done == 2:
            cancel.set()

    s = run_ingest(ctx, progress=progress, cancel=cancel)
    assert s.cancelled and s.new == 2 and seen == [(1, 5), (2, 5)]
    s = run_ingest(ctx)
    assert (s.new, s.unchanged) == (3, 2)


def test_cli_prints_a_summary_and_json(isolated_env, capsys):
    write_codex_rollout(isolated_env["CODEX_HOME"])
    _write_raw(isolated_env["CODEX_HOME"], b"", name="rollout-empty.jsonl")
    assert main(["ingest"]) == 0
    out = capsys.readouterr().out
    assert "new        1" in out and "skipped    1" in out and "empty file" in out
    assert main(["ingest", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["unchanged"], data["files"], data["new"]) == (2, 2, 0)
    assert {"updated", "skipped", "skipped_by_reason", "lines_skipped", "citations_found", "seconds"} <= set(data)


def test_list_threads_pages_with_a_keyset(ctx, isolated_env):
    ids = []
    for i in range(25):
        tid = new_thread_id()
        ids.append(tid)
        # pairs of equal mtimes exercise the id tie-break
        write_codex_rollout(
            isolated_env["CODEX_HOME"], thread_id=tid, mtime=1_782_000_000 + (i // 2) * 60, cwd=f"/w/{i % 3}"
        )
    run_ingest(ctx)
    pages, after = [], None
    while True:
        page = list_threads(ctx.conn, limit=10, after=after)
        if not page:
            break
        pages.append(page)
        after = (page[-1].updated_at, page[-1].id)
    flat = [t.id for p in pages for t in p]
    assert [len(p) for p in pages] == [10, 10, 5] and sorted(flat) == sorted(ids) and len(set(flat)) == 25
    every = list_threads(ctx.conn, limit=100)
    assert [t.id for t in every] == flat
    assert [t.id for t in list_threads(ctx.conn, limit=5, offset=10)] == flat[10:15]
    asc = list_threads(ctx.conn, sort="created_at", descending=False, limit=30)
    assert len(asc) == 25
    only = ThreadFilter(cwd_prefix="/w/1", session_source=["cli", "vscode"])
    assert count_threads(ctx.conn, only) == len(list_threads(ctx.conn, only, limit=100)) == 8
    assert count_threads(ctx.conn, ThreadFilter(search="checkout tests")) == 25
    assert count_threads(ctx.conn, ThreadFilter(search="100%_")) == 0


def test_dates_come_from_the_transcript_not_the_mtime_or_the_clock(ctx, isolated_env, frozen_clock):
    write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, mtime=1_700_000_000)
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert (t.created_at, t.updated_at) == (1782897164, 1782897173)  # first and last event
    assert t.ingested_at == frozen_clock == clock.now_s()


def test_mtime_is_the_fallback_when_the_transcript_has_no_time(ctx, isolated_env):
    lines = [{"type": "response_item", "payload": {"type": "message", "role": "user", "content": "hi"}}]
    write_codex_rollout(isolated_env["CODEX_HOME"], thread_id=TID, lines=lines, mtime=1_700_000_000)
    run_ingest(ctx)
    assert get_thread(ctx.conn, TID).updated_at == 1_700_000_000


@pytest.mark.parametrize("where", ["start", "end", "both"])
def test_citation_line_numbers_are_exact(isolated_env, where):
    from memtui.adapters.sources.registry import discover
    from memtui.services.ingest import read_file

    cited = (
        "ok\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-2|note=[n]\n</citation_entries>\n</oai-mem-citation>"
    )
    answers = ["plain"] * 30
    if where in ("start", "both"):
        answers[0] = cited
    if where in ("end", "both"):
        answers[-1] = cited
    path = write_codex_rollout(
        isolated_env["CODEX_HOME"],
        thread_id=TID,
        user_messages=[f"q{i}" for i in range(30)],
        assistant_messages=answers,
        extra_lines=["", "not json"],  # bad lines do not shift the numbering
    )
    expected = [
        i
        for i, raw in enumerate(path.read_bytes().split(b"\n"), 1)
        if b"oai-mem-citation" in raw and b'"type":"response_item"' in raw  # the event copy has no memory_citation
    ]
    (found,) = [f for f in discover(open_context().paths) if f.path == str(path)]
    result, citations = read_file(found, 0)
    assert len(expected) == (2 if where == "both" else 1)
    assert result.citation_lines == expected
    assert [c.key for c in citations] == [f"{TID}:{n}" for n in expected]


def test_spaced_json_is_indexed_like_compact_json(ctx, isolated_env):
    """A rollout written with `json.dumps` defaults (spaces after ':' and ',') loses nothing."""
    spaced = [json.dumps(json.loads(line)).encode() for line in _good_lines()]
    _write_raw(isolated_env["CODEX_HOME"], b"\n".join([spaced[0], b"not json", *spaced[1:]]) + b"\n")
    s = run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert s.new == 1 and t.session_source == "cli" and t.cwd
    assert t.preview.startswith("The checkout tests fail")
    assert t.skipped_lines == 1 and t.items == len(spaced)
    assert "no session_meta" not in (t.ingest_reason or "")


def test_cli_says_where_it_looked_when_it_finds_nothing(isolated_env, capsys):
    assert main(["ingest"]) == 0
    err = capsys.readouterr().err
    assert "no rollout files" in err and str(isolated_env["CODEX_HOME"]) in err


def test_line_counts_are_exact_where_byte_counts_would_lie(ctx, isolated_env):
    """A line cut in the middle that still ends in ``}`` (an inner object) and a line nested deeper than the
    validator goes: the clean-file proof must not take either for a record."""
    good = _good_lines()
    cut = good[0][: good[0].rindex(b"}")]  # session_meta without its last brace: ends with the git object's "}"
    deep = b'{"timestamp":"2026-07-01T09:13:00.000Z","type":"x","payload":' + b'{"a":' * 1000 + b"1" + b"}" * 1001
    _write_raw(isolated_env["CODEX_HOME"], b"\n".join([cut, *good[1:], deep]) + b"\n", name=f"rollout-x-{TID}.jsonl")
    run_ingest(ctx)
    t = get_thread(ctx.conn, TID)
    assert t.skipped_lines == 1 and t.items == len(good)  # the cut line skipped; the deep one is valid JSON


def test_citations_found_from_line_heads_match_the_whole_file_search(tmp_path):
    """The fast path searches the marker only in lines whose head may carry a citation (assistant messages,
    agent_message events): it finds exactly what the whole-file search finds, and marker text in tool output or
    a user message is no citation either way."""
    from memtui.services.ingest import find_citations

    cite = "<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-3|note=[ci]\n</citation_entries>\n</oai-mem-citation>"
    ts = "2026-07-01T09:13:00.000Z"
    extra = [
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c", "output": cite},
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": cite}]},
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done\n" + cite}],
            },
        },
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {
                "type": "agent_message",
                "message": "x",
                "memory_citation": {
                    "entries": [{"path": "MEMORY.md", "line_start": 1, "line_end": 2, "note": "ci"}],
                    "rollout_ids": [],
                },
            },
        },
    ]
    lines = _good_lines() + [json.dumps(x, separators=(",", ":")).encode() for x in extra]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / f"rollout-2026-07-01T09-12-44-{TID}.jsonl"
    result = codex.index_file(path, data, size=len(data), mtime_ns=0, archived=False, now=0)
    assert result.scan is not None and result.scan.heads is not None  # the fast path ran
    fast = find_citations(TID, data, result.lines, result.scan)
    slow = find_citations(TID, data, result.lines)
    assert [c.key for c in fast] == [c.key for c in slow] == [f"{TID}:{len(lines) - 1}", f"{TID}:{len(lines)}"]
