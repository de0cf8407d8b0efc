"""The queries a no-change Phase 2 run and memory health ask on every run read indexes, not every row (issue 35.5),
and answer what the whole-table queries they replace answered, on a small home with every kind of row."""

from __future__ import annotations

import sqlite3

import pytest

from memtui.state import outputs, search_index, threads
from memtui.state.db import migrate
from memtui.state.schema import MIGRATIONS

NOW = 1_783_684_800

# The retention statement with its index forbidden: a walk of every row, for what the index must answer alike.
UNINDEXED_EXPIRED = outputs.EXPIRED_SQL.replace("FROM stage1_outputs", "FROM stage1_outputs NOT INDEXED")
# The statements as they were before (a827ad1), run on the same rows.
OLD_OPTED_OUT = (
    "SELECT t.id FROM threads t NOT INDEXED WHERE t.memory_mode != 'enabled'"
    " AND NOT EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id)"
    " AND EXISTS (SELECT 1 FROM stage1_outputs o WHERE o.thread_id = t.id) ORDER BY t.id"
)
OLD_USER_MATCHING = (
    f"{search_index._USER_MESSAGES} AND d.id IN (SELECT rowid FROM {search_index.FTS} WHERE {search_index.FTS} MATCH ?)"
    " AND COALESCE(t.created_at, t.updated_at) > ?"
)
WORDS = ["deploy", "staging", "pnpm", "tests", "uv", "docker", "mondays", "fridays", "never", "always"]


def tid(i: int) -> str:
    return f"0194f5a6-89ab-7cde-8123-{i:012x}"


@pytest.fixture
def conn() -> sqlite3.Connection:
    """60 threads of every mode, source and age; outputs selected or not, used or not; forgotten ones; user,
    assistant, summary and raw-memory documents sharing words."""
    c = sqlite3.connect(":memory:", isolation_level=None)
    migrate(c)
    search_index.ensure_index(c)
    c.execute("BEGIN")
    for i in range(60):
        mode = ["enabled", "disabled", "enabled", "polluted"][i % 4]
        source = ["cli", "exec", "vscode", "subagent"][i % 4 if i % 3 else 0]
        c.execute(
            "INSERT INTO threads (id, source_kind, path, cwd, session_source, memory_mode, created_at, updated_at,"
            " ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tid(i),
                "claude" if i % 5 == 0 else "codex",
                f"/r/{i}.jsonl",
                f"/work/p{i % 3}",
                source,
                mode,
                None if i % 7 == 0 else NOW - 1000 * i,
                NOW - 900 * i,
                NOW,
            ),
        )
        if i % 6 != 5:  # some threads have no output
            words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
            c.execute(
                "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, generated_at,"
                " last_usage, selected_for_phase2) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    tid(i),
                    NOW - 500 * (i % 17),  # ties on purpose: the order falls back to thread_id
                    f"- {words}",
                    f"# s\n{words} summary",
                    NOW - 700 * (i % 13),  # made at different times: freshness is the later of made and used
                    None if i % 3 else NOW - 300 * (i % 11),
                    1 if i % 8 == 0 else 0,
                ),
            )
        said = " ".join(WORDS[(i * 3 + k) % len(WORDS)] for k in range(5))
        c.executemany(
            "INSERT INTO search_docs (kind, source, loc, role, project, text) VALUES ('message', ?, ?, ?, ?, ?)",
            [(tid(i), 1, "user", f"/work/p{i % 3}", said), (tid(i), 2, "assistant", f"/work/p{i % 3}", f"ok {said}")],
        )
        if i % 9 == 4:
            c.execute("INSERT INTO forgotten_threads (thread_id, forgotten_at) VALUES (?, ?)", (tid(i), NOW))
    c.execute("COMMIT")
    return c


def plan(conn: sqlite3.Connection, sql: str, args: tuple[object, ...]) -> str:
    return "\n".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))


def test_retention_candidates_are_the_same_and_come_from_the_partial_index(conn):
    for cutoff in (NOW - 6000, NOW - 2000, NOW, NOW + 1):
        for limit in (1, 5, 200):
            for made_before in (0, NOW - 4000, NOW + 1):
                args = {"cutoff": cutoff, "limit": limit, "made_before": made_before}
                want = [r[0] for r in conn.execute(UNINDEXED_EXPIRED, args)]
                assert outputs.expired(conn, cutoff, limit, made_before) == want
    assert outputs.expired(conn, NOW + 1, 200, NOW + 1), "the home has candidates"
    assert not outputs.expired(conn, NOW + 1, 200, 0), "nothing expires before a first consolidation"
    got = plan(conn, outputs.EXPIRED_SQL, {"cutoff": NOW, "limit": 200, "made_before": NOW})
    assert "USING INDEX idx_stage1_outputs_freshness" in got and "TEMP B-TREE" not in got, got


