"""The short no-change path: taken only when nothing a run reads changed, and it records what a full run records."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from memtui.adapters.memroot import baseline
from memtui.core import clock
from memtui.services.context import Context
from memtui.services.phase2 import unchanged
from memtui.services.phase2.consolidate import Phase2Result, run_phase2
from memtui.state.jobs import GLOBAL
from memtui.state.selection import DAY
from tests.test_health import _approved_home

pytestmark = pytest.mark.usefixtures("frozen_clock")  # the sessions of test_health's home are recent


def _run(ctx: Context, **kw: object) -> tuple[Phase2Result, bool]:
    """One forced offline run; True when it took the short path."""
    said: list[str] = []
    result = run_phase2(ctx, offline=True, force=True, progress=said.append, **kw)  # type: ignore[arg-type]
    return result, unchanged.SAID in said


def _settled(env: dict[str, Path]) -> Context:
    """An approved home whose next no-change run takes the short path."""
    ctx = _approved_home(env)
    fast = [_run(ctx) for _ in range(3)]
    assert [r.outcome for r, _ in fast] == ["no_changes"] * 3
    assert fast[-1][1], "a full no-change run with nothing new kept no record"
    return ctx


def _state(ctx: Context, run_id: int | None) -> tuple[object, ...]:
    conn = ctx.conn
    run = conn.execute(
        "SELECT status, offline, baseline_commit, claimed_watermark, new_watermark, selected FROM phase2_runs"
        " WHERE id = ?",
        (run_id,),
    ).fetchone()
    job = conn.execute("SELECT status, last_success_watermark, last_error FROM jobs WHERE kind = ?", (GLOBAL,))
    flags = conn.execute(
        "SELECT thread_id, selected_for_phase2, selected_for_phase2_source_updated_at FROM stage1_outputs"
    ).fetchall()
    files = {
        str(p.relative_to(ctx.paths.memory_root)): p.read_bytes()
        for p in sorted(ctx.paths.memory_root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }
    return tuple(run), [tuple(r) for r in job], [tuple(r) for r in flags], files


def test_the_short_path_records_what_a_full_run_records(isolated_env) -> None:
    ctx = _settled(isolated_env)
    ctx.conn.execute("DELETE FROM meta WHERE key = ?", (unchanged.KEY,))  # the next run goes the whole way
    full, was_fast = _run(ctx)
    assert not was_fast
    full_state = _state(ctx, full.run_id)
    short, was_fast = _run(ctx)
    assert was_fast
    assert short.model_dump(exclude={"run_id"}) == full.model_dump(exclude={"run_id"})
    assert short.run_id != full.run_id and short.outcome == "no_changes" and short.selected == 1
    assert _state(ctx, short.run_id) == full_state


def test_a_same_size_edit_right_after_a_run_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    memory = ctx.paths.memory_root / "MEMORY.md"
    text = memory.read_text()
    edited = text.replace("Tuesdays", "Mondays_")  # same length: only the mtime and ctime can tell
    assert len(edited) == len(text) and edited != text
    with memory.open("r+") as fh:  # in place, as an editor may write: same inode
        fh.write(edited)
    run, was_fast = _run(ctx)
    assert not was_fast and run.outcome == "awaiting_review" and run.changes == 1
    assert "Mondays_" in memory.read_text()


def test_a_new_file_in_the_memory_root_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    (ctx.paths.memory_root / "notes.md").write_text("a person's notes\n")
    run, was_fast = _run(ctx)
    assert not was_fast and run.outcome == "awaiting_review"


def test_a_commit_in_the_memory_root_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "\n- committed by hand\n")
    baseline.run_git(root, "add", "-A")
    baseline.run_git(root, "commit", "-q", "-m", "by hand")
    head = baseline.head_commit(root)
    run, was_fast = _run(ctx)
    assert not was_fast
    recorded = ctx.conn.execute("SELECT baseline_commit FROM phase2_runs WHERE id = ?", (run.run_id,)).fetchone()[0]
    assert recorded == head  # diffed against the commit a person made, not the one the record names


def test_a_change_to_a_stage1_output_or_its_thread_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    ctx.conn.execute("UPDATE stage1_outputs SET usage_count = 3")  # a citation: the ranking may move
    assert not _run(ctx)[1]
    assert _run(ctx)[1]
    ctx.conn.execute("UPDATE threads SET memory_mode = 'disabled'")  # the only memory leaves the selection
    run, was_fast = _run(ctx)
    assert not was_fast and run.selected == 0 and run.outcome == "awaiting_review"


def test_a_settings_change_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    ctx.settings.max_raw_memories_for_consolidation = 7
    run, was_fast = _run(ctx)
    assert not was_fast and run.outcome == "no_changes"
    assert _run(ctx)[1]


def test_a_memory_leaving_the_unused_days_window_defeats_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    with clock.frozen(clock.now_s() + (ctx.settings.max_unused_days + 400) * DAY):
        run, was_fast = _run(ctx)
    assert not was_fast and run.selected == 0


def test_recovery_comes_before_the_short_path(isolated_env) -> None:
    ctx = _settled(isolated_env)
    dead = f"{socket.gethostname()}:{2**22 + 12345}"  # above pid_max: no such process
    ctx.conn.execute(
        "UPDATE jobs SET status='running', worker_id=?, ownership_token='gone', lease_until=? WHERE kind = ?",
        (dead, clock.now_s() + 3600, GLOBAL),
    )
    said: list[str] = []
    run = run_phase2(ctx, offline=True, force=True, progress=said.append)
    assert run.outcome == "no_changes" and unchanged.SAID in said
    assert any("killed" in line for line in said)  # the dead holder's lease was released first


def test_a_file_newer_than_the_marker_keeps_no_record(isolated_env) -> None:
    ctx = _settled(isolated_env)
    future = (clock.file_time() + 3600) * 1e9
    os.utime(ctx.paths.memory_root / "MEMORY.md", ns=(int(future), int(future)))  # as if written during the check
    ctx.conn.execute("DELETE FROM meta WHERE key = ?", (unchanged.KEY,))
    assert run_phase2(ctx, offline=True, force=True).outcome == "no_changes"
    assert ctx.conn.execute("SELECT 1 FROM meta WHERE key = ?", (unchanged.KEY,)).fetchone() is None
    assert not _run(ctx)[1]
