"""Every decision path runs the one after-decision fan-out (``review.after``), and nothing calls a follow-up by name.

Real runs, real git and SQLite: the fan-out is observed by one extra follow-up appended to the registry, the same
way a new follow-up would reach every path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.services import forget
from memtui.services.phase2 import consolidate, review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.restore import restore_version
from memtui.services.review import after
from memtui.services.review.hunks import parse_diff
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
C = "0194f5a6-89ab-7cde-8123-456789abcdf1"
MEMTUI = Path(__file__).resolve().parents[1] / "memtui"


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    yield c
    c.close()


@pytest.fixture
def seen(monkeypatch):
    decisions: list[after.Decision] = []
    record = ("record", frozenset(after.KINDS), lambda _ctx, d: decisions.append(d))
    monkeypatch.setattr(after, "FOLLOW_UPS", (*after.FOLLOW_UPS, record))
    return decisions


def test_every_decision_path_runs_the_fan_out_once(ctx, seen, monkeypatch):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    first = run_phase2(ctx, offline=True)
    review.reject(ctx, "not yet")
    second = run_phase2(ctx, offline=True, force=True)
    approved = review.approve(ctx)
    unchanged = run_phase2(ctx, offline=True, force=True)
    assert unchanged.outcome == "no_changes"

    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- the user deploys with make ship\n- staging runs on fridays")
    third = run_phase2(ctx, offline=True, force=True)
    hunk = next(
        h for f in parse_diff(review.pending_run(ctx.conn).diff) for h in f.hunks if f.path == "memory_summary.md"
    )
    partial = review.approve(ctx, except_ids=[hunk.id], reason="not this")
    assert partial.hunks_out == 1

    restore = restore_version(ctx, approved.decision)
    review.approve(ctx)

    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "\n- a line of my own\n")
    assert main(["review", "commit", "-m", "mine"]) == 0

    def broken(*_args, **_kwargs):
        raise RuntimeError("the merge broke")

    add_output(ctx.conn, C, FROZEN_NOW - 30, raw="- the user pins the toolchain")
    monkeypatch.setattr(consolidate, "consolidate_offline", broken)
    failed = run_phase2(ctx, offline=True, force=True)
    assert failed.outcome == "failed"

    forget.forget(ctx, A, "private")
    forget.unforget(ctx, A)

    assert [(d.kind, d.run_id) for d in seen] == [
        ("reject", first.run_id),
        ("approve", second.run_id),
        ("no_changes", unchanged.run_id),
        ("partial_approve", third.run_id),
        ("restore_proposed", restore.run_id),
        ("restore", restore.run_id),
        ("manual_commit", None),
        ("run_failed", failed.run_id),
        ("forget", None),
        ("unforget", None),
    ]
    # each decision that keeps an audit record hands it to its follow-ups (the history snapshot needs it)
    assert all(d.record is not None for d in seen if d.kind not in ("no_changes", "run_failed", "restore_proposed"))
    assert seen[1].record == approved.decision and seen[3].record == partial.decision


def test_each_decision_runs_exactly_its_follow_ups(ctx):
    approvals = ["reviewer_lines", "health_bans", "history_snapshot", "run_content", "forget_finish", "search_index"]
    assert after.follow_ups("approve") == after.follow_ups("partial_approve") == approvals
    assert after.follow_ups("restore") == approvals
    assert after.follow_ups("reject") == ["forget_release", "run_content", "search_index"]
    assert after.follow_ups("run_failed") == ["forget_release", "run_content"]
    assert after.follow_ups("manual_commit") == ["history_snapshot", "checkpoint", "search_index"]
    assert after.follow_ups("forget") == ["search_purge", "checkpoint"]
    assert after.follow_ups("no_changes") == ["forget_nothing_left"]
    assert after.follow_ups("restore_proposed") == ["search_index"]
    assert after.follow_ups("unforget") == []


# Follow-ups only the fan-out may call: a decision path calling one by name bypasses the others.
FOLLOW_UP_CALLS = (
    "take_snapshot",
    "finish_after_approval",
    "release_after_rejection",
    "finish_without_changes",
    "ban_approved_removals",
    "drop_run_content",
)


def test_no_decision_path_calls_a_follow_up_by_name():
    allowed = {
        "services/review/after.py",  # the fan-out
        "services/phase2/approving.py",  # forget_run_content, also used by crash recovery for runs decided before a kill
    }
    offenders = []
    for path in MEMTUI.rglob("*.py"):
        rel = path.relative_to(MEMTUI).as_posix()
        if rel in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for name in FOLLOW_UP_CALLS:
                if re.search(rf"(?<![\w.]def )\b{name}\(", line) and not line.lstrip().startswith("def "):
                    offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []
