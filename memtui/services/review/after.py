"""What follows a decision, listed once: every decision path calls ``after_decision`` and nothing else.

A decision (an approve, whole or partial, a reject, a restore proposed or approved, a person's own commit, a forget
or its undo, and a Phase 2 run ending without a person: no change found, or failed) changes what the memory root,
the history and the state database hold. Every store derived from them has to follow: the history's snapshot of the
new version, forget's lineage, memory health's bans, the run's stored memory text, the search index, the WAL. Each
follow-up names the decisions it applies to, so a new decision path cannot skip one by forgetting to call it, and a
new follow-up reaches every path at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from memtui.services import history, search, stores
from memtui.services.context import Context
from memtui.services.health.consolidation import ban_approved_removals
from memtui.services.phase2 import forgotten
from memtui.state import person_lines
from memtui.state.db import checkpoint_wal

Kind = Literal[
    "approve",
    "partial_approve",
    "restore",  # a restore run approved: the past version is the baseline again
    "reject",
    "manual_commit",
    "restore_proposed",  # a past version written into the workspace as a run awaiting review
    "forget",
    "unforget",
    "no_changes",  # a Phase 2 run found nothing to change
    "run_failed",  # a Phase 2 run failed and was undone
]
KINDS: tuple[Kind, ...] = Kind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Decision:
    """One decision, with what its follow-ups need to know."""

    kind: Kind
    run_id: int | None = None
    record: int | None = None  # the history's decision id (the version number after an approve)
    amended: tuple[tuple[str, str], ...] = ()  # (file, line) a reviewer wrote instead of the run's lines
    memory_before: str | None = None  # the approved MEMORY.md the commit replaced, for memory health's bans
    undone: bool = True  # run_failed: False when its undo stopped halfway (its journal and content stay)


FollowUp = Callable[[Context, Decision], None]

APPROVALS: frozenset[Kind] = frozenset({"approve", "partial_approve", "restore"})


def _reviewer_lines(ctx: Context, d: Decision) -> None:
    """A reviewer's own text: forget never removes it."""
    if d.amended:
        person_lines.record(ctx.conn, list(d.amended))


def _health_bans(ctx: Context, d: Decision) -> None:
    """Lines memory health asked to remove, and the person approved removing, stay out of later runs."""
    if d.run_id is not None:
        ban_approved_removals(ctx.conn, ctx.paths.memory_root, d.run_id, d.memory_before)


def _history_snapshot(ctx: Context, d: Decision) -> None:
    """The new baseline is a version in the history a person can restore."""
    if d.record is not None:
        history.take_snapshot(ctx.conn, ctx.paths.memory_root, d.record, ctx.settings.history_versions)


def _forget_release(ctx: Context, d: Decision) -> None:
    """A run that removed forgotten rollouts' text did not land: the next run carries the removal again."""
    if d.run_id is not None:
        forgotten.release_after_rejection(ctx.conn, d.run_id)


def _run_content(ctx: Context, d: Decision) -> None:
    """A decided run keeps counts and file names, never memory text (its diffs, snapshot and journal go)."""
    if d.run_id is not None and d.undone:
        stores.drop_run_content(ctx.conn, d.run_id)
        checkpoint_wal(ctx.conn)  # the deleted text leaves no copy in the -wal file


def _forget_finish(ctx: Context, d: Decision) -> None:
    """The removal of forgotten rollouts' text is approved: every store forgets again, the lineage goes."""
    if d.run_id is not None:
        forgotten.finish_after_approval(ctx, d.run_id)


def _forget_nothing_left(ctx: Context, d: Decision) -> None:
    """A run found nothing to change: nothing derived from a forgotten rollout is left in memory."""
    forgotten.finish_without_changes(ctx.conn)


def _search_purge(ctx: Context, d: Decision) -> None:
    """Deleted search documents leave the FTS5 segments too (the index keeps terms until merged)."""
    search.purge_deleted(ctx.conn, force=True)


def _checkpoint(ctx: Context, d: Decision) -> None:
    """Deleted rows are zeroed (``secure_delete``); the WAL is emptied of their old frames."""
    checkpoint_wal(ctx.conn)


def _search_index(ctx: Context, d: Decision) -> None:
    """The search index follows the memory root; text that left it leaves the FTS segments. Never raises."""
    search.try_refresh_memory_index(ctx.conn, ctx.paths.memory_root)


# In this order: the decision's own records first, then content removal, then the derived indexes and the WAL.
FOLLOW_UPS: tuple[tuple[str, frozenset[Kind], FollowUp], ...] = (
    ("reviewer_lines", APPROVALS, _reviewer_lines),
    ("health_bans", APPROVALS, _health_bans),
    ("history_snapshot", APPROVALS | {"manual_commit"}, _history_snapshot),
    ("forget_release", frozenset({"reject", "run_failed"}), _forget_release),
    ("run_content", APPROVALS | {"reject", "run_failed"}, _run_content),
    ("forget_finish", APPROVALS, _forget_finish),
    ("forget_nothing_left", frozenset({"no_changes"}), _forget_nothing_left),
    ("search_purge", frozenset({"forget"}), _search_purge),
    ("checkpoint", frozenset({"forget", "manual_commit"}), _checkpoint),
    ("search_index", APPROVALS | {"reject", "manual_commit", "restore_proposed"}, _search_index),
)


def follow_ups(kind: Kind) -> list[str]:
    """The names of the follow-ups a decision of ``kind`` runs, in order."""
    return [name for name, kinds, _ in FOLLOW_UPS if kind in kinds]


def after_decision(ctx: Context, decision: Decision) -> list[str]:
    """Run every follow-up of ``decision``, in order; returns their names. Called once by each decision path,
    under the memory-root lock when the decision took it."""
    done = []
    for name, kinds, step in FOLLOW_UPS:
        if decision.kind in kinds:
            step(ctx, decision)
            done.append(name)
    return done
