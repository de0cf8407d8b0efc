"""Leaving out any single hunk never turns into "delete these lines" in the next run (issue 33.2).

On a realistic home (the demo's sample sessions: two projects, a Claude Code session, offline provider), each hunk
of a run is left out in turn, one per trial, from the same starting state; then new sessions arrive and the next
Phase 2 run goes. That run's proposed diff may remove only what the person left out (a left-out deletion is
proposed again) and what the same run removes after a full approve (a preference the new sessions contradict),
never anything else: not the preferences a left-out ``raw_memories.md`` held, not the old line a
left-out rewording replaced, not a heading. Trials the approve refuses (a reference would dangle) are counted, not
skipped silently: at least one trial per run must be accepted, and every accepted one must hold.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memtui.core import clock
from memtui.demo import build as demo
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.review.hunks import Hunk, hunks_of
from tests.fixtures.rollouts import write_codex_rollout

_TASK_REF = re.compile(r"\s*\[Task [0-9A-Za-z]+\]")
_DIGITS = re.compile(r"\d+")
NEW_THREAD = "019e7f31-3c4d-7e5f-8a61-7c8d9e0f1a2b"


def key(line: str) -> str:
    """A line as the trial compares it: without ``[Task n]`` tags, spacing and numbers (a count that moves from
    5 to 6 sessions is a change, not a deletion)."""
    return " ".join(_DIGITS.sub("0", _TASK_REF.sub("", line)).split())


def removals(diff: str) -> set[tuple[str, str]]:
    """(file, line) a diff takes out of the memory root: its '-' lines no '+' line of the same file puts back."""
    out: set[tuple[str, str]] = set()
    by_file: dict[str, tuple[set[str], set[str]]] = {}
    for h in hunks_of(diff):
        minus, plus = by_file.setdefault(h.file, (set(), set()))
        minus.update(k for line in h.removed if (k := key(line)))
        plus.update(k for line in h.added if (k := key(line)))
    for file, (minus, plus) in by_file.items():
        out |= {(file, k) for k in minus - plus}
    return out


@dataclass
class Stage:
    """A home with a run awaiting review (kept as a copy every trial starts from) and the sessions that arrive
    after it."""

    snapshot: Path
    sources: Path
    hunks: list[Hunk]


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def _first_run(folder: Path) -> Stage:
    """The demo's samples up to its first consolidation (every file one hunk); its later sessions arrive next."""
    home, sources = folder / "home", folder / "rollouts"
    home.mkdir(parents=True)
    files = demo._copy_samples(sources)
    (home / "config.toml").write_text(
        f'provider = "offline"\ncodex_home = "{sources / "codex"}"\nclaude_dir = "{sources / "claude"}"\n'
    )
    held = [next(p for p in files if p.name == name) for name in (demo.LATER, demo.AFTER_APPROVAL)]
    for path in held:
        path.rename(path.with_name(path.name + ".later"))
    ctx = open_context(home=home)
    run_ingest(ctx)
    next(p for p in files if p.name == demo.VANISHING).unlink()
    run_phase1(ctx, offline=True, all_threads=True)
    assert run_phase2(ctx, offline=True).outcome == "awaiting_review"
    hunks = hunks_of(review.pending_run(ctx.conn).diff)
    ctx.close()
    snapshot = _copy(home, folder / "start")
    for path in held:
        path.with_name(path.name + ".later").rename(path)
    return Stage(snapshot, sources, hunks)


def _second_run(folder: Path) -> Stage:
    """The demo home as `memtui demo` leaves it (its second consolidation awaiting review, hunks in every file);
    one more session in a known project arrives next."""
    built = demo.build_demo_home(folder)
    ctx = open_context(home=built.home)
    hunks = hunks_of(review.pending_run(ctx.conn).diff)
    ctx.close()
    snapshot = _copy(built.home, folder / "start")
    write_codex_rollout(
        folder / "rollouts" / "codex",
        thread_id=NEW_THREAD,
        cwd="/home/ana/src/shop-api",
        when=datetime.fromtimestamp(clock.now_s() - 600, UTC),
        user_messages=["Remember: always run `pnpm lint` before pushing to shop-api."],
    )
    return Stage(snapshot, folder / "rollouts", hunks)


def _next_run_after(stage: Stage, trial: Path, left_out: list[str]) -> str | None:
    """Approve the stage's run with ``left_out`` left out, let the new sessions in, run Phase 2 again: its diff
    (None: the approve was refused)."""
    home = _copy(stage.snapshot, trial)
    ctx = open_context(home=home)
    try:
        try:
            review.approve(ctx, except_ids=left_out, reason="trial")
        except review.ReviewError:
            return None
        run_ingest(ctx)
        run_phase1(ctx, offline=True, all_threads=True)
        result = run_phase2(ctx, offline=True, force=True)
        assert result.outcome in ("awaiting_review", "no_changes"), result.reason
        run = review.pending_run(ctx.conn)
        return run.diff if run is not None else ""
    finally:
        ctx.close()


@pytest.mark.parametrize("stage_of", [_first_run, _second_run], ids=["first run", "second run"])
def test_the_next_run_after_any_single_hunk_leave_out_deletes_nothing_the_person_did_not_leave_out(
    tmp_path, frozen_clock, stage_of
):
    stage = stage_of(tmp_path / "stage")
    control = _next_run_after(stage, tmp_path / "control", [])
    assert control is not None
    anyway = removals(control)  # what the new sessions take out after a full approve (a contradicted preference...)
    accepted, refused, failures = 0, 0, []
    for i, h in enumerate(stage.hunks):
        diff = _next_run_after(stage, tmp_path / f"trial-{i}", [h.id])
        if diff is None:
            refused += 1
            continue
        accepted += 1
        allowed = anyway | {(h.file, k) for line in h.removed if (k := key(line))}
        if extra := removals(diff) - allowed:
            failures.append(f"leaving out {h.file} hunk {h.id}: the next run deletes {sorted(extra)[:6]}")
    print(f"{len(stage.hunks)} hunks: {accepted} left out and checked, {refused} refused (a reference would dangle)")
    assert accepted >= 1 and accepted + refused == len(stage.hunks)
    assert not failures, "\n".join(failures)
