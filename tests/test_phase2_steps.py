"""The Phase 2 run is a sequence of named steps with typed hand-offs; a failing step is undone by ``fail``.

Each step is wrapped to record its name and what it returned, on real offline runs (real git, real SQLite).
"""

from __future__ import annotations

import pytest

from memtui.adapters.memroot.lock import memory_root_lock
from memtui.services.phase2 import consolidate, review
from memtui.services.phase2.consolidate import run_phase2
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
STEPS = ("claim", "sync", "finish_unchanged", "start", "agent", "validate", "await_review", "fail", "auto_approve")


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    yield c
    c.close()


@pytest.fixture
def trace(monkeypatch):
    seen: list[tuple[str, object]] = []
    for name in STEPS:
        real = getattr(consolidate, name)

        def step(*args, _real=real, _name=name, **kwargs):
            out = _real(*args, **kwargs)
            seen.append((_name, out))
            return out

        monkeypatch.setattr(consolidate, name, step)
    return seen


def test_a_run_goes_claim_sync_start_agent_validate_await_review(ctx, trace):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    result = run_phase2(ctx, offline=True, auto_approve=True)
    assert [name for name, _ in trace] == [
        "claim",
        "sync",
        "start",
        "agent",
        "validate",
        "await_review",
        "auto_approve",
    ]
    out = dict(trace)
    assert isinstance(out["claim"], consolidate.Claimed)
    synced = out["sync"]
    assert isinstance(synced, consolidate.Synced) and synced.has_work and [m.thread_id for m in synced.selected] == [A]
    started = out["start"]
    assert isinstance(started, consolidate.Started) and started.run_id == result.run_id
    assert isinstance(out["agent"], consolidate.AgentRan) and "MEMORY.md" in started.journal.post
    assert out["await_review"].outcome == "awaiting_review" and result.outcome == "approved"


def test_nothing_new_goes_claim_sync_finish_unchanged(ctx, trace):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    trace.clear()
    assert run_phase2(ctx, offline=True, force=True).outcome == "no_changes"
    assert [name for name, _ in trace] == ["claim", "sync", "finish_unchanged"]
    assert not dict(trace)["sync"].has_work


def test_a_run_awaiting_review_stops_at_claim(ctx, trace):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    first = run_phase2(ctx, offline=True)
    trace.clear()
    # the check before the lock answers first; the claim step checks again under the lock
    opts = consolidate.RunOptions(offline=True, force=True, retry=False, auto_approve=False)
    with memory_root_lock(ctx.paths.memory_root, "test"):
        skipped = consolidate.claim(ctx, opts, lambda _m: None)
    assert isinstance(skipped, consolidate.Phase2Result) and skipped.run_id == first.run_id
    assert skipped.reason == f"awaiting review: run #{first.run_id}"


def test_a_failing_validate_step_is_undone_with_its_tag(ctx, trace, monkeypatch):
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    root = ctx.paths.memory_root
    real = consolidate.validate_artifacts
    calls = []

    def invalid_after_the_agent(path):
        calls.append(path)
        return "MEMORY.md: broken on purpose" if len(calls) > 1 else real(path)  # the sync step's check passes

    monkeypatch.setattr(consolidate, "validate_artifacts", invalid_after_the_agent)
    result = run_phase2(ctx, offline=True)
    assert [name for name, _ in trace] == ["claim", "sync", "start", "agent", "fail"]
    assert result.outcome == "failed" and result.reason == "failed_invalid_artifacts: MEMORY.md: broken on purpose"
    assert not (root / "MEMORY.md").exists()  # the run's writes undone from its journal
    assert review.get_run(ctx.conn, result.run_id).status == "failed"
