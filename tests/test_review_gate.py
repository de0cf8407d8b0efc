"""Issue 10's numbered failures of the review gate, one test each (each failed on the old main), with real git,
SQLite, processes and the loopback model server.

The editor (2), quit (3) and the TUI's view of pending edits (8) are tested in ``tests/tui/test_gate_flows.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memtui.adapters.memroot.baseline import head_commit, run_git
from memtui.adapters.memroot.view import views_dir
from memtui.cli import main
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.tools import Journal, MemoryTools
from memtui.state.db import checkpoint_wal
from memtui.state.global_job import read_global_job
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.support.waiting import HANG_GUARD, Gate, wait_until
from tests.test_phase2_support import add_output, context, git_objects

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
SUMMARY = "v1\n## User Profile\n- a developer\n"


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    yield c
    c.close()


@pytest.fixture
def agent_ctx(frozen_clock, model_env):
    """A context built after the loopback model is configured (provider openai)."""
    c = context()
    yield c
    c.close()


def awaiting(ctx, thread=A, **kw):
    add_output(ctx.conn, thread, FROZEN_NOW - 3600, **kw)
    result = run_phase2(ctx, offline=True, force=True)
    assert result.outcome == "awaiting_review", result
    return result


# --- 1. approve commits exactly what was reviewed ------------------------------------------------------------------


def test_1_approve_refuses_a_file_changed_after_the_run_and_names_it(ctx, capsys):
    root = ctx.paths.memory_root
    awaiting(ctx)
    base = head_commit(root)
    memory = root / "MEMORY.md"
    memory.write_text(memory.read_text() + "- a line nobody reviewed\n")

    with pytest.raises(review.ChangedSinceRun) as refused:
        review.approve(ctx)
    assert refused.value.files == [("M", "MEMORY.md")] and "MEMORY.md (M)" in str(refused.value)
    assert "--include-changes" in str(refused.value)
    assert head_commit(root) == base and review.pending_run(ctx.conn) is not None  # nothing was approved
    assert "MEMORY.md" not in run_git(root, "ls-tree", "--name-only", "HEAD")
    assert "a line nobody reviewed" in memory.read_text()  # and the person's line is still on disk

    assert main(["review", "approve"]) == 1
    assert "MEMORY.md (M) changed since run" in capsys.readouterr().err

    # review show: the run's diff, and separately what changed since the run.
    state = review.review_state(ctx)
    assert state.since_run is not None and state.since_run.stat == [("M", "MEMORY.md")]
    assert "+- a line nobody reviewed" in state.since_run.diff
    assert "a line nobody reviewed" not in state.run.diff
    assert main(["review", "show"]) == 0
    out = capsys.readouterr().out
    run_part, since_part = out.split("=== changed since the run")
    assert "+# Task Group: /work/proj" in run_part and "a line nobody reviewed" not in run_part
    assert "+- a line nobody reviewed" in since_part and f"--expect {state.since_run.tree}" in since_part
    assert main(["review", "show", "--json"]) == 0
    shown_json = json.loads(capsys.readouterr().out)
    assert shown_json["since_run"]["stat"] == [["M", "MEMORY.md"]] and shown_json["tree"] == state.run.reviewed_tree

    # Approving with the changes, pinned to what was shown: refused if the root changed again since.
    memory.write_text(memory.read_text() + "- and one more\n")
    with pytest.raises(review.ChangedSinceRun, match="changed again after you looked"):
        review.approve(ctx, include_changes=True, expected_tree=state.since_run.tree)
    assert head_commit(root) == base
    shown = review.review_state(ctx).since_run
    decided = review.approve(ctx, include_changes=True, expected_tree=shown.tree)
    assert decided.included_changes == [("M", "MEMORY.md")]
    assert "- and one more" in run_git(root, "show", "HEAD:MEMORY.md")
    assert review.get_run(ctx.conn, decided.run_id).included_changes == [("M", "MEMORY.md")]


def test_1_approve_of_an_untouched_run_commits_the_recorded_tree(ctx):
    root = ctx.paths.memory_root
    result = awaiting(ctx)
    run = review.pending_run(ctx.conn)
    assert run.reviewed_tree and run.reviewed_files["MEMORY.md"]
    assert {p for _, p in result.stat} <= set(run.reviewed_files)
    decided = review.approve(ctx)
    assert run_git(root, "rev-parse", "HEAD^{tree}").strip() == run.reviewed_tree
    assert decided.included_changes == []


def test_1_cli_include_changes(ctx, capsys):
    root = ctx.paths.memory_root
    awaiting(ctx)
    (root / "MEMORY.md").write_text("# Memory\n\nreplaced by hand\n")
    assert main(["review", "approve", "--include-changes"]) == 0
    assert "included MEMORY.md (changed since the run)" in capsys.readouterr().out
    assert run_git(root, "show", "HEAD:MEMORY.md") == "# Memory\n\nreplaced by hand\n"


# --- 4. the undo of a failed run keeps a person's edit ---------------------------------------------------------------


def test_4_a_failed_runs_undo_keeps_a_file_edited_while_the_run_was_going(agent_ctx, model_env):
    ctx, server = agent_ctx, model_env
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True, auto_approve=True)
    memory = root / "MEMORY.md"
    edited = memory.read_text() + "\n- the person's own line, saved during the run\n"

    def handler(body):
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if turn == 0:
            return reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": "# agent version\n"}))
        if turn == 1:
            memory.write_text(edited)  # a person saves from a shell while the agent works
            return reply_tool_calls(("write_file", {"path": "memory_summary.md", "content": "no v1 header\n"}))
        return reply_text("done")

    server.handler = handler
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    result = run_phase2(ctx, offline=False, force=True)
    assert result.outcome == "failed" and "failed_invalid_artifacts" in result.reason
    assert memory.read_text() == edited  # the old main put the pre-run version back
    assert "kept MEMORY.md" in result.reason
    assert (root / "memory_summary.md").read_text().startswith("v1")  # the agent's own write was undone


@pytest.mark.slow
def test_4_a_killed_runs_undo_keeps_a_file_edited_after_the_run_started(agent_ctx, model_env):
    """kill -9 mid-agent, a person edits a file the agent wrote, the next run's recovery keeps that edit."""
    ctx, server = agent_ctx, model_env
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True, auto_approve=True)
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    ctx.close()
    with Gate() as wrote:  # the agent wrote MEMORY.md; its next call is held: killed before this answers

        def handler(body):
            turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
            if turn == 0:
                return reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": "# agent partial\n"}))
            wrote.hold()
            return reply_text("done")

        server.handler = handler
        env = {**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW), "MEMTUI_JOB_LEASE_SECONDS": "60"}
        proc = subprocess.Popen([sys.executable, "-m", "memtui", "phase2", "--force"], env=env, stderr=subprocess.PIPE)
        try:
            wait_until(wrote.reached.is_set, "the agent's second model call", proc=proc)
        finally:
            proc.kill()
            proc.communicate(timeout=HANG_GUARD)
    assert (root / "MEMORY.md").read_text() == "# agent partial\n"
    (root / "MEMORY.md").write_text("# Memory\n\n- my edit after the agent's write\n")
    from memtui.core import clock

    clock.freeze(FROZEN_NOW + 61)
    ctx2 = context()
    try:
        from memtui.adapters.memroot.lock import memory_root_lock
        from memtui.services.phase2.recovery import recover_interrupted_runs

        with memory_root_lock(root, "test recovery"):
            assert recover_interrupted_runs(ctx2.conn, root)
        assert (root / "MEMORY.md").read_text() == "# Memory\n\n- my edit after the agent's write\n"
        run = ctx2.conn.execute("SELECT status, reason, pre_snapshot FROM phase2_runs ORDER BY id DESC").fetchone()
        assert run["status"] == "failed" and "kept MEMORY.md" in run["reason"] and run["pre_snapshot"] is None
    finally:
        ctx2.close()


