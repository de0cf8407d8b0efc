"""A no-change Phase 2 run skips work whose inputs did not change, and still notices every input that did."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.services import forget
from memtui.services.health import actions, watermark
from memtui.services.health.signals import compute_health
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2.consolidate import run_phase2
from memtui.state.health import Proposal
from tests.test_health import _approved_home, _by_statement, _session

pytestmark = pytest.mark.usefixtures("frozen_clock")  # the sessions of test_health's home are recent


def _settled(env: dict[str, Path]):  # type: ignore[no-untyped-def]
    """An approved home after one no-change run (health's fingerprint is kept as clean)."""
    ctx = _approved_home(env)
    assert run_phase2(ctx, offline=True, force=True).outcome == "no_changes"
    assert ctx.conn.execute("SELECT value FROM meta WHERE key = ?", (watermark.KEY,)).fetchone() is not None
    assert run_phase2(ctx, offline=True, force=True).outcome == "no_changes"
    return ctx


def test_a_no_change_run_notices_a_persons_edit_of_memory_md(isolated_env) -> None:
    ctx = _settled(isolated_env)
    memory = ctx.paths.memory_root / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n- a person's own note: staging is at staging.example.test\n")
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review" and run.changes >= 1
    assert "staging.example.test" in memory.read_text()


def test_a_no_change_run_notices_a_new_stage1_output(isolated_env) -> None:
    ctx = _settled(isolated_env)
    _session(isolated_env, ctx, ["Always use pnpm in this repo, never yarn."])
    assert run_phase1(ctx, offline=True, all_threads=True).succeeded == 1
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review" and run.selected == 2
    assert "pnpm" in (ctx.paths.memory_root / "MEMORY.md").read_text()


def test_a_no_change_run_notices_a_forget_request(isolated_env) -> None:
    ctx = _settled(isolated_env)
    thread = ctx.conn.execute("SELECT id FROM threads").fetchone()[0]
    assert thread in (ctx.paths.memory_root / "raw_memories.md").read_text()
    forget.forget(ctx, thread)
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review"
    assert thread not in (ctx.paths.memory_root / "raw_memories.md").read_text()


def test_a_no_change_run_notices_a_new_contradiction_and_a_proposal(isolated_env) -> None:
    ctx = _settled(isolated_env)
    _session(isolated_env, ctx, ["Deploys are on Thursdays now."])  # a user message, no new memory
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review"  # the contradiction became a health input despite the clean fingerprint
    assert "Tuesdays" not in (ctx.paths.memory_root / "MEMORY.md").read_text()


def test_a_no_change_run_notices_a_persons_proposal(isolated_env) -> None:
    ctx = _settled(isolated_env)
    notes = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "CHANGELOG")
    actions.propose(ctx, notes.id, Proposal.REMOVE)
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    assert "CHANGELOG" not in (ctx.paths.memory_root / "MEMORY.md").read_text()
