"""Issue 33.5: a person's request never waits for a timer. The cooldown after a successful consolidation holds back
automatic runs; a forget or a health proposal runs the next consolidation at once, and an offline run says when a
proposal needs a model."""

from __future__ import annotations

import pytest

from memtui.services.health import actions
from memtui.services.phase2.consolidate import run_phase2
from memtui.state.health import Proposal
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abc001"
B = "0194f5a6-89ab-7cde-8123-456789abc002"


@pytest.fixture
def ctx(frozen_clock, monkeypatch):
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
    c = context()
    add_output(c.conn, A, FROZEN_NOW - 3600, raw="- the user prefers uv over pip [trust:user]")
    add_output(c.conn, B, FROZEN_NOW - 1800, raw="- deploys run on Mondays [trust:user]")
    assert run_phase2(c, offline=True, auto_approve=True).outcome == "approved"
    yield c
    c.close()


def test_an_automatic_run_waits_for_the_cooldown(ctx):
    assert run_phase2(ctx, offline=True).outcome == "skipped"


def test_a_forget_runs_the_next_consolidation_without_the_cooldown(ctx):
    from memtui.services.forget import forget

    forget(ctx, A, reason="client work")
    said: list[str] = []
    result = run_phase2(ctx, offline=True, progress=said.append)
    assert result.outcome == "awaiting_review", result.reason
    assert any("without the cooldown: a forget waits for it" in s for s in said), said


def test_a_health_proposal_runs_now_and_an_offline_update_says_it_needs_a_model(ctx):
    from memtui.services.health.signals import compute_health

    block = next(b for b in compute_health(ctx.conn, ctx.paths.memory_root).blocks if "Mondays" in b.text)
    outcome = actions.propose(ctx, block.id, Proposal.UPDATE)
    assert "an update needs a model" in outcome
    said: list[str] = []
    result = run_phase2(ctx, offline=True, progress=said.append)
    assert result.outcome != "skipped" or "cooldown" not in (result.reason or ""), result.reason
    assert any("without the cooldown: a health proposal waits for it" in s for s in said), said
    assert any("proposed update(s) need a model" in s for s in said), said
    removal = actions.propose(ctx, block.id, Proposal.REMOVE)
    assert "brings it back as a hunk to review" in removal
    result = run_phase2(ctx, offline=True)
    assert result.outcome == "awaiting_review", result.reason