# --- 5. one lock; a live index.lock is busy, not a failure; views never write the index ---------------------------


def _hold_open(path: Path) -> subprocess.Popen:
    """A process that holds ``path`` open, as a git process holds its index.lock while writing the index."""
    code = "import sys; f=open(sys.argv[1],'a'); print('ok',flush=True); sys.stdin.read()"  # held until killed
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ok"
    return proc


def test_5_a_live_index_lock_makes_phase2_busy_not_failed_and_is_never_deleted(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    run_phase2(ctx, offline=True, auto_approve=True)
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    index_lock = root / ".git" / "index.lock"
    holder = _hold_open(index_lock)
    try:
        result = run_phase2(ctx, offline=True, force=True)
        assert result.outcome == "busy" and "index.lock" in result.reason and "Retry shortly" in result.reason
        assert index_lock.exists()  # the old main deleted it under a live git process
        job = read_global_job(ctx.conn)
        assert job.retry_at is None and job.last_error is None  # no backoff
        assert main(["review", "commit", "-m", "x"]) == 75
    finally:
        holder.kill()
        holder.wait()
    assert run_phase2(ctx, offline=True, force=True).outcome == "busy"  # nobody holds it, but it is young
    old = time.time() - ctx.settings.index_lock_stale_seconds - 1
    os.utime(index_lock, (old, old))
    # Older than the threshold, nobody has it open, memtui holds the root: provably stale, removed, the run goes on.
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    assert not index_lock.exists()


def test_5_ui_diffs_never_write_the_index(ctx):
    root = ctx.paths.memory_root
    awaiting(ctx)
    review.approve(ctx)
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- pending edit\n")
    (root / "notes.md").write_text("new file\n")
    index = root / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.stat().st_ino, index.read_bytes())
    objects = sorted(p.name for p in (root / ".git" / "objects").rglob("*"))
    stat, diff = review.workspace_diff(ctx)
    assert stat == [("M", "MEMORY.md"), ("A", "notes.md")] and "+- pending edit" in diff
    assert (index.stat().st_mtime_ns, index.stat().st_ino, index.read_bytes()) == before  # old main: git add -A
    assert sorted(p.name for p in (root / ".git" / "objects").rglob("*")) == objects
    state = review.review_state(ctx)
    assert state.own_edits.stat == stat and state.own_edits.diff == diff
    assert (index.stat().st_mtime_ns, index.stat().st_ino, index.read_bytes()) == before
    git_files = sorted(str(p) for p in (root / ".git").rglob("*"))
    review.review_state(ctx)
    assert sorted(str(p) for p in (root / ".git").rglob("*")) == git_files  # a view leaves nothing under .git
    assert not list(views_dir(root).iterdir())  # the view's own folder is gone


