"""Forgetting and retention through one registry of every store that can hold a rollout's text
(``memtui/services/stores.py``), on the real pipeline: offline Phase 1 and 2, real git, real SQLite."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from memtui.adapters.memroot.files import MEMORY_MD, ROLLOUT_SUMMARIES
from memtui.services.context import open_context
from memtui.services.phase2 import forgotten
from tests.test_curation_cli import MARKER, T_GONE, T_KEEP, build_pipeline, cli, scan_home, show_json

KEEP_WORDS = "TZ=UTC"


@pytest.fixture
def pipeline(isolated_env, capsys, frozen_clock):
    return build_pipeline(isolated_env, capsys)


def _db(home: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(home / "state.sqlite")
    conn.row_factory = sqlite3.Row
    return conn


def _raw_db_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("state.sqlite*") if p.is_file())


def _stem(home: Path, thread_id: str) -> str:
    for f in (home / "memories" / ROLLOUT_SUMMARIES).glob("*.md"):
        if f.read_text().startswith(f"thread_id: {thread_id}"):
            return f.stem
    raise AssertionError(f"no summary file for {thread_id}")


def _forget_and_approve(capsys, thread_id: str) -> None:
    code, out, err = cli(capsys, "forget", thread_id)
    assert code == 0, err
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert code == 0, out + err
    if "awaiting review" in out:
        assert cli(capsys, "review", "approve")[0] == 0


# ---- the registry covers everything -------------------------------------------------------------------------


def test_the_registry_declares_every_table_column_and_home_folder_and_fails_on_a_new_one(pipeline, capsys):
    from memtui.services import stores

    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    assert cli(capsys, "search", "checkout")[0] in (0, 1)  # the FTS5 index and its shadow tables exist
    (home / "logs").mkdir(exist_ok=True)
    (home / "logs" / "hooks.log").write_text("ingest done\n")
    (home / "work" / "phase2-0123456789ab").mkdir(parents=True)
    (home / "batches").mkdir(exist_ok=True)
    ctx = open_context()
    try:
        assert stores.coverage_gaps(ctx.conn, home) == []
        declared = stores.declared_columns()
        assert declared["stage1_outputs"]["raw_memory"] is stores.Holds.TEXT
        assert declared["phase2_runs"]["stat"] is stores.Holds.NAMES
        # a new table, a new column and a new folder, none registered: each is named
        ctx.conn.execute("CREATE TABLE scratch_notes (thread_id TEXT, body TEXT)")
        ctx.conn.execute("ALTER TABLE threads ADD COLUMN first_words TEXT")
        (home / "exports-cache").mkdir()
        (home / "memories" / "notes").mkdir()
        assert stores.coverage_gaps(ctx.conn, home) == [
            "scratch_notes.thread_id",
            "scratch_notes.body",
            "threads.first_words",
            "exports-cache",
            "memories/notes",
        ]
    finally:
        ctx.conn.execute("DROP TABLE IF EXISTS scratch_notes")
        ctx.close()


# ---- 1. batch files ----------------------------------------------------------------------------------------------


def test_batch_files_go_when_collected_and_forget_removes_a_rollouts_lines_from_an_open_one(pipeline, capsys):
    from memtui.services import stores

    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    folder = home / "batches"
    folder.mkdir()
    lines = [
        {"custom_id": f"{T_GONE}:abc", "body": {"messages": [{"content": f"tag releases with {MARKER}"}]}},
        {"custom_id": f"{T_KEEP}:def", "body": {"messages": [{"content": "run the tests with TZ=UTC"}]}},
    ]
    open_file = folder / "sub-open.jsonl"
    open_file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done_file = folder / "sub-done.jsonl"
    done_file.write_text(json.dumps(lines[1]) + "\n")
    conn = _db(home)
    for sid, path, status in (("sub-open", open_file, "submitted"), ("sub-done", done_file, "collected")):
        conn.execute(
            "INSERT INTO batch_submissions (id, kind, status, model, worker_id, input_path, created_at, updated_at)"
            " VALUES (?, 'openai', ?, 'm', 'w', ?, 0, 0)",
            (sid, status, str(path)),
        )
    conn.commit()
    conn.close()
    assert stores.drop_finished_batch_files(open_context().conn) == 1
    assert not done_file.exists() and open_file.exists()  # a collected batch's input is not needed again
    code, _, err = cli(capsys, "forget", T_GONE)
    assert code == 0, err
    text = open_file.read_text()
    assert MARKER not in text and T_GONE not in text and "TZ=UTC" in text


# ---- 2. tombstones -----------------------------------------------------------------------------------------------


def test_forgetting_a_rollout_drops_the_tombstones_only_it_supported(pipeline, capsys):
    from memtui.state import tombstones

    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    root = home / "memories"
    memory = (root / MEMORY_MD).read_text()
    gone_line = next(x for x in memory.splitlines() if MARKER in x and x.lstrip().startswith("- "))
    (root / MEMORY_MD).write_text(memory.replace(gone_line + "\n", ""))  # a person deletes the marker line
    _code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    conn = _db(home)
    rows = conn.execute("SELECT hash, thread_ids FROM tombstones").fetchall()
    assert [json.loads(r["thread_ids"]) for r in rows] == [[T_GONE]], out + err
    assert rows[0]["hash"] == tombstones.line_hash(gone_line)
    assert MARKER.encode() not in (root / MEMORY_MD).read_bytes()
    conn.execute(
        "INSERT INTO tombstones (hash, file, thread_ids, created_at) VALUES ('shared', 'MEMORY.md', ?, 0)",
        (json.dumps([T_GONE, T_KEEP]),),
    )
    conn.execute("INSERT INTO tombstones (hash, file, thread_ids, created_at) VALUES ('mine', 'MEMORY.md', '[]', 0)")
    conn.commit()
    if "awaiting review" in out:
        assert cli(capsys, "review", "approve")[0] == 0
    assert cli(capsys, "forget", T_GONE)[0] == 0
    left = {r["hash"]: json.loads(r["thread_ids"]) for r in conn.execute("SELECT * FROM tombstones")}
    assert left == {"shared": [T_KEEP], "mine": []}  # the line another rollout supports stays banned
    conn.close()


# ---- 3. names ------------------------------------------------------------------------------------------------------


def test_a_forgotten_rollouts_summary_name_leaves_run_records_decisions_and_history(pipeline, capsys):
    home = pipeline["MEMTUI_HOME"]
    stem = _stem(home, T_GONE)
    slug_words = stem.split("-", 4)[-1]  # <date>T<time>-<hash>-<slug>: the rollout's first words
    assert cli(capsys, "review", "approve")[0] == 0
    assert stem in cli(capsys, "history", "--json")[1] or stem.encode() in _raw_db_bytes(home)
    _forget_and_approve(capsys, T_GONE)
    conn = _db(home)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for table, cols in (
        ("phase2_runs", "stat, reviewed_files, included_changes, written_files, reason"),
        ("decisions", "files_in, files_out, hunks_in, hunks_out"),
        ("meta", "key, value"),
    ):
        for row in conn.execute(f"SELECT {cols} FROM {table}"):
            assert not any(v and stem in str(v) for v in row), (table, tuple(row))
    conn.close()
    history = cli(capsys, "history", "--json")[1]
    assert stem not in history and slug_words not in history
    assert stem.encode() not in _raw_db_bytes(home)
    assert "(forgotten)" in history  # the decision keeps its counts: one summary file out


# ---- 4 and 7. left-out hunks ------------------------------------------------------------------------------------


def test_a_left_out_hunk_loses_only_the_forgotten_rollouts_lines(isolated_env, capsys, frozen_clock):
    seed = {MEMORY_MD: "# Memory\n\nNotes I keep by hand.\n", "memory_summary.md": "v1\nMy summary.\n"}
    home = build_pipeline(isolated_env, capsys, seed=seed)["MEMTUI_HOME"]
    hunk = next(h for h in show_json(capsys)["hunks"] if h["file"] == MEMORY_MD)
    assert MARKER in hunk["text"] and KEEP_WORDS in hunk["text"]  # one hunk with both rollouts' lines
    assert cli(capsys, "review", "approve", "--except", hunk["id"], "--reason", "not yet")[0] == 0
    _forget_and_approve(capsys, T_GONE)
    conn = _db(home)
    rows = conn.execute("SELECT text, added, thread_ids, reason FROM rejected_hunks").fetchall()
    conn.close()
    assert len(rows) == 1, "the person's decision on the other rollout's lines still stands"
    text, added = rows[0]["text"], json.loads(rows[0]["added"])
    assert KEEP_WORDS in text and any(KEEP_WORDS in a for a in added) and rows[0]["reason"] == "not yet"
    assert MARKER not in text and not any(MARKER in a for a in added) and T_GONE not in rows[0]["thread_ids"]
    assert MARKER.encode() not in _raw_db_bytes(home)
    # the next run still does not learn the left-out lines of the rollout that is remembered
    assert KEEP_WORDS not in (home / "memories" / MEMORY_MD).read_text()


# ---- 5. killed CLI runs -----------------------------------------------------------------------------------------


def test_a_killed_cli_runs_copy_of_git_is_removed_by_the_next_phase2_and_by_forget(pipeline, capsys):
    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    left = home / "work" / "phase2-deadbeef0001" / "git"
    left.mkdir(parents=True)
    (left / "COMMIT_EDITMSG").write_text(f"copy of .git holding {MARKER}")
    _code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert not left.parent.exists(), out + err
    left.mkdir(parents=True)
    (left / "x").write_text(MARKER)
    assert cli(capsys, "forget", T_GONE)[0] == 0
    assert not left.parent.exists()


# ---- 6. lineage, not mentions -----------------------------------------------------------------------------------

SHARED = "Always sign the release tags with the team key before publishing."


def test_a_line_two_rollouts_support_stays_until_both_are_forgotten_and_a_persons_line_stays(
    isolated_env, capsys, frozen_clock
):
    from tests.fixtures.rollouts import write_codex_rollout

    codex = isolated_env["CODEX_HOME"]
    home = isolated_env["MEMTUI_HOME"]
    a, b = "019a0000-0000-7000-8000-0000000000a1", "019a0000-0000-7000-8000-0000000000b2"
    for tid, extra in ((a, "The deploy failed."), (b, "Publishing broke again.")):
        write_codex_rollout(codex, thread_id=tid, cwd="/home/ana/src/shop-api", user_messages=[f"{extra} {SHARED}"])
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    assert cli(capsys, "--set", "provider=offline", "phase1", "--all")[0] == 0
    assert cli(capsys, "--set", "provider=offline", "phase2", "--force", "--auto-approve")[0] == 0
    root = home / "memories"
    shared_key = "sign the release tags with the team key"
    assert shared_key in (root / MEMORY_MD).read_text().lower()
    person = [
        "",
        "## My notes",
        f"- {SHARED}",  # the same words, typed by the person
        f"- I checked this myself (thread_id={b})",
    ]
    (root / MEMORY_MD).write_text((root / MEMORY_MD).read_text() + "\n".join(person) + "\n")
    assert cli(capsys, "review", "commit", "-m", "my notes")[0] == 0

    _forget_and_approve(capsys, a)
    text = (root / MEMORY_MD).read_text()
    generated = text.split("## My notes")[0].lower()
    assert shared_key in generated, "b still supports the line"
    assert f"- I checked this myself (thread_id={b})" in text

    code, _, _ = cli(capsys, "forget", b)
    assert code == 0
    assert cli(capsys, "--set", "provider=offline", "phase2", "--force")[0] == 0
    _code, _shown, err = cli(capsys, "review", "show")
    assert "a line you wrote mentions a forgotten rollout" in err
    assert cli(capsys, "review", "approve")[0] == 0
    text = (root / MEMORY_MD).read_text()
    generated, mine = text.split("## My notes")
    assert shared_key not in generated.lower(), "no rollout supports it any more"
    assert f"- {SHARED}" in mine and f"- I checked this myself (thread_id={b})" in mine  # a person's: never removed


def test_a_line_citing_a_remembered_rollout_loses_only_the_forgotten_citation():
    from memtui.services import stores

    t = stores.Target("gone-1", frozenset({"2026-07-10T05-00-00-abcd-tag_releases"}), frozenset())
    text = (
        "- tag releases first [thread_id=gone-1, thread_id=kept-2]\n"
        "- pointer only (rollout_summaries/2026-07-10T05-00-00-abcd-tag_releases.md)\n"
        "- unrelated line\n"
    )
    assert stores.scrub_text("memory_summary.md", text, t) == (
        "- tag releases first [thread_id=kept-2]\n- unrelated line\n"
    )


# ---- 8: reset keeps forget marks ---------- ------------------------------------------------------------------


def test_reset_state_keeps_forget_marks_and_says_what_it_drops_first(pipeline, capsys):
    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    _forget_and_approve(capsys, T_GONE)
    code, out, err = cli(capsys, "doctor", "--reset-state", "--yes")
    assert code == 0, err
    keeps = out.index("keeps: 1 forget mark(s)")
    drops = out.index("drops (still readable in the set-aside copy):")
    assert keeps < drops < out.index("moved ")
    assert "kept history version(s)" in out and "decision record(s)" in out
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    assert cli(capsys, "--set", "provider=offline", "phase1", "--all")[0] == 0
    conn = _db(home)
    assert conn.execute("SELECT COUNT(*) FROM stage1_outputs WHERE thread_id=?", (T_GONE,)).fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM stage1_outputs WHERE thread_id=?", (T_KEEP,)).fetchone()[0] == 1
    conn.close()
    assert cli(capsys, "search", MARKER)[0] == 1  # not searchable again
    assert MARKER.encode() not in (home / "state.sqlite").read_bytes()


# ---- 9. every decision refreshes the index ----------------------------------------------------------------------


def test_reject_commit_and_restore_refresh_the_search_index_without_a_search(pipeline, capsys):
    """The TUI calls these same functions: the index follows each decision, not the next CLI search."""
    from memtui.services import history, search
    from memtui.services.phase2 import restore, review

    home = pipeline["MEMTUI_HOME"]
    root = home / "memories"
    ctx = open_context()
    try:
        search.refresh_memory_index(ctx.conn, root)  # the index holds approved files only: a pending run is not in it
        assert _memory_docs(ctx.conn, MARKER) == 0
        review.reject(ctx, "no")
        assert _memory_docs(ctx.conn, MARKER) == 0
        assert MARKER.encode() not in b"".join(
            r[0] for r in ctx.conn.execute("SELECT block FROM search_docs_fts_data")
        ), "the FTS segments were purged"
        (root / MEMORY_MD).write_text("# Notes\n- ORCHIDVALE7 is the staging host\n")
        review.commit_manual_edit(ctx, "mine")
        assert _memory_docs(ctx.conn, "ORCHIDVALE7") == 1
        first = history.list_decisions(ctx.conn)[0].id
        (root / MEMORY_MD).write_text("# Notes\n- PLUMCREST9 is the staging host\n")
        review.commit_manual_edit(ctx, "mine again")
        assert _memory_docs(ctx.conn, "ORCHIDVALE7") == 0
        restore.restore_version(ctx, first)  # a restore is a run awaiting review: agents do not search it yet
        assert _memory_docs(ctx.conn, "ORCHIDVALE7") == 0
        review.approve(ctx)
        assert _memory_docs(ctx.conn, "ORCHIDVALE7") == 1
    finally:
        ctx.close()


def _memory_docs(conn: sqlite3.Connection, word: str) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM search_docs WHERE kind='memory' AND text LIKE ?", (f"%{word}%",)
    ).fetchone()[0]


# ---- 10. retention and opt-outs ---------------------------------------------------------------------------------


def test_retention_runs_at_the_start_of_phase1_and_phase2_and_by_command(pipeline, capsys):
    from memtui.core import clock

    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    conn = _db(home)
    conn.execute("UPDATE stage1_outputs SET selected_for_phase2=0")  # no longer selected
    conn.commit()
    clock.freeze(clock.now_s() + 40 * 86_400)  # unused for 40 days > max_unused_days (30)
    code, out, err = cli(capsys, "--set", "provider=offline", "phase1", "--json")
    assert code == 0, err
    assert json.loads(out)["expired"] == 2
    assert conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM search_docs WHERE kind IN ('summary', 'raw_memory')").fetchone()[0] == 0
    code, out, _ = cli(capsys, "retention")
    assert code == 0 and "nothing expired" in out
    code, out, _ = cli(capsys, "forget", "--expired", "--json")
    assert code == 0 and json.loads(out)["expired"] == 0
    conn.close()


def test_retention_count_is_in_the_phase2_summary(isolated_env, frozen_clock):
    from memtui.services.phase2.consolidate import run_phase2
    from tests.test_phase2_support import add_output, context

    ctx = context()
    try:
        add_output(ctx.conn, "old-thread", frozen_clock - 60 * 86_400, raw="- an old learning nobody used\n")
        add_output(ctx.conn, "new-thread", frozen_clock - 3600, raw="- a fresh learning about caching\n")
        from memtui.state import runs

        runs.insert_no_changes(ctx.conn, frozen_clock - 50 * 86_400, True, None, None, 0)  # read old-thread then
        result = run_phase2(ctx, offline=True, force=True)
        assert result.expired == 1 and "retention: 1 stage-1 output(s)" in result.message()
        from memtui.tui.tasks import describe_phase2

        assert "retention removed 1 unused output" in describe_phase2(result).summary
    finally:
        ctx.close()


def test_a_rollout_whose_memory_is_turned_off_after_extraction_is_forgotten_at_the_next_run(pipeline, capsys):
    from memtui.state.threads import get_thread, upsert_threads

    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    ctx = open_context()
    thread = get_thread(ctx.conn, T_GONE)
    assert thread is not None
    upsert_threads(ctx.conn, [thread.model_copy(update={"memory_mode": "disabled"})])  # the column's owner
    ctx.close()
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert code == 0, err
    assert f"opt-outs: forgot 1 rollout(s) whose memory was turned off after extraction ({T_GONE})" in out
    assert forgotten.is_forgotten(_db(home), T_GONE)
    assert MARKER not in (home / "memories" / MEMORY_MD).read_text()
    assert cli(capsys, "review", "approve")[0] == 0
    conn = _db(home)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    found = scan_home(home, MARKER)
    assert found == [], found


@pytest.fixture(autouse=True)
def _no_leftover_clock():
    yield
    from memtui.core import clock

    clock.reset()


def test_a_killed_phase1_cli_calls_scratch_folder_goes_at_the_next_run_a_live_one_stays(pipeline, capsys):
    home = pipeline["MEMTUI_HOME"]
    stale, live = home / "work" / "codex-stale01", home / "work" / "codex-live0001"
    for folder in (stale, live):
        folder.mkdir(parents=True)
        (folder / "last_message.json").write_text(f'{{"raw_memory": "{MARKER}"}}')
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    assert cli(capsys, "--set", "provider=offline", "phase1")[0] == 0
    assert not stale.exists() and live.exists()


def test_a_codex_opt_out_appended_after_extraction_forgets_the_rollout_end_to_end(pipeline, capsys):
    """The whole path, as Codex writes it: the user turns memories off for a thread that was already extracted
    and approved, so Codex appends a second ``session_meta`` with ``memory_mode: "disabled"`` (the last one wins).
    The next ingest records it, the next Phase 2 forgets the rollout, and after approval its words are nowhere."""
    home = pipeline["MEMTUI_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    assert MARKER in (home / "memories" / MEMORY_MD).read_text()
    [path] = [p for p in pipeline["CODEX_HOME"].rglob("*.jsonl") if T_GONE in p.name]
    first = json.loads(path.read_text().splitlines()[0])
    assert first["type"] == "session_meta"
    first["payload"]["memory_mode"] = "disabled"
    with path.open("a") as f:
        f.write(json.dumps(first, separators=(",", ":")) + "\n")  # compact, as Codex (serde_json) writes it
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert code == 0, err
    assert f"forgot 1 rollout(s) whose memory was turned off after extraction ({T_GONE})" in out
    assert cli(capsys, "review", "approve")[0] == 0
    assert MARKER not in (home / "memories" / MEMORY_MD).read_text()
    conn = _db(home)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert scan_home(home, MARKER) == []
    assert KEEP_WORDS in (home / "memories" / MEMORY_MD).read_text()
