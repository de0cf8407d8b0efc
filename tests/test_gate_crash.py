"""The gate under relative homes, killed processes and contention: nothing a person wrote is lost, nothing sticks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from memtui.adapters.memroot.baseline import head_commit
from memtui.core.settings import ResolvedProvider
from memtui.services.context import open_context
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.tools import sha256
from memtui.state.db import connect
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.support.waiting import HANG_GUARD, wait_until
from tests.test_backends import calls, fake_clis  # noqa: F401  (fixture)
from tests.test_phase2_agent import MEMORY, SUMMARY
from tests.test_phase2_support import add_output

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"


def cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW), **env}
    return subprocess.run(
        [sys.executable, "-m", "memtui", *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=HANG_GUARD
    )


@pytest.mark.slow
def test_a_relative_memtui_home_keeps_the_baseline_and_phase2_works(tmp_path, frozen_clock):
    home = tmp_path / "rel" / "home"
    ctx = open_context(home=home)
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    ctx.close()
    first = cli("phase2", "--offline", "--auto-approve", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert first.returncode == 0 and "approved" in first.stdout, first.stdout + first.stderr
    root = home / "memories"
    base = head_commit(root)
    assert (root / ".git").is_dir() and not (tmp_path / "rel" / "home" / "memories" / "home").exists()
    ctx = open_context(home=home)
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    ctx.close()
    second = cli("phase2", "--offline", "--force", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert second.returncode == 0 and "awaiting review" in second.stdout, second.stdout + second.stderr
    assert (root / ".git").is_dir() and head_commit(root) == base
    shown = cli("review", "show", "--stat", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert shown.returncode == 0 and "MEMORY.md" in shown.stdout, shown.stdout + shown.stderr


# --- one journal for every agent ----------------------------------------------------------------------------------


def _changed_by_run(ctx) -> list[str]:
    """Files of the memory root that differ from the baseline, except the inputs Phase 2 syncs before the agent."""
    from memtui.services.phase2 import review

    stat, _ = review.workspace_diff(ctx)
    return sorted(p for _, p in stat if p != "raw_memories.md" and not p.startswith("rollout_summaries/"))


@pytest.mark.parametrize("provider", list(get_args(ResolvedProvider)))
def test_every_agent_kind_writes_only_through_the_journal(provider, frozen_clock, fake_clis, chat_server, monkeypatch):  # noqa: F811
    """Structural: each agent kind memtui can run is covered (a new one fails here until it is), and every file it
    changed holds exactly what the run's journal says it wrote, so reject and recovery can tell it from a person's."""
    setups = {
        "openai": lambda: chat_server.script(
            reply_tool_calls(
                ("write_file", {"path": "MEMORY.md", "content": MEMORY}),
                ("write_file", {"path": "memory_summary.md", "content": SUMMARY}),
            ),
            reply_text("done"),
        ),
        "codex": lambda: monkeypatch.setenv(
            "FAKE_AGENT_EDITS", json.dumps({"MEMORY.md": MEMORY, "memory_summary.md": SUMMARY})
        ),
        "claude": lambda: monkeypatch.setenv(
            "FAKE_AGENT_EDITS", json.dumps({"MEMORY.md": MEMORY, "memory_summary.md": SUMMARY})
        ),
        "offline": lambda: None,
    }
    setups["local"] = setups["openai"]  # a model on the user's machine: the same HTTP agent and journal
    assert set(setups) == set(get_args(ResolvedProvider))
    monkeypatch.setenv("MEMTUI_PROVIDER", provider)
    if provider in ("openai", "local"):
        monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
    setups[provider]()
    ctx = open_context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    result = run_phase2(ctx)
    assert result.outcome == "awaiting_review", result.reason
    written = _changed_by_run(ctx)
    assert "MEMORY.md" in written
    _, post = review.load_journal(ctx.conn, result.run_id)
    root = ctx.paths.memory_root
    assert {rel: post.get(rel) for rel in written} == {rel: sha256((root / rel).read_bytes()) for rel in written}
    ctx.close()


def test_an_agent_writing_around_the_journal_fails_the_run_and_is_named(frozen_clock, monkeypatch):
    from memtui.services.phase2 import consolidate

    real = consolidate.consolidate_offline

    def sneaky(root, *args, **kwargs):
        out = real(root, *args, **kwargs)
        (root / "memory_summary.md").write_text("v1\n## written around the journal\n")
        return out

    monkeypatch.setattr(consolidate, "consolidate_offline", sneaky)
    ctx = open_context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    result = run_phase2(ctx, offline=True)
    assert result.outcome == "failed" and "memory_summary.md changed during the run but not through" in result.reason
    assert "around the journal" in (ctx.paths.memory_root / "memory_summary.md").read_text()  # named, not clobbered
    ctx.close()


@pytest.mark.parametrize("provider", ["codex", "claude"])
def test_rejecting_a_cli_run_keeps_a_persons_later_edits(provider, frozen_clock, fake_clis, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MEMTUI_PROVIDER", provider)
    ctx = open_context()
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    monkeypatch.setenv("FAKE_AGENT_EDITS", json.dumps({"MEMORY.md": MEMORY}))
    assert run_phase2(ctx, force=True).outcome == "awaiting_review"
    summary = root / "memory_summary.md"
    summary.write_text(summary.read_text() + "- my own line, typed after the run\n")  # a file the agent never touched
    (root / "MEMORY.md").write_text(MEMORY + "- my addition to the agent's text\n")
    out = review.reject(ctx, reason="no")
    assert "- my own line, typed after the run" in summary.read_text()
    assert "- my addition to the agent's text" in (root / "MEMORY.md").read_text()
    assert out.kept == ["MEMORY.md"]
    ctx.close()


@pytest.mark.parametrize("provider", ["codex", "claude"])
@pytest.mark.slow
def test_a_killed_cli_run_leaves_a_persons_committed_edit_and_no_tombstone(provider, frozen_clock, fake_clis):  # noqa: F811
    ctx = open_context()
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    ctx.close()
    env = {"MEMTUI_PROVIDER": provider, "FAKE_AGENT_MODE": "hang", "FAKE_AGENT_EDITS": json.dumps({"MEMORY.md": "x"})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memtui", "phase2", "--force"],
        env={**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: _run_status(root.parent) == "running" and _agent_started(fake_clis), "the CLI agent", proc=proc
        )
    finally:
        proc.kill()  # SIGKILL (a no-op when it already exited)
        proc.wait(HANG_GUARD)
    ctx = open_context()
    memory = root / "MEMORY.md"
    memory.write_text(memory.read_text() + "- a line I wrote after the kill\n")
    review.commit_manual_edit(ctx, "mine")  # the dead run's lease does not hold this up
    (root / "memory_summary.md").write_text((root / "memory_summary.md").read_text() + "- saved, not committed\n")
    result = run_phase2(ctx, offline=True, force=True)
    assert result.outcome in ("awaiting_review", "no_changes"), result.reason
    assert "- a line I wrote after the kill" in memory.read_text()
    assert "- saved, not committed" in (root / "memory_summary.md").read_text()
    tomb = root / "tombstones.md"
    assert not tomb.exists() or "a line I wrote after the kill" not in tomb.read_text()
    runs = dict(ctx.conn.execute("SELECT id, status FROM phase2_runs").fetchall())
    assert "running" not in runs.values() and list(runs.values()).count("failed") == 1
    assert not list((ctx.paths.home / "work").glob("phase2-*"))  # the killed agent's copy of the memory is gone
    ctx.close()


def _run_status(home: Path) -> str | None:
    conn = connect(home / "state.sqlite")
    try:
        row = conn.execute("SELECT status FROM phase2_runs ORDER BY id DESC LIMIT 1").fetchone()
        return row[0] if row else None
    finally:
        conn.close()


def _agent_started(log: Path) -> bool:
    return any("memtui-internal-call" in c.get("stdin", "") for c in calls(log))


# --- crash-safe decisions -----------------------------------------------------------------------------------------

KILL_AFTER_COMMIT = """
import os, signal, sys
from memtui.state import global_job
def die(*args, **kwargs):  # the first step after approve's commit
    os.kill(os.getpid(), signal.SIGKILL)
