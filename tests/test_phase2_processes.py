"""Real processes: ``python -m memtui phase2`` killed with SIGKILL mid-agent, and two runs at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memtui.adapters.memroot.baseline import head_commit, run_git
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.state.db import connect
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.support.waiting import HANG_GUARD, Gate, communicate_all, wait_until
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
SUMMARY = "v1\n## User Profile\n- x\n"


def spawn(*args: str, **env: str) -> subprocess.Popen:
    full = {**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "memtui", "phase2", *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def seeded(frozen_clock, model_env):
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    ctx.close()
    return model_env


@pytest.mark.slow
def test_kill_9_during_the_agent_leaves_nothing_corrupt(seeded):
    server = seeded
    server.script(
        reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": "partial work of a killed agent\n"}))
    )
    with Gate() as second_turn:  # the agent's second call never gets an answer: it is in flight when the kill lands

        def handler(body):
            second_turn.hold()
            return reply_text("never delivered")

        server.handler = handler
        proc = spawn(MEMTUI_JOB_LEASE_SECONDS="5")
        try:
            wait_until(second_turn.reached.is_set, "the agent's second model call", proc=proc)
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=HANG_GUARD)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    ctx = context()
    root = ctx.paths.memory_root
    assert (root / "MEMORY.md").read_text() == "partial work of a killed agent\n"
    stale = ctx.conn.execute("SELECT id, status FROM phase2_runs").fetchall()
    assert [tuple(r) for r in stale] == [(1, "running")]
    base = head_commit(root)

    result = run_phase2(ctx, offline=True)  # the dead run's lease is taken over at once (same host, pid gone)
    assert result.outcome == "awaiting_review", result.reason
    old = ctx.conn.execute("SELECT status, reason FROM phase2_runs WHERE id=1").fetchone()
    assert old["status"] == "failed" and old["reason"].startswith("interrupted")
    run = review.pending_run(ctx.conn)
    assert run.baseline_commit == base  # re-diffed against the old baseline
    assert "partial work of a killed agent" not in run.input_diff  # the killed agent's write was undone first
    assert "## Status\n- A raw_memories.md" in run.input_diff
    run_git(root, "fsck", "--no-dangling")
    assert ctx.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    review.approve(ctx)
    assert "partial work" not in (root / "MEMORY.md").read_text()
    ctx.close()


@pytest.mark.slow
def test_two_processes_at_once_one_consolidates_the_other_is_told_the_lock_is_held(seeded):
    server = seeded
    replies = iter(
        [
            reply_tool_calls(
                ("write_file", {"path": "MEMORY.md", "content": "# Task Group: /work/proj\n"}),
                ("write_file", {"path": "memory_summary.md", "content": SUMMARY}),
            ),
            reply_text("done"),
        ]
    )
    with Gate() as first_turn:  # the first process holds the lock, mid-agent, until the second one was turned away

        def handler(body):
            first_turn.hold()
            return next(replies)

        server.handler = handler
        # Its held call outlasts the second process however slow that is to start: no client timeout cuts it short.
        first = spawn("--json", MEMTUI_REQUEST_TIMEOUT_SECONDS=str(HANG_GUARD))
        try:
            wait_until(first_turn.reached.is_set, "the first process's model call", proc=first)
            ((code2, out2, err2),) = communicate_all([spawn("--json")])
        finally:
            first_turn.open()
            ((code1, out1, err1),) = communicate_all([first])
    assert code1 == 0 and code2 == 0, (err1, err2)
    one, two = json.loads(out1), json.loads(out2)
    assert one["outcome"] == "awaiting_review" and one["turns"] == 2
    # The memory root is held for the whole run: the second is told "busy", which is not a failure (no backoff).
    assert two["outcome"] == "busy" and "Phase 2 (pid" in two["reason"] and "Retry shortly" in two["reason"]
    assert len(server.requests) == 2
    conn = connect(Path(os.environ["MEMTUI_HOME"]) / "state.sqlite")
    job = conn.execute("SELECT retry_at, last_error FROM jobs WHERE kind='memory_consolidate_global'").fetchone()
    conn.close()
    assert tuple(job) == (None, None)
