import sqlite3
import threading

import pytest

from memtui.cli import main
from memtui.state.db import StateError, connect, immediate
from memtui.state.schema import SCHEMA_VERSION
from memtui.state.status import collect_status


def test_connect_migrates_and_uses_wal(tmp_path):
    conn = connect(tmp_path / "s.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"threads", "stage1_outputs", "jobs", "ingest_files", "job_runs", "phase2_runs"} <= tables
    conn.close()
    assert connect(tmp_path / "s.sqlite").execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_immediate_rolls_back_on_error(tmp_path):
    conn = connect(tmp_path / "s.sqlite")
    with pytest.raises(RuntimeError), immediate(conn):
        conn.execute("INSERT INTO meta(key, value) VALUES ('a', '1')")
        raise RuntimeError("boom")
    assert conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0


def test_concurrent_first_opens_are_safe(tmp_path):
    """Four connections creating one new database at once: all wait their turn, none reports it locked."""
    errors: list[BaseException] = []

    def open_one(path) -> None:
        try:
            connect(path).close()
        except BaseException as exc:  # pragma: no cover - asserted below
            errors.append(exc)

    for trial in range(25):
        path = tmp_path / f"race-{trial}.sqlite"
        threads = [threading.Thread(target=open_one, args=(path,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert errors == []


def test_corrupt_database_is_a_clear_error_and_doctor_recovers(isolated_env, capsys):
    db = isolated_env["MEMTUI_HOME"] / "state.sqlite"
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StateError, match="doctor --reset-state"):
        connect(db)
    assert db.read_bytes().startswith(b"this is not sqlite")  # nothing destroyed
    assert main(["status"]) == 2
    assert "doctor --reset-state" in capsys.readouterr().err
    assert main(["doctor", "--reset-state", "--yes"]) == 0
    assert any(p.name.startswith("state.sqlite.broken-") for p in db.parent.iterdir())
    assert main(["status", "--json"]) == 0


def test_status_json_has_stable_keys(isolated_env, capsys):
    assert main(["status", "--json"]) == 0
    import json

    st = json.loads(capsys.readouterr().out)
    for key in (
        "threads",
        "threads_by_source",
        "skipped_files",
        "skipped_lines",
        "stage1",
        "outputs",
        "phase2",
        "watermark",
    ):
        assert key in st
    assert st["phase2"]["awaiting_review"] is False


def test_collect_status_counts(tmp_path):
    conn = connect(tmp_path / "s.sqlite")
    conn.execute(
        "INSERT INTO ingest_files(path, source_kind, size, mtime_ns, status, reason, skipped_lines, ingested_at)"
        " VALUES ('a', 'codex', 1, 1, 'skipped', 'empty file', 3, 0)"
    )
    st = collect_status(conn)
    assert st["skipped_files"] == 1 and st["skipped_lines"] == 3
    assert st["skipped_files_by_reason"] == {"empty file": 1}
    assert isinstance(conn, sqlite3.Connection)


def test_status_sums_redactions_and_groups_failures(tmp_path):
    conn = connect(tmp_path / "s.sqlite")
    # t2 was extracted twice: only its latest attempt counts (re-extracting does not double-count)
    for key, blob in (
        ("t1", '{"openai_key": 2}'),
        ("t2", '{"jwt": 5}'),
        ("t2", '{"openai_key": 1, "jwt": 1}'),
        ("t3", None),
    ):
        conn.execute(
            "INSERT INTO job_runs(kind, job_key, started_at, redactions) VALUES ('memory_stage1', ?, 0, ?)", (key, blob)
        )
    conn.execute(
        "INSERT INTO jobs(kind, job_key, status, retry_remaining, last_error)"
        " VALUES ('memory_stage1', 'a', 'error', 2, 'timed out')"
    )
    st = collect_status(conn)
    assert st["redactions"] == {"openai_key": 3, "jwt": 1}
    assert st["stage1_failures"] == {"timed out": 1}


def test_a_version_1_database_migrates_forward_keeping_its_rows(tmp_path):
    import sqlite3 as sq

    from memtui.state.schema import MIGRATIONS

    path = tmp_path / "old.sqlite"
    old = sq.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute(
        "INSERT INTO threads(id, source_kind, path, session_source, updated_at, user_messages, ingested_at)"
        " VALUES ('t1', 'codex', '/r.jsonl', 'cli', 5, 2, 5)"
    )
    old.commit()
    old.close()
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [tuple(r) for r in conn.execute("SELECT id, updated_at FROM threads")] == [("t1", 5)]
    columns = {r[1] for r in conn.execute("PRAGMA table_info(threads)")}
    assert "user_messages" not in columns


def test_a_database_locked_too_long_is_reported_as_busy_not_corrupt(tmp_path, monkeypatch):
    import sqlite3 as sq

    from memtui.state import db

    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "held.sqlite"
    holder = sq.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StateError, match="locked by another process") as caught:
        connect(path)
    assert "doctor" not in str(caught.value)
    holder.execute("ROLLBACK")
    assert connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_the_header_counts_walk_covering_indexes_not_the_threads_rows(tmp_path):
    """``read_status`` runs at every TUI launch and refresh: no statement of it reads every thread row."""
    from memtui.state.status import read_status

    conn = connect(tmp_path / "s.sqlite")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    read_status(conn)
    conn.set_trace_callback(None)
    plans = {
        sql: [r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        for sql in statements
        if sql.lstrip().upper().startswith("SELECT") and "threads" in sql
    }
    assert plans  # the counts of threads were seen
    walks = {sql: plan for sql, plan in plans.items() if any(step in ("SCAN threads", "SCAN t") for step in plan)}
    assert walks == {}