global_job.mark_global_phase2_job_succeeded = die
from memtui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _awaiting_run(ctx):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw=f"- learned something in {B}\n- deploys need --dry-run first")
    result = run_phase2(ctx, offline=True, force=True)
    assert result.outcome == "awaiting_review", result.reason
    return review.get_run(ctx.conn, result.run_id)


def test_a_dead_holders_lease_is_taken_over_at_once_a_live_or_remote_one_is_not(frozen_clock):
    from memtui.state import global_job

    ctx = open_context()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = review.worker_id().rsplit(":", 1)[0]
    for holder, taken in (
        (f"{host}:{dead.pid}", True),
        (f"{host}:{os.getpid()}", False),
        (f"elsewhere:{dead.pid}", False),
    ):
        ctx.conn.execute("DELETE FROM jobs")
        claim = global_job.try_claim_global_phase2_job(ctx.conn, holder, 3600, 0)
        assert claim.claimed
        again = global_job.try_claim_global_phase2_job(ctx.conn, review.worker_id(), 3600, 0)
        assert again.claimed is taken, holder
    ctx.close()


def _closed_leave_out(ctx, run_id: int, first: str) -> list[str]:
    """``first`` and the hunks that must go with it so no reference dangles (approve refuses a partial approval
    that would leave one)."""
    ids = [first]
    for _ in range(10):
        check = review.check_partial(ctx, run_id, ids)
        if check.ok:
            return ids
        assert check.leave_out, check.describe()
        ids += [h for h in check.leave_out if h not in ids]
    raise AssertionError(check.describe())


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.slow
def test_an_approve_killed_after_its_commit_is_finished_on_the_next_start(partial, frozen_clock):
    from memtui.services.review import decide

    ctx = open_context()
    root = ctx.paths.memory_root
    run = _awaiting_run(ctx)
    args = ["review", "approve"]
    if partial:
        p = decide.plan(root, run.diff, [], None, reviewed_text=review._reviewed_text(root, run))
        hunk = next(h for h in p.hunks if h.file == "MEMORY.md" and "dry-run" in "".join(p.new_lines(h)))
        args += ["--except", ",".join(_closed_leave_out(ctx, run.id, hunk.id)), "--reason", "not this one"]
    ctx.close()
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_COMMIT, *args],
        env={**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ctx = open_context()
    assert review.pending_run(ctx.conn) is not None  # what the kill left: the commit made, the run not decided
    assert review.review_state(ctx).run is None  # the next start finishes it before showing anything
    done = review.get_run(ctx.conn, run.id)
    assert done.status == "approved" and done.new_commit == head_commit(root)
    job = ctx.conn.execute("SELECT status FROM jobs WHERE kind='memory_consolidate_global'").fetchone()
    assert job["status"] == "done"
    with pytest.raises(review.ReviewError, match="no Phase 2 run is awaiting review"):
        review.reject(ctx, reason="too late")
    kinds = [r[0] for r in ctx.conn.execute("SELECT kind FROM decisions WHERE run_id=?", (run.id,))]
    assert kinds == ["partial_approve" if partial else "approve"]  # recorded once, with the person's decisions
    assert any("dry-run" in line for line in decide.rejected_lines(ctx.conn)) is partial
    ctx.close()


@pytest.mark.slow
def test_approving_again_after_an_approve_killed_after_its_commit_answers_with_that_approve(frozen_clock):
    """The person repeats `review approve` after the kill: recovery finishes the killed approve under the same lock,
    and the command reports that approve instead of saying nothing awaits review."""
    ctx = open_context()
    run = _awaiting_run(ctx)
    ctx.close()
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_COMMIT, "review", "approve"],
        env={**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ctx = open_context()
    result = review.approve(ctx)
    assert (result.run_id, result.status, result.commit) == (run.id, "approved", head_commit(ctx.paths.memory_root))
    decisions = [r[0] for r in ctx.conn.execute("SELECT id FROM decisions WHERE run_id=?", (run.id,))]
    assert decisions == [result.decision]  # recorded once
    with pytest.raises(review.ReviewError, match="no Phase 2 run is awaiting review"):
        review.approve(ctx)  # and only once: a third approve has nothing left
    ctx.close()


# --- busy is an answer --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_command_needing_the_memory_root_says_busy_with_exit_75(frozen_clock):
    from memtui.adapters.memroot.lock import memory_root_lock

    ctx = open_context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    root = ctx.paths.memory_root
    commands = [
        ["forget", A],
        ["history", "restore", "1"],
        ["review", "commit"],
        ["review", "approve"],
        ["review", "reject", "--reason", "no"],
    ]
    answers = {}
    with memory_root_lock(root, "a test holding the root"):
        for args in commands:
            done = cli(*args)
            answers[" ".join(args[:2])] = (done.returncode, "busy:" in done.stderr, "Traceback" in done.stderr)
    assert answers == {k: (75, True, False) for k in answers}, answers
    ctx.close()


KILL_BEFORE_COMMIT = """
import os, signal, sys
from memtui.adapters.memroot import baseline
def die(*args, **kwargs):  # the hunk decisions are written to the root, the commit not made
    os.kill(os.getpid(), signal.SIGKILL)
baseline.commit_tree = die
from memtui.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_partial_approve_killed_before_its_commit_leaves_the_run_as_reviewed(frozen_clock):
    from memtui.services.review import decide

    ctx = open_context()
    root = ctx.paths.memory_root
    run = _awaiting_run(ctx)
    reviewed = (root / "MEMORY.md").read_bytes()
    base = head_commit(root)
    p = decide.plan(root, run.diff, [], None, reviewed_text=review._reviewed_text(root, run))
    hunk = next(h for h in p.hunks if h.file == "MEMORY.md" and "dry-run" in "".join(p.new_lines(h)))
    left_out = ",".join(_closed_leave_out(ctx, run.id, hunk.id))
    ctx.close()
    proc = subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_COMMIT, "review", "approve", "--except", left_out],
        env={**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ctx = open_context()
    assert (root / "MEMORY.md").read_bytes() != reviewed  # what the kill left: the decided text, uncommitted
    state = review.review_state(ctx)
    assert state.run is not None and state.run.id == run.id and state.since_run is None  # as it was reviewed
    assert (root / "MEMORY.md").read_bytes() == reviewed and head_commit(root) == base
    out = review.reject(ctx, reason="no")
    assert not out.kept and not _changed_by_run(ctx)  # nothing of the run lingers as a person's edit
    ctx.close()


def test_a_decision_killed_before_it_dropped_the_runs_text_drops_it_on_the_next_start(frozen_clock):
    ctx = open_context()
    run = _awaiting_run(ctx)
    # what a kill between "approved" and the content's deletion leaves: a decided run still holding memory text
    ctx.conn.execute("UPDATE phase2_runs SET status='approved' WHERE id=?", (run.id,))
    review.review_state(ctx)
    row = ctx.conn.execute("SELECT diff, input_diff, pre_snapshot FROM phase2_runs WHERE id=?", (run.id,)).fetchone()
    assert tuple(row) == (None, None, None)
    ctx.close()
