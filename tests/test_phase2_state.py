"""The global Phase 2 job and the input selection, against real SQLite (Codex's test cases)."""

from __future__ import annotations

import threading

import pytest

from memtui.core import clock
from memtui.services.retention import prune_stage1_outputs_for_retention
from memtui.state import global_job as gj
from memtui.state import runs
from memtui.state.db import connect
from memtui.state.jobs import enqueue_global_consolidation
from memtui.state.selection import get_phase2_input_selection
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import DAY, add_output

LEASE = 3600
COOLDOWN = 6 * 3600


@pytest.fixture
def conn(tmp_path, frozen_clock):
    c = connect(tmp_path / "state.sqlite")
    yield c
    c.close()


def job(conn):
    return gj.read_global_job(conn)


# --- the lock ---------------------------------------------------------------------------------------------------


def test_phase2_global_lock_creates_missing_job_row(conn):
    claim = gj.try_claim_global_phase2_job(conn, "w1", LEASE, COOLDOWN)
    assert claim.claimed and claim.input_watermark == 0
    assert job(conn).status == "running" and job(conn).ownership_token == claim.token
    assert gj.mark_global_phase2_job_succeeded(conn, claim.token, 0, [])
    assert gj.try_claim_global_phase2_job(conn, "w2", LEASE, COOLDOWN).outcome is gj.ClaimOutcome.SKIPPED_COOLDOWN


def test_phase2_global_lock_allows_only_one_fresh_runner(conn):
    first = gj.try_claim_global_phase2_job(conn, "w1", LEASE, COOLDOWN)
    second = gj.try_claim_global_phase2_job(conn, "w2", LEASE, COOLDOWN, skip_backoff=True)
    assert first.claimed and second.outcome is gj.ClaimOutcome.SKIPPED_RUNNING
    assert gj.try_claim_global_phase2_job(conn, "w3", LEASE, 0).outcome is gj.ClaimOutcome.SKIPPED_RUNNING  # --force


def test_concurrent_claims_from_separate_connections_claim_exactly_once(tmp_path, frozen_clock):
    connect(tmp_path / "state.sqlite").close()
    results: list[gj.Claim] = []
    barrier = threading.Barrier(6)

    def worker(i: int) -> None:
        c = connect(tmp_path / "state.sqlite")
        barrier.wait()
        results.append(gj.try_claim_global_phase2_job(c, f"w{i}", LEASE, COOLDOWN))
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r.claimed for r in results) == 1


def test_phase2_global_lock_stale_lease_allows_takeover(conn):
    old = gj.try_claim_global_phase2_job(conn, "w1", 10, COOLDOWN)
    clock.freeze(FROZEN_NOW + 11)
    new = gj.try_claim_global_phase2_job(conn, "w2", 10, COOLDOWN)
    assert new.claimed and new.token != old.token
    assert not gj.mark_global_phase2_job_succeeded(conn, old.token, 5, [])
    assert not gj.heartbeat_global_phase2_job(conn, old.token, 10)
    assert gj.heartbeat_global_phase2_job(conn, new.token, 10)
    assert job(conn).lease_until == FROZEN_NOW + 21


def test_phase2_global_lock_respects_success_cooldown_and_force(conn):
    claim = gj.try_claim_global_phase2_job(conn, "w1", LEASE, COOLDOWN)
    assert gj.mark_global_phase2_job_succeeded(conn, claim.token, 100, [])
    enqueue_global_consolidation(conn, 200)  # new input does not end the cooldown
    assert gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN).outcome is gj.ClaimOutcome.SKIPPED_COOLDOWN
    assert gj.try_claim_global_phase2_job(conn, "w", LEASE, 0).claimed  # --force skips the cooldown only
    conn.execute("UPDATE jobs SET status='done', lease_until=NULL, finished_at=?", (FROZEN_NOW,))
    clock.freeze(FROZEN_NOW + COOLDOWN + 1)
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    assert claim.claimed and claim.input_watermark == 200


def test_phase2_global_lock_can_be_claimed_after_retry_budget_is_exhausted(conn):
    for _ in range(4):
        claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
        assert claim.claimed
        assert gj.mark_global_phase2_job_failed(conn, claim.token, "failed_agent", 0)
    assert job(conn).retry_remaining == 0
    assert gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN).claimed


def test_failure_backoff_blocks_claims_until_retry_at(conn):
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    assert gj.mark_global_phase2_job_failed(conn, claim.token, "failed_agent", 3600)
    row = job(conn)
    assert (row.status, row.last_error, row.retry_at) == ("error", "failed_agent", FROZEN_NOW + 3600)
    assert gj.try_claim_global_phase2_job(conn, "w", LEASE, 0).outcome is gj.ClaimOutcome.SKIPPED_RETRY_UNAVAILABLE
    clock.freeze(FROZEN_NOW + 3601)
    assert gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN).claimed  # a failure starts no cooldown