# --- 6. deleted means gone ------------------------------------------------------------------------------------------


def _db_bytes(ctx) -> bytes:
    db = ctx.paths.state_db
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_6_a_decided_run_leaves_no_memory_content_in_state_sqlite_or_its_wal(ctx):
    root = ctx.paths.memory_root
    marker = "private-marker-5120-deleted-by-consolidation"
    awaiting(ctx, raw=f"- {marker}\n")
    review.approve(ctx)
    assert marker in (root / "raw_memories.md").read_text()
    ctx.conn.execute("DELETE FROM stage1_outputs WHERE thread_id=?", (A,))
    result = awaiting(ctx, thread=B)
    run = review.pending_run(ctx.conn)
    assert marker in run.diff and marker in run.input_diff  # while pending the diff is there to review
    decided = review.approve(ctx)
    row = ctx.conn.execute("SELECT * FROM phase2_runs WHERE id=?", (decided.run_id,)).fetchone()
    assert row["diff"] is None and row["input_diff"] is None and row["pre_snapshot"] is None
    assert json.loads(row["stat"]) == [list(x) for x in result.stat]  # the file list and counts stay
    assert row["lines_removed"] > 0 and row["lines_added"] > 0
    assert marker.encode() not in _db_bytes(ctx)
    assert marker not in git_objects(root)


