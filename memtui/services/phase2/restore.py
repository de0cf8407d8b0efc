"""Restore an approved version through review: its memory files come back as a run awaiting review, never a commit.

The history keeps versions (``memtui.services.history``); bringing one back is a Phase 2 run like any other, so it lives
with the runs it joins (review, recovery, the journal) rather than in the history below them.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY
from memtui.adapters.memroot.lock import memory_root_lock
from memtui.core import clock
from memtui.services.context import Context
from memtui.services.history import SKILLS_DIR, HistoryError, baseline_files, files_diff, version_files
from memtui.services.phase2 import review
from memtui.services.phase2.recovery import recover_locked
from memtui.services.phase2.tools import Journal, save_journal
from memtui.services.review.after import Decision, after_decision
from memtui.services.review.decide import Plan, apply_to_tree
from memtui.state import runs


class RestoreResult(BaseModel):
    run_id: int
    version: int
    stat: list[tuple[str, str]]

    def message(self) -> str:
        return (
            f"version {self.version} is in the workspace as run #{self.run_id} awaiting review "
            f"({len(self.stat)} file(s)); `memtui review show`, then approve (all or --except hunks) or reject"
        )


def _workspace_snapshot_files(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        if (root / rel).is_file():
            out[rel] = (root / rel).read_bytes().decode("utf-8", "replace")
    skills = root / SKILLS_DIR
    if skills.is_dir():
        for f in sorted(skills.rglob("*")):
            if f.is_file() and not f.is_symlink():
                out[f.relative_to(root).as_posix()] = f.read_bytes().decode("utf-8", "replace")
    return out


def restore_version(ctx: Context, decision_id: int) -> RestoreResult:
    """Write version ``decision_id``'s memory files into the workspace as a run awaiting review (never a commit).

    Under the memory-root lock. Refused while a run awaits review, or when a person's uncommitted edit to the memory
    files would be overwritten (commit or undo it first). The run records the exact tree it proposes: the baseline
    with these files replaced, so synced inputs waiting for the next Phase 2 are no part of it."""
    conn, root = ctx.conn, ctx.paths.memory_root
    target = version_files(conn, decision_id)
    with memory_root_lock(root, "restore"):
        recover_locked(ctx)
        if (run := review.pending_run(conn)) is not None:
            raise HistoryError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
        base = baseline.ensure_baseline(root)
        current = baseline_files(root)
        edited = sorted(
            rel
            for rel, text in {**{k: None for k in current}, **_workspace_snapshot_files(root)}.items()
            if text != current.get(rel)
        )
        if edited:
            raise HistoryError(
                f"your own edits to {', '.join(edited)} are not in the baseline; commit them (`memtui review commit`"
                " or the memory editor) or undo them, then restore"
            )
        diff = files_diff(current, target)
        if not diff:
            raise HistoryError(f"version {decision_id} is the same as the current memory")
        stat = sorted(
            (("A" if rel not in current else "D" if rel not in target else "M"), rel)
            for rel in set(current) | set(target)
            if current.get(rel) != target.get(rel)
        )
        tree = apply_to_tree(
            root,
            baseline.run_git(root, "rev-parse", "HEAD^{tree}").strip(),
            Plan(hunks=[], files={rel: target.get(rel) for _, rel in stat}),
        )
        added, removed = review.count_lines(diff)
        now = clock.now_s()
        run_id = runs.insert_restore(
            conn,
            decision_id=decision_id,
            now=now,
            base=base,
            tree=tree,
            files=baseline.tree_files(root, tree),
            added=added,
            removed=removed,
        )

        def persist(journal: Journal) -> None:
            runs.save_pre_snapshot(conn, run_id, journal.pre)
            save_journal(conn, run_id, journal.post)

        journal = Journal(root, on_change=persist)
        for _, rel in stat:
            if rel in target:
                journal.write(rel, target[rel].encode("utf-8"))
            else:
                journal.delete(rel)
        runs.finish_restore(conn, run_id, clock.now_s(), diff, stat)
    after_decision(ctx, Decision("restore_proposed", run_id=run_id))
    return RestoreResult(run_id=run_id, version=decision_id, stat=stat)