def test_phase2_failure_fallback_updates_unowned_running_job(conn):
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    conn.execute("UPDATE jobs SET ownership_token=NULL")
    assert not gj.mark_global_phase2_job_failed(conn, claim.token, "failed_agent", 60)
    assert gj.mark_global_phase2_job_failed_if_unowned(conn, claim.token, "failed_agent", 60)
    assert job(conn).status == "error"
    claim2 = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN, skip_backoff=True)
    assert not gj.mark_global_phase2_job_failed_if_unowned(conn, "someone-else", "x", 60)  # owned by claim2
    assert gj.fail_global_phase2_job(conn, claim2.token, "failed_agent", 60)


def test_release_hands_the_lock_back_without_finishing(conn):
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    assert gj.release_global_phase2_job(conn, claim.token)
    row = job(conn)
    assert (row.status, row.lease_until, row.ownership_token, row.finished_at) == (
        "pending",
        None,
        None,
        None,
    )
    assert gj.try_claim_global_phase2_job(conn, "w2", LEASE, COOLDOWN).claimed


def test_enqueue_then_claim_sees_the_watermark_and_success_never_moves_it_back(conn):
    enqueue_global_consolidation(conn, 101)
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    assert claim.input_watermark == 101
    assert gj.mark_global_phase2_job_succeeded(conn, claim.token, 500, [])
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, 0)
    assert gj.mark_global_phase2_job_succeeded(conn, claim.token, 300, [])
    assert job(conn).last_success_watermark == 500


def test_mark_global_phase2_job_succeeded_only_marks_exact_selected_snapshots(conn):
    add_output(conn, "a", FROZEN_NOW - 100)
    add_output(conn, "b", FROZEN_NOW - 100)
    add_output(conn, "c", FROZEN_NOW - 100)
    conn.execute(
        "UPDATE stage1_outputs SET selected_for_phase2=1, selected_for_phase2_source_updated_at=1 WHERE thread_id='c'"
    )
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    # b was re-extracted after selection: its pair no longer matches, so it is not marked
    assert gj.mark_global_phase2_job_succeeded(conn, claim.token, 1, [("a", FROZEN_NOW - 100), ("b", FROZEN_NOW - 200)])
    rows = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT thread_id, selected_for_phase2, selected_for_phase2_source_updated_at FROM stage1_outputs"
        )
    }
    assert rows == {"a": (1, FROZEN_NOW - 100), "b": (0, None), "c": (0, None)}


# --- selection ----------------------------------------------------------------------------------------------------


def ids(rows):
    return [r.thread_id for r in rows]


def test_selection_returns_rows_sorted_by_thread_id_and_hydrated(conn):
    add_output(conn, "t3", FROZEN_NOW - 10, usage_count=9, cwd="/p3")
    add_output(conn, "t1", FROZEN_NOW - 30)
    add_output(conn, "t2", FROZEN_NOW - 20)
    rows = get_phase2_input_selection(conn, 10, 30)
    assert ids(rows) == ["t1", "t2", "t3"]
    assert rows[2].cwd == "/p3" and rows[2].rollout_path == "/rollouts/t3.jsonl"
    assert ids(get_phase2_input_selection(conn, 2, 30)) == ["t2", "t3"]  # top 2 by rank, then id order


def test_selection_prioritizes_usage_count_then_recent_usage(conn):
    add_output(conn, "a-5-recent", FROZEN_NOW - 40 * DAY, usage_count=5, last_usage=FROZEN_NOW - DAY)
    add_output(conn, "b-5-older", FROZEN_NOW - 40 * DAY, usage_count=5, last_usage=FROZEN_NOW - 10 * DAY)
    add_output(conn, "c-1-newest", FROZEN_NOW - 40 * DAY, usage_count=1, last_usage=FROZEN_NOW - 3600)
    assert ids(get_phase2_input_selection(conn, 1, 30)) == ["a-5-recent"]
    assert ids(get_phase2_input_selection(conn, 2, 30)) == ["a-5-recent", "b-5-older"]


def test_selection_excludes_stale_used_memories_but_keeps_fresh_never_used(conn):
    add_output(conn, "stale-used", FROZEN_NOW - 40 * DAY, usage_count=9, last_usage=FROZEN_NOW - 31 * DAY)
    add_output(conn, "fresh-never-used", FROZEN_NOW - 2 * DAY)
    add_output(conn, "old-source-used-recently", FROZEN_NOW - 50 * DAY, usage_count=1, last_usage=FROZEN_NOW - DAY)
    assert len(get_phase2_input_selection(conn, 10, 30)) == 3, "no consolidation has read them yet: all are taken"
    runs.insert_no_changes(conn, FROZEN_NOW - 35 * DAY, True, None, None, 0)  # one read the two older ones
    assert ids(get_phase2_input_selection(conn, 10, 30)) == ["fresh-never-used", "old-source-used-recently"]


