"""Stage-1 job semantics, reproducing the reference's state tests (§16, ``codex-rs/state/src/runtime/memories.rs``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memtui.core import clock
from memtui.core.settings import Settings
from memtui.services.phase1.eligibility import select_candidates
from memtui.state.db import connect
from memtui.state.jobs import (
    GLOBAL,
    STAGE1,
    ClaimStatus,
    enqueue_global_consolidation,
    mark_stage1_job_failed,
    mark_stage1_job_succeeded,
    mark_stage1_job_succeeded_no_output,
    try_claim_stage1_job,
)
from memtui.state.outputs import get_stage1_output, upsert_stage1_output

NOW = 1_783_684_800
LEASE = 3600


@pytest.fixture
def db(tmp_path: Path):
    clock.freeze(NOW)
    conn = connect(tmp_path / "state.sqlite")
    yield conn
    conn.close()


def add_thread(conn, thread_id: str, updated_at: int, **cols) -> None:
    row = {
        "id": thread_id,
        "source_kind": "codex",
        "path": f"/rollouts/{thread_id}.jsonl",
        "cwd": "/work/repo",
        "session_source": "cli",
        "updated_at": updated_at,
        "preview": "do the thing",
        "ingested_at": NOW,
        **cols,
    }
    names = ", ".join(row)
    conn.execute(f"INSERT INTO threads ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))


def job(conn, key: str, kind: str = STAGE1):
    return conn.execute("SELECT * FROM jobs WHERE kind = ? AND job_key = ?", (kind, key)).fetchone()


def claim(conn, key: str, watermark: int, worker: str = "w1", cap: int = 64):
    return try_claim_stage1_job(conn, key, worker, watermark, LEASE, cap)


def test_stage1_claim_skips_when_up_to_date(db):
    c = claim(db, "t1", 100)
    assert c.claimed
    assert mark_stage1_job_succeeded(db, "t1", c.ownership_token, 100, "raw", "summary", None)
    assert claim(db, "t1", 100).status is ClaimStatus.UP_TO_DATE
    assert claim(db, "t1", 99).status is ClaimStatus.UP_TO_DATE
    # An output row alone (e.g. written by another version) also counts as up to date.
    upsert_stage1_output(db, "t2", 200, "raw", "summary", None)
    assert claim(db, "t2", 200).status is ClaimStatus.UP_TO_DATE
    assert claim(db, "t1", 101).claimed


def test_stage1_running_stale_can_be_stolen_but_fresh_running_is_skipped(db):
    first = claim(db, "t1", 100, worker="a")
    assert first.claimed
    assert claim(db, "t1", 100, worker="b").status is ClaimStatus.RUNNING
    clock.freeze(NOW + LEASE)  # lease_until <= now: stale
    stolen = claim(db, "t1", 100, worker="b")
    assert stolen.claimed and stolen.ownership_token != first.ownership_token
    assert job(db, "t1")["worker_id"] == "b"
    # The first owner can no longer finalize anything.
    assert not mark_stage1_job_succeeded(db, "t1", first.ownership_token, 100, "raw", "summary", None)
    assert not mark_stage1_job_failed(db, "t1", first.ownership_token, "late", 60)
    assert not mark_stage1_job_succeeded_no_output(db, "t1", first.ownership_token)
    assert get_stage1_output(db, "t1") is None
    assert job(db, "t1")["status"] == "running"
    assert mark_stage1_job_succeeded(db, "t1", stolen.ownership_token, 100, "raw", "summary", None)


def _race(tmp_path: Path, n: int, target) -> list:
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def go(i: int) -> None:
        conn = connect(tmp_path / "state.sqlite")
        barrier.wait()
        results[i] = target(conn, i)
        conn.close()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_stage1_concurrent_claim_for_same_thread_is_conflict_safe(db, tmp_path):
    results = _race(tmp_path, 6, lambda conn, i: claim(conn, "t1", 100, worker=f"w{i}"))
    assert sum(r.claimed for r in results) == 1
    assert {r.status for r in results if not r.claimed} == {ClaimStatus.RUNNING}


def test_stage1_concurrent_claims_respect_running_cap(db, tmp_path):
    results = _race(tmp_path, 8, lambda conn, i: claim(conn, f"t{i}", 100, worker=f"w{i}", cap=3))
    assert sum(r.claimed for r in results) == 3
    assert {r.status for r in results if not r.claimed} == {ClaimStatus.CAP_REACHED}
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'running'").fetchone()[0] == 3


def test_claim_stage1_jobs_filters_by_age_idle(db):
    settings = Settings()  # 10 days, 6 hours
    add_thread(db, "eligible", NOW - 7 * 3600)
    add_thread(db, "fresh", NOW - 60)
    add_thread(db, "just-under-idle", NOW - 6 * 3600 + 1)
    add_thread(db, "old", NOW - 31 * 86_400)
    candidates, skipped = select_candidates(db, settings)
    assert [c.thread_id for c in candidates] == ["eligible"]
    assert skipped == {"not_idle": 2, "too_old": 1}
    # --all ignores both windows; --thread forces one thread.
    assert {c.thread_id for c in select_candidates(db, settings, all_threads=True)[0]} == {
        "eligible",
        "fresh",
        "just-under-idle",
        "old",
    }
    assert [c.thread_id for c in select_candidates(db, settings, thread_id="fresh")[0]] == ["fresh"]


def test_claim_stage1_jobs_skips_threads_without_enabled_memory_legacy_or_paginated(db):
    settings = Settings()
    t = NOW - 7 * 3600
    add_thread(db, "ok", t)
    add_thread(db, "disabled", t, memory_mode="disabled")
    add_thread(db, "polluted", t, memory_mode="polluted")
    add_thread(db, "paginated", t, history_mode="paginated")
    add_thread(db, "exec", t, session_source="exec")
    add_thread(db, "subagent", t, session_source="subagent")
    add_thread(db, "claude-main", t, source_kind="claude", session_source="cli")
    add_thread(db, "claude-sidechain", t, source_kind="claude", session_source="subagent")
    add_thread(db, "vscode", t, session_source="vscode")
    add_thread(db, "archived", t, archived=1)
    add_thread(db, "no-preview", t, preview="")
    candidates, skipped = select_candidates(db, settings)
    # a paginated history (Codex's default since 0.1xx) is memory as much as a legacy one (issue 31.1)
    assert {c.thread_id for c in candidates} == {"ok", "paginated", "claude-main", "vscode"}
    assert skipped == {"memory_disabled": 2, "not_interactive": 3, "archived": 1, "no_preview": 1}
    # Forcing a thread never overrides the user's opt-out.
    assert select_candidates(db, settings, thread_id="disabled")[0] == []


def test_claim_stage1_jobs_enforces_global_running_cap(db):
    for i in range(10):
        assert claim(db, f"running-{i}", 100, worker="other").claimed
    results = [claim(db, f"t{i:03}", 100, cap=64) for i in range(100)]
    assert sum(r.claimed for r in results) == 54
    assert all(r.status is ClaimStatus.CAP_REACHED for r in results[54:])
    assert not any(claim(db, f"u{i}", 100, cap=64).claimed for i in range(5))


def test_stage1_retry_exhaustion_does_not_block_newer_watermark(db):
    for attempt in range(3):
        c = claim(db, "t1", 100)
        assert c.claimed, attempt
        assert mark_stage1_job_failed(db, "t1", c.ownership_token, f"boom {attempt}", 3600)
        expected = ClaimStatus.RETRY_BACKOFF if attempt < 2 else ClaimStatus.RETRY_EXHAUSTED
        assert claim(db, "t1", 100).status is expected
        clock.freeze(clock.now_s() + 3600)
    row = job(db, "t1")
    assert row["retry_remaining"] == 0 and row["last_error"] == "boom 2"
    assert claim(db, "t1", 100).status is ClaimStatus.RETRY_EXHAUSTED
    newer = claim(db, "t1", 101)
    assert newer.claimed
    row = job(db, "t1")
    assert row["retry_remaining"] == 3 and row["input_watermark"] == 101


def test_failed_job_backs_off_and_keeps_budget_when_watermark_is_unchanged(db):
    c = claim(db, "t1", 100)
    mark_stage1_job_failed(db, "t1", c.ownership_token, "boom", 3600)
    row = job(db, "t1")
    assert (row["status"], row["retry_at"], row["retry_remaining"]) == ("error", NOW + 3600, 2)
    assert row["lease_until"] is None
    # A newer watermark bypasses the backoff (and resets the budget).
    assert claim(db, "t1", 101).claimed
    assert job(db, "t1")["retry_remaining"] == 3


def test_mark_stage1_job_succeeded_no_output_skips_phase2_when_output_was_already_absent(db):
    c = claim(db, "t1", 100)
    assert mark_stage1_job_succeeded_no_output(db, "t1", c.ownership_token)
    assert job(db, "t1")["status"] == "done" and job(db, "t1")["last_success_watermark"] == 100
    assert job(db, "global", GLOBAL) is None


def test_mark_stage1_job_succeeded_no_output_enqueues_phase2_when_deleting_output(db):
    c = claim(db, "t1", 100)
    mark_stage1_job_succeeded(db, "t1", c.ownership_token, 100, "raw", "summary", "slug")
    db.execute("DELETE FROM jobs WHERE kind = ?", (GLOBAL,))
    c = claim(db, "t1", 200)
    assert mark_stage1_job_succeeded_no_output(db, "t1", c.ownership_token)
    assert get_stage1_output(db, "t1") is None
    g = job(db, "global", GLOBAL)
    assert g["status"] == "pending" and g["input_watermark"] == 200


def test_mark_stage1_job_succeeded_enqueues_global_consolidation(db):
    c = claim(db, "t1", 101)
    assert mark_stage1_job_succeeded(db, "t1", c.ownership_token, 101, "raw", "summary", None)
    g = job(db, "global", GLOBAL)
    assert (g["status"], g["input_watermark"], g["retry_remaining"], g["last_success_watermark"]) == (
        "pending",
        101,
        3,
        0,
    )
    j = job(db, "t1")
    assert (j["status"], j["last_success_watermark"], j["lease_until"], j["finished_at"]) == ("done", 101, None, NOW)
    out = get_stage1_output(db, "t1")
    assert (out["source_updated_at"], out["raw_memory"], out["generated_at"]) == (101, "raw", NOW)


def test_enqueue_global_consolidation_keeps_phase2_input_watermark_monotonic(db):
    enqueue_global_consolidation(db, 500)
    assert job(db, "global", GLOBAL)["input_watermark"] == 500
    enqueue_global_consolidation(db, 400)
    assert job(db, "global", GLOBAL)["input_watermark"] > 500
    enqueue_global_consolidation(db, 900)
    assert job(db, "global", GLOBAL)["input_watermark"] == 900


def test_enqueue_global_consolidation_keeps_a_running_job_running(db):
    db.execute(
        "INSERT INTO jobs (kind, job_key, status, retry_at, retry_remaining, input_watermark, finished_at) "
        "VALUES (?, 'global', 'running', 5, 0, 10, 7)",
        (GLOBAL,),
    )
    enqueue_global_consolidation(db, 20)
    g = job(db, "global", GLOBAL)
    assert (g["status"], g["retry_at"], g["retry_remaining"], g["input_watermark"], g["finished_at"]) == (
        "running",
        5,
        3,
        20,
        7,
    )


def test_output_upsert_newer_or_equal_wins_and_keeps_selection_flags(db):
    upsert_stage1_output(db, "t1", 100, "raw100", "s100", None)
    db.execute("UPDATE stage1_outputs SET selected_for_phase2 = 1, selected_for_phase2_source_updated_at = 100")
    assert not upsert_stage1_output(db, "t1", 99, "raw99", "s99", None)
    assert get_stage1_output(db, "t1")["raw_memory"] == "raw100"
    assert upsert_stage1_output(db, "t1", 100, "raw100b", "s", "slug", offline=True)
    row = get_stage1_output(db, "t1")
    assert (row["raw_memory"], row["offline"], row["selected_for_phase2"]) == ("raw100b", 1, 1)
    assert row["selected_for_phase2_source_updated_at"] == 100


def test_forced_claim_reextracts_an_up_to_date_thread_but_respects_a_live_lease(db):
    c = claim(db, "t1", 100)
    assert try_claim_stage1_job(db, "t1", "w2", 100, LEASE, 64, force=True).status is ClaimStatus.RUNNING
    mark_stage1_job_succeeded(db, "t1", c.ownership_token, 100, "raw", "summary", None)
    assert try_claim_stage1_job(db, "t1", "w2", 100, LEASE, 64, force=True).claimed