def test_6_reject_and_failure_drop_the_stored_content_too(ctx):
    marker = "private-marker-7781-rejected"
    awaiting(ctx, raw=f"- {marker}\n")
    decided = review.reject(ctx, "no")
    row = ctx.conn.execute("SELECT * FROM phase2_runs WHERE id=?", (decided.run_id,)).fetchone()
    assert row["diff"] is None and row["input_diff"] is None and row["pre_snapshot"] is None
    assert json.loads(row["written_files"]) == ["MEMORY.md", "memory_summary.md"]  # the record keeps the names
    ctx.conn.execute("DELETE FROM stage1_outputs")  # the input row (forgetting it is another issue's work)
    checkpoint_wal(ctx.conn)
    assert marker.encode() not in _db_bytes(ctx)
    assert ctx.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


# --- 7. every agent tool checks containment on resolved paths ------------------------------------------------------


def test_7_search_does_not_read_a_sibling_folder_that_shares_the_roots_name_prefix(tmp_path):
    root = tmp_path / "memories"
    root.mkdir()
    (root / "MEMORY.md").write_text("inside: nothing to see\n")
    sibling = tmp_path / "memories-private"  # starts with the root's name
    sibling.mkdir()
    (sibling / "secret.md").write_text("the sibling secret token\n")
    (root / "peek").symlink_to(sibling)
    (root / "peek.md").symlink_to(sibling / "secret.md")
    tools = MemoryTools(root, Journal(root), max_write_bytes=10_000)
    assert tools.call("search", {"query": "sibling secret"}) == "no matches"
    assert "outside the memory root" in tools.call("search", {"query": "secret", "path": "peek"})
    assert "outside the memory root" in tools.call("read_file", {"path": "peek.md"})
    assert "outside the memory root" in tools.call("read_file", {"path": "peek/secret.md"})
    assert "outside the memory root" in tools.call("write_file", {"path": "peek/new.md", "content": "x"})
    assert "outside the memory root" in tools.call("list_dir", {"path": "peek"})
    assert not (sibling / "new.md").exists()
    assert "inside: nothing" in tools.call("search", {"query": "inside"})


# --- 8. review show and the TUI agree on what is pending -----------------------------------------------------------


def test_8_review_show_and_review_state_agree_on_a_persons_pending_edits(ctx, capsys):
    root = ctx.paths.memory_root
    awaiting(ctx)
    review.approve(ctx)
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "- my pending edit\n")
    state = review.review_state(ctx)
    assert state.run is None and state.own_edits.stat == [("M", "MEMORY.md")] and not state.nothing_pending
    assert main(["review", "show", "--stat"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "M MEMORY.md\n" and "review commit --expect" in captured.err
    assert main(["review", "commit", "-m", "my edit", "--expect", state.own_edits.tree]) == 0
    assert "new baseline" in capsys.readouterr().out
    assert "my pending edit" in run_git(root, "show", "HEAD:MEMORY.md")
    assert run_git(root, "log", "--format=%s").strip() == "my edit"
    assert review.review_state(ctx).nothing_pending
    assert main(["review", "show", "--stat"]) == 0
    assert "Nothing pending" in capsys.readouterr().err


def test_review_commit_refuses_an_edit_the_person_did_not_see(ctx, capsys):
    root = ctx.paths.memory_root
    awaiting(ctx)
    review.approve(ctx)
    (root / "MEMORY.md").write_text("# Memory\n\nseen\n")
    shown = review.review_state(ctx).own_edits
    (root / "MEMORY.md").write_text("# Memory\n\nseen\nand not seen\n")
    base = head_commit(root)
    with pytest.raises(review.ReviewError, match="changed after you looked"):
        review.commit_manual_edit(ctx, "x", expected_tree=shown.tree)
    assert head_commit(root) == base
    assert main(["review", "commit"]) == 0
    assert "and not seen" in run_git(root, "show", "HEAD:MEMORY.md")