def test_selection_prefers_recent_thread_updates_over_recent_generation(conn):
    add_output(conn, "newer-source", FROZEN_NOW - DAY)
    add_output(conn, "older-source", FROZEN_NOW - 5 * DAY)
    conn.execute("UPDATE stage1_outputs SET generated_at=? WHERE thread_id='older-source'", (FROZEN_NOW,))
    assert ids(get_phase2_input_selection(conn, 1, 30)) == ["newer-source"]


def test_selection_excludes_polluted_disabled_missing_and_blank_but_not_paginated(conn):
    add_output(conn, "ok", FROZEN_NOW - 10)
    add_output(conn, "polluted", FROZEN_NOW - 10, memory_mode="polluted")
    add_output(conn, "disabled", FROZEN_NOW - 10, memory_mode="disabled")
    add_output(conn, "paginated", FROZEN_NOW - 10)
    conn.execute("UPDATE threads SET history_mode='paginated' WHERE id='paginated'")
    add_output(conn, "no-thread", FROZEN_NOW - 10, thread=False)
    add_output(conn, "blank", FROZEN_NOW - 10, raw="  \n", summary=" ")
    add_output(conn, "half-blank", FROZEN_NOW - 10, raw="", summary="kept")
    assert ids(get_phase2_input_selection(conn, 10, 30)) == ["half-blank", "ok", "paginated"]


def test_selection_returns_regenerated_rows_while_flag_stays_on_old_snapshot(conn):
    add_output(conn, "t", FROZEN_NOW - 100)
    claim = gj.try_claim_global_phase2_job(conn, "w", LEASE, COOLDOWN)
    gj.mark_global_phase2_job_succeeded(conn, claim.token, 0, [("t", FROZEN_NOW - 100)])
    conn.execute(
        "UPDATE stage1_outputs SET source_updated_at=?, raw_memory='new' WHERE thread_id='t'", (FROZEN_NOW - 5,)
    )
    [row] = get_phase2_input_selection(conn, 10, 30)
    assert (row.source_updated_at, row.raw_memory) == (FROZEN_NOW - 5, "new")
    flag = conn.execute(
        "SELECT selected_for_phase2, selected_for_phase2_source_updated_at FROM stage1_outputs"
    ).fetchone()
    assert tuple(flag) == (1, FROZEN_NOW - 100)


# --- retention ------------------------------------------------------------------------------------------------------


def test_prune_stage1_outputs_for_retention_prunes_stale_unselected_rows_only(conn):
    add_output(conn, "stale1", FROZEN_NOW - 40 * DAY)
    add_output(conn, "stale2", FROZEN_NOW - 35 * DAY, last_usage=FROZEN_NOW - 31 * DAY)
    add_output(conn, "stale-selected", FROZEN_NOW - 40 * DAY)
    conn.execute("UPDATE stage1_outputs SET selected_for_phase2=1 WHERE thread_id='stale-selected'")
    add_output(conn, "fresh", FROZEN_NOW - DAY)
    add_output(conn, "old-but-used", FROZEN_NOW - 60 * DAY, last_usage=FROZEN_NOW - DAY)
    conn.execute("INSERT INTO jobs (kind, job_key, status) VALUES ('memory_stage1', 'stale1', 'done')")
    assert prune_stage1_outputs_for_retention(conn, 30, 200) == 0, "no consolidation has read them yet"
    runs.insert_no_changes(conn, FROZEN_NOW - DAY, True, None, None, 0)  # one read them a day ago
    assert prune_stage1_outputs_for_retention(conn, 30, 200) == 2
    left = {r[0] for r in conn.execute("SELECT thread_id FROM stage1_outputs")}
    assert left == {"stale-selected", "fresh", "old-but-used"}
    assert conn.execute("SELECT COUNT(*) FROM jobs WHERE job_key='stale1'").fetchone()[0] == 1


def test_prune_stage1_outputs_for_retention_respects_batch_limit_stalest_first(conn):
    for i in range(5):
        add_output(conn, f"s{i}", FROZEN_NOW - (40 + i) * DAY)
    runs.insert_no_changes(conn, FROZEN_NOW - DAY, True, None, None, 0)  # a consolidation read them a day ago
    assert prune_stage1_outputs_for_retention(conn, 30, 2) == 2
    assert {r[0] for r in conn.execute("SELECT thread_id FROM stage1_outputs")} == {"s0", "s1", "s2"}
