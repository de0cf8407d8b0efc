"""Codex 0.169's history read as Codex reads it, on real files (tests/fixtures/codex_homes.py says how each was made):
paginated rollouts are eligible, every line kind is read or knowingly skipped and the user's words come once,
a fork or revert is read from its history base, and Codex's state database decides its switches."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memtui.adapters.rollouts import codex, codex_state
from memtui.adapters.rollouts import filter as rollout_filter
from memtui.adapters.rollouts.model import Origin, Transcript
from memtui.adapters.sources import memory_items
from memtui.core.settings import Settings
from memtui.domain.render import render_items
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.eligibility import Candidate, select_candidates
from memtui.services.phase1.extractor import MEMORY_TURNED_OFF, read_items
from memtui.services.phase1.run import run_phase1
from memtui.state.threads import get_thread
from tests.fixtures import codex_homes

PARENT = "01a23583-d356-7e10-9432-4bdae11cd2ed"  # exec: pnpm, then resumed: port 4000
FORK = "01a23583-d98f-79f2-8a11-91c78a7c115f"  # exec fork of PARENT: staging
TUI_OFF = "01a23585-7b76-70f3-ba27-09908fba8faa"  # TUI: Postgres 16, /memories off, BLUEBIRD
REVERTED = "01a2358a-d4b5-7062-a8e9-0d0f7228b8b9"  # TUI: Buildkite, Fridays (reverted), Tuesdays
SUBAGENT = "01a2358a-1638-7433-8ef7-1da29a9dadff"


@pytest.fixture
def ctx(isolated_env):
    context = open_context()
    yield context
    context.close()


def _said(path: Path) -> list[str]:
    return Transcript(memory_items(path, "codex")).user_texts()


def _items(path: Path) -> Transcript:
    return Transcript(memory_items(path, "codex"))


def _file(paths: list[Path], thread_id: str, suffixed: bool = False) -> Path:
    return next(p for p in paths if thread_id in p.name and ("_" in p.name) == suffixed)


# --- 1. paginated sessions are eligible, as current Codex judges them -------------------------------------------


def test_a_paginated_interactive_session_is_eligible_and_not_called_memory_disabled(ctx, isolated_env):
    codex_homes.install("tui_revert", isolated_env["CODEX_HOME"])
    run_ingest(ctx)
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.history_mode == "paginated" and thread.session_source == "vscode"
    candidates, skipped = select_candidates(ctx.conn, Settings(), all_threads=True)
    assert [c.thread_id for c in candidates] == [REVERTED]
    assert "memory_disabled" not in skipped


def test_exec_and_sub_agent_sessions_are_not_interactive_not_memory_disabled(ctx, isolated_env):
    codex_homes.install("exec", isolated_env["CODEX_HOME"])
    codex_homes.install("subagent", isolated_env["CODEX_HOME"])
    run_ingest(ctx)
    candidates, skipped = select_candidates(ctx.conn, Settings(), all_threads=True)
    assert candidates == []
    assert skipped == {"not_interactive": 5}


# --- 2. the paginated shape: every line kind read or knowingly skipped, the user's words once --------------------


def _line_kinds(path: Path) -> set[str]:
    kinds = set()
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        payload = obj.get("payload") or {}
        sub = payload.get("type") if isinstance(payload, dict) else None
        if obj["type"] == "event_msg" and sub == "item_completed":
            sub = f"item_completed:{payload['item']['type']}"
        kinds.add(f"{obj['type']}:{sub}" if obj["type"] in ("event_msg", "response_item") else obj["type"])
        assert isinstance(obj.get("ordinal"), int)
    return kinds


def test_every_line_kind_of_the_real_sessions_is_read_or_knowingly_skipped():
    seen: set[str] = set()
    for scenario in codex_homes.SCENARIOS:
        for path in codex_homes.rollouts(scenario):
            seen |= _line_kinds(path)
    known = rollout_filter.CODEX_LINES_READ | rollout_filter.CODEX_LINES_SKIPPED
    assert seen - known == set()
    assert {"world_state", "token_usage_record", "event_msg:thread_settings_applied"} <= seen


def test_the_users_words_come_once_though_a_paginated_file_writes_each_prompt_twice():
    path = _file(codex_homes.rollouts("exec"), PARENT)
    data = path.read_text()
    assert data.count('"Always use pnpm in this repo."') == 2  # a user message and an item_completed event
    assert _said(path) == ["Always use pnpm in this repo.", "The dev server runs on port 4000."]
    labels = [i.label for i in _items(path) if i.origin is Origin.CONTEXT]
    assert labels == ["environments.environment_context"]  # AGENTS.md dropped, nothing else injected


def test_a_prompt_only_an_item_completed_event_carries_is_the_users_words(tmp_path):
    """The same real file less its user message line: the ``item_completed`` ``UserMessage`` still says it."""
    src = _file(codex_homes.rollouts("exec"), PARENT)
    lines = [
        line
        for line in src.read_bytes().splitlines(keepends=True)
        if b'"role":"user","content":[{"type":"input_text","text":"Always use pnpm' not in line
    ]
    path = tmp_path / src.name
    path.write_bytes(b"".join(lines))
    assert _said(path) == ["Always use pnpm in this repo.", "The dev server runs on port 4000."]


def test_harness_kinds_of_real_sessions_are_never_the_users_words():
    for scenario in codex_homes.SCENARIOS:
        for path in codex_homes.rollouts(scenario):
            for item in _items(path):
                if item.origin is Origin.USER:
                    assert not item.text.lstrip().startswith(("<", "# AGENTS.md")), (path.name, item.text[:80])


def test_a_sub_agents_task_is_its_parent_agents_words_not_the_users():
    path = _file(codex_homes.rollouts("subagent"), SUBAGENT)
    items = _items(path)
    assert items.user_texts() == []
    [task] = [i for i in items if i.origin is Origin.AGENT]
    assert task.text == "Count the files in the repo and report." and task.author is not None


# --- 3. forks and reverts read from their history base ---------------------------------------------------------


def test_a_forks_preview_is_its_parents_first_prompt_and_its_input_holds_the_inherited_turns_once_as_context():
    paths = codex_homes.rollouts("exec")
    fork = _file(paths, FORK)
    data = fork.read_bytes()
    assert b"Always use pnpm" not in data  # paginated: the fork's file holds only its new turn
    result = codex.index_file(fork, data, size=len(data), mtime_ns=0, archived=False, now=0)
    assert result.thread is not None and result.thread.preview == "Always use pnpm in this repo."
    items = _items(fork)
    assert items.user_texts() == ["In this branch we deploy to staging."]
    inherited = [i.text for i in items if i.label == rollout_filter.INHERITED]
    assert inherited == [
        "Always use pnpm in this repo.",
        "noted: pnpm",
        "The dev server runs on port 4000.",
        "noted: port",
    ]


def test_a_revert_is_read_through_its_base_and_the_reverted_turn_is_not_said(ctx, isolated_env):
    paths = codex_homes.install("tui_revert", isolated_env["CODEX_HOME"])
    revert = _file(paths, REVERTED, suffixed=True)
    assert _said(revert) == ["s on Buildkite.Our CI runs on Buildkite.", "Deploys happen on Tuesdays."]
    summary = run_ingest(ctx)
    assert summary.new == 1 and summary.skipped == 1  # the original file: the same thread, displaced
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.path == str(revert)
    assert thread.preview == "s on Buildkite.Our CI runs on Buildkite."


def test_a_missing_base_leaves_the_prefix_out_and_says_so(tmp_path):
    fork = _file(codex_homes.rollouts("exec"), FORK)
    lone = tmp_path / "sessions" / "2026" / "12" / "02" / fork.name
    lone.parent.mkdir(parents=True)
    lone.write_bytes(fork.read_bytes())
    data = lone.read_bytes()
    result = codex.index_file(lone, data, size=len(data), mtime_ns=0, archived=False, now=0)
    assert result.thread is not None and result.thread.preview == "In this branch we deploy to staging."
    assert "history base" in (result.reason or "")
    assert _said(lone) == ["In this branch we deploy to staging."]


def test_the_forks_phase1_input_holds_the_inherited_turns_once_and_only_the_parent_extracts_them(ctx, isolated_env):
    """Both threads made interactive (a TUI fork is the same shape): the inherited statement is no memory of the fork."""
    home = isolated_env["CODEX_HOME"]
    paths = codex_homes.install("exec", home, state=False)
    for p in paths:  # "exec" -> "cli" keeps every length, so the fork's base offset still holds
        p.write_bytes(p.read_bytes().replace(b'"source":"exec"', b'"source":"cli"', 1))
    run_ingest(ctx)
    fork = get_thread(ctx.conn, FORK)
    assert fork is not None
    rendered = render_items(read_items(Candidate(FORK, "codex", fork.path, fork.cwd, fork.updated_at)))
    assert rendered.count("Always use pnpm in this repo.") == 1
    assert f"context {rollout_filter.INHERITED}" in rendered
    summary = run_phase1(ctx, offline=True, all_threads=True)
    assert summary.succeeded + summary.noop == 3 and summary.failed == 0
    rows = {r[0]: r[1] for r in ctx.conn.execute("SELECT thread_id, raw_memory FROM stage1_outputs")}
    assert "Always use pnpm" in rows[PARENT]
    assert all("Always use pnpm" not in memory for tid, memory in rows.items() if tid != PARENT)


def test_a_fork_read_before_its_base_arrived_is_read_again_when_the_base_appears(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    paths = codex_homes.install("exec", home, state=False)
    parent_files = [p for p in paths if PARENT in p.name]
    away = home.parent / "away"
    away.mkdir()
    for p in parent_files:
        p.rename(away / p.name)
    run_ingest(ctx)
    fork = get_thread(ctx.conn, FORK)
    assert fork is not None and fork.preview == "In this branch we deploy to staging."
    assert "history base" in (fork.ingest_reason or "")
    for p in parent_files:  # the parent's file comes back (restored, or copied from another machine)
        (away / p.name).rename(p)
    summary = run_ingest(ctx)
    fork = get_thread(ctx.conn, FORK)
    assert fork is not None and fork.preview == "Always use pnpm in this repo."
    assert "history base" not in (fork.ingest_reason or "")
    assert summary.unchanged == len(paths) - len(parent_files) - 1  # only the parent and the fork were read
    assert run_ingest(ctx).unchanged == len(paths)  # and once read with its base, never again for this reason


# --- 4. Codex's state database decides its switches ------------------------------------------------------------


def test_memories_turned_off_in_the_tui_live_only_in_codexs_state_and_are_honoured(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    [path] = codex_homes.install("tui_memories_off", home)
    assert b'"memory_mode"' not in path.read_bytes()  # the rollout says nothing of it
    run_ingest(ctx)
    thread = get_thread(ctx.conn, TUI_OFF)
    assert thread is not None and thread.memory_mode == "disabled"
    summary = run_phase1(ctx, offline=True, all_threads=True)
    assert summary.claimed == 0
    assert ctx.conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 0


def test_turned_off_after_extraction_the_memory_is_forgotten(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_memories_off", home)
    codex_homes.set_state(home, TUI_OFF, memory_mode="enabled")
    run_ingest(ctx)
    assert run_phase1(ctx, offline=True, all_threads=True).succeeded == 1
    codex_homes.set_state(home, TUI_OFF, memory_mode="disabled")  # no rollout line changes
    assert run_ingest(ctx).updated == 1
    summary = run_phase1(ctx, offline=True, all_threads=True)
    assert summary.opted_out == [TUI_OFF]
    assert ctx.conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 0


def test_memories_turned_off_in_codexs_state_after_ingest_are_honoured_before_the_next_ingest(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_memories_off", home)
    codex_homes.set_state(home, TUI_OFF, memory_mode="enabled")
    run_ingest(ctx)
    codex_homes.set_state(home, TUI_OFF, memory_mode="disabled")
    summary = run_phase1(ctx, offline=True, all_threads=True)
    assert summary.succeeded == 0 and summary.failed == 1
    error = ctx.conn.execute("SELECT error FROM job_runs ORDER BY rowid DESC LIMIT 1").fetchone()[0]
    assert error == MEMORY_TURNED_OFF
    assert ctx.conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 0


def test_archived_in_codexs_state_is_archived(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_revert", home)
    codex_homes.set_state(home, REVERTED, archived=1)
    run_ingest(ctx)
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.archived


def test_the_source_in_codexs_state_decides_as_codexs_claim_query_does(ctx, isolated_env):
    """Codex claims a thread for memory by its state row's ``source``; where the row says ``exec`` (or a sub-agent's
    JSON), the thread is not interactive whatever its rollout says."""
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_revert", home)
    codex_homes.set_state(home, REVERTED, source="exec")
    run_ingest(ctx)
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.session_source == "exec"
    candidates, skipped = select_candidates(ctx.conn, Settings(), all_threads=True)
    assert candidates == [] and skipped.get("not_interactive") == 1
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}
    codex_homes.set_state(home, REVERTED, source=json.dumps(spawn))
    codex_homes.set_state(home, REVERTED, archived=1)  # a state change the next ingest re-reads the file for
    run_ingest(ctx)
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.session_source == "subagent" and thread.parent_thread_id == PARENT


def test_a_name_in_codexs_state_is_the_threads_title(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_revert", home)
    codex_homes.set_state(home, REVERTED, name="CI migration plan")
    run_ingest(ctx)
    thread = get_thread(ctx.conn, REVERTED)
    assert thread is not None and thread.title == "CI migration plan"


def test_the_state_database_is_read_without_writing_creating_or_locking_anything(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_memories_off", home)
    conn = sqlite3.connect(home / "state_5.sqlite")
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"  # as Codex keeps it
    conn.close()  # the last connection closed: -wal and -shm removed, as when Codex has exited
    before = {p.name: p.stat().st_mtime_ns for p in home.iterdir()}
    assert "state_5.sqlite-wal" not in before
    run_ingest(ctx)
    after = {p.name: p.stat().st_mtime_ns for p in home.iterdir()}
    assert after == before  # no -wal, no -shm, nothing touched
    thread = get_thread(ctx.conn, TUI_OFF)
    assert thread is not None and thread.memory_mode == "disabled"  # and it was read


def test_no_state_database_is_no_warning_and_none_is_created(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_revert", home, state=False)
    summary = run_ingest(ctx)
    assert summary.warnings == [] and not list(home.glob("state_*"))


def test_a_locked_state_database_is_one_warning_and_the_rollouts_decide(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_memories_off", home)
    (home / "state_5.sqlite-wal").write_bytes(b"")  # a writer is about: read with mode=ro, through locks
    holder = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        summary = run_ingest(ctx)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(summary.warnings) == 1 and "state_5.sqlite" in summary.warnings[0]
    thread = get_thread(ctx.conn, TUI_OFF)
    assert thread is not None and thread.memory_mode == "enabled"  # the rollout's word, until the state can be read


def test_a_newer_state_schema_is_one_warning(ctx, isolated_env):
    home = isolated_env["CODEX_HOME"]
    codex_homes.install("tui_revert", home, state=False)
    conn = sqlite3.connect(home / "state_6.sqlite")
    conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, memory_settings TEXT)")
    conn.commit()
    conn.close()
    summary = run_ingest(ctx)
    assert len(summary.warnings) == 1 and "newer" in summary.warnings[0]


def test_the_newest_state_database_is_the_one_read(tmp_path):
    for n in (4, 5, 12):
        sqlite3.connect(tmp_path / f"state_{n}.sqlite").close()
    assert codex_state.newest_state_db(tmp_path) == tmp_path / "state_12.sqlite"


# --- legacy forks (before paginated history): a copy of the parent's items ---------------------------------------


def _legacy_fork(home: Path) -> tuple[str, str]:
    """A legacy parent, and a fork whose file is its own header, the parent's items as they were (new timestamps,
    as codex-rs wrote them) and one new turn."""
    from tests.fixtures.rollouts import BASE_TIME, codex_lines, new_thread_id, write_codex_rollout

    parent, fork = new_thread_id(), new_thread_id()
    said = ("Always use pnpm in this repo, never npm.",)
    parent_lines = codex_lines(thread_id=parent, user_messages=said)
    write_codex_rollout(home, thread_id=parent, lines=parent_lines)
    own = codex_lines(thread_id=fork, user_messages=("Deploy this branch to staging only.",))
    own[0]["payload"]["forked_from_id"] = parent
    copied = [{**line, "timestamp": "2026-12-01T10:00:00.000Z"} for line in parent_lines[1:]]
    write_codex_rollout(home, thread_id=fork, lines=[own[0], *copied, *own[1:]], when=BASE_TIME.replace(minute=30))
    return parent, fork


def test_a_legacy_forks_copy_of_its_parent_is_inherited_context_and_only_the_parent_extracts_it(ctx, isolated_env):
    parent, fork = _legacy_fork(isolated_env["CODEX_HOME"])
    run_ingest(ctx)
    row = get_thread(ctx.conn, fork)
    assert row is not None
    items = _items(Path(row.path))
    assert items.user_texts() == ["Deploy this branch to staging only."]
    rendered = render_items(read_items(Candidate(fork, "codex", row.path, row.cwd, row.updated_at)))
    assert rendered.count("Always use pnpm in this repo, never npm.") == 1
    assert f"context {rollout_filter.INHERITED}" in rendered
    summary = run_phase1(ctx, offline=True, all_threads=True)
    assert summary.failed == 0
    rows = {r[0]: r[1] for r in ctx.conn.execute("SELECT thread_id, raw_memory FROM stage1_outputs")}
    assert "pnpm" in rows[parent]
    assert "pnpm" not in rows.get(fork, "")


def test_a_legacy_fork_whose_parent_is_gone_keeps_the_copy_as_its_own(tmp_path):
    home = tmp_path / "codex-home"
    parent, fork = _legacy_fork(home)
    for p in home.rglob(f"*{parent}*"):
        p.unlink()
    path = next(home.rglob(f"*{fork}*"))
    assert _said(path) == ["Always use pnpm in this repo, never npm.", "Deploy this branch to staging only."]
