"""Kill -9 at random points of Phase 1, Phase 2 (sync, agent, approve) and every step of the gate (HTTP and CLI
agents, approve, partial approve, commit, restore), then a rerun or restart: nothing lost, doubled or stuck."""

from __future__ import annotations

import pytest

from tests.reliability import figures
from tests.reliability.scale import CHUNKS, GATE_KILL_TRIALS, PHASE1_KILL_TRIALS, PHASE2_KILL_TRIALS, SEED, chunk_sizes
from tests.reliability.trials import gate_kill_trial, phase1_kill_trial, phase2_kill_trial
from tests.support.chat_server import ChatServer


def _run(kind, area, total, chunk, tmp_path):
    n = chunk_sizes(total)[chunk]
    failures, faulted, survived = [], 0, 0
    with ChatServer() as server:
        for i in range(n):
            seed = SEED * 100_000 + chunk * 10_000 + i
            result = kind(tmp_path / f"trial-{i}", server, seed)
            faulted += result.faulted
            survived += result.faulted and not result.problems
            if result.problems:
                failures.append(f"{result.detail}: {result.problems}")
    figures.record(area, trials=n, faults=faulted, survived=survived)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_kill_9_during_phase1_then_rerun_loses_and_doubles_nothing(chunk, tmp_path):
    _run(phase1_kill_trial, "phase1 kill -9", PHASE1_KILL_TRIALS, chunk, tmp_path)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_kill_9_during_phase2_keeps_a_valid_baseline_and_the_rerun_recovers(chunk, tmp_path):
    _run(phase2_kill_trial, "phase2 kill -9", PHASE2_KILL_TRIALS, chunk, tmp_path)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_kill_9_across_the_gate_keeps_every_persons_edit_and_no_run_stays_stuck(chunk, tmp_path):
    n = chunk_sizes(GATE_KILL_TRIALS)[chunk]
    failures, counts = [], dict.fromkeys(("faults", "survived", "edits", "kept", "runs", "ended", "stuck"), 0)
    with ChatServer() as server:
        for i in range(n):
            seed = SEED * 100_000 + 50_000 + chunk * 10_000 + i
            result = gate_kill_trial(tmp_path / f"trial-{i}", server, seed)
            counts["faults"] += result.faulted
            counts["survived"] += result.faulted and not result.problems
            for key in ("edits", "kept", "runs", "ended", "stuck"):
                counts[key] += getattr(result, key)
            if result.problems:
                failures.append(f"{result.detail}: {result.problems}")
    figures.record("gate kill -9", trials=n, **counts)
    assert not failures, "\n".join(failures)