def test_opted_out_threads_are_the_same_and_come_from_the_partial_index(conn):
    assert threads.opted_out_with_output(conn) == [r[0] for r in conn.execute(OLD_OPTED_OUT)]
    assert threads.opted_out_with_output(conn), "the home has opted-out threads with outputs"
    got = plan(conn, threads.OPTED_OUT_SQL, ())
    assert "USING INDEX idx_threads_memory_off" in got and "TEMP B-TREE" not in got, got


def test_user_messages_matching_reads_the_user_index_and_finds_the_same_rows(conn):
    for words in (["deploy"], ["pnpm", "tests"], ["mondays"], ["summary"], ["ok"], ["docker", "never"]):
        match = "text : (" + " AND ".join(f'"{w}"' for w in words) + ")"
        for after in (0, NOW - 20_000):
            old = sorted(tuple(r) for r in conn.execute(OLD_USER_MATCHING, (match, after)))
            assert sorted(search_index.user_messages_matching(conn, match, after)) == old, words
    assert search_index.user_messages_matching(conn, 'text : ("deploy")', 0)
    got = plan(conn, search_index.USER_MATCHING_SQL, ('text : ("deploy")', 0))
    assert f"SCAN {search_index.USER_FTS} VIRTUAL TABLE" in got and search_index.FTS not in got, got


def test_the_user_index_follows_every_insert_update_and_delete_of_a_user_message(conn):
    def found(word: str) -> set[int]:
        return {r[0] for r in conn.execute(f"SELECT rowid FROM {search_index.USER_FTS} WHERE text MATCH ?", (word,))}

    doc = conn.execute("SELECT id FROM search_docs WHERE role = 'user' LIMIT 1").fetchone()[0]
    conn.execute("UPDATE search_docs SET text = 'quinceword here' WHERE id = ?", (doc,))
    assert found("quinceword") == {doc}
    conn.execute("UPDATE search_docs SET role = 'assistant' WHERE id = ?", (doc,))
    assert found("quinceword") == set()
    conn.execute("UPDATE search_docs SET role = 'user' WHERE id = ?", (doc,))
    assert found("quinceword") == {doc}
    conn.execute("DELETE FROM search_docs WHERE id = ?", (doc,))
    assert found("quinceword") == set()
    conn.execute(
        "INSERT INTO search_docs (kind, source, loc, role, text) VALUES ('summary', 'x', 0, NULL, 'quinceword')"
    )
    assert found("quinceword") == set(), "only user messages enter it"
    user = [r[0] for r in conn.execute("SELECT id FROM search_docs WHERE kind = 'message' AND role = 'user'")]
    assert found("deploy") <= set(user) and found("deploy")
    conn.execute(f"INSERT INTO {search_index.USER_FTS} ({search_index.USER_FTS}) VALUES ('integrity-check')")


def test_the_message_mark_moves_on_a_message_and_only_on_a_message(conn):
    before = search_index.message_mark(conn)
    conn.execute("INSERT INTO search_docs (kind, source, loc, role, text) VALUES ('summary', 'x', 0, NULL, 'a')")
    conn.execute("INSERT INTO search_docs (kind, source, loc, role, text) VALUES ('memory', 'MEMORY.md', 1, NULL, 'b')")
    assert search_index.message_mark(conn) == before
    oldest = conn.execute("SELECT MIN(id) FROM search_docs WHERE kind = 'message'").fetchone()[0]
    conn.execute("DELETE FROM search_docs WHERE id = ?", (oldest,))  # not the newest: MAX(id) alone would miss it
    after_delete = search_index.message_mark(conn)
    assert after_delete != before
    conn.execute("INSERT INTO search_docs (kind, source, loc, role, text) VALUES ('message', 'x', 1, 'user', 'c')")
    assert search_index.message_mark(conn) not in (before, after_delete)


def test_an_existing_home_gets_its_user_messages_indexed_by_the_migration(tmp_path):
    """A home at the previous schema version, with messages: the upgrade indexes them, and health finds them."""
    path = tmp_path / "state.sqlite"
    c = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:-1]:
        c.executescript(script)
    c.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    c.execute(
        "INSERT INTO threads (id, source_kind, path, cwd, session_source, created_at, updated_at, ingested_at)"
        " VALUES (?, 'codex', '/r', '/w', 'cli', ?, ?, ?)",
        (tid(1), NOW, NOW, NOW),
    )
    c.execute(
        "INSERT INTO search_docs (kind, source, loc, role, project, text) VALUES"
        " ('message', ?, 1, 'user', '/w', 'we deploy on fridays'), ('message', ?, 2, 'assistant', '/w', 'deploy')",
        (tid(1), tid(1)),
    )
    c.close()
    c = sqlite3.connect(path, isolation_level=None)
    migrate(c)
    rows = search_index.user_messages_matching(c, 'text : ("deploy")', 0)
    assert [(r[1], r[2]) for r in rows] == [(tid(1), 1)]
    c.close()
