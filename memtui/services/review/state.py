"""What awaits a person's review, read-only: the same for ``memtui review show`` and the TUI's review screen.

Apart from the decisions (``memtui.services.phase2.review``) so that showing it loads only what reading needs: the
run, a read-only view of the memory root and the recovery check, not the approve and reject machinery.
"""

from __future__ import annotations

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.view import TreeView, worktree_view
from memtui.services.context import Context
from memtui.services.review.settle import settle
from memtui.state.runs import Phase2Run, pending


class PendingChanges(BaseModel):
    """Changes in the memory root, as a person sees them: tree id (to pin a decision to), files and diff."""

    tree: str
    stat: list[tuple[str, str]]
    diff: str


class ReviewState(BaseModel):
    """What is pending, the same for ``memtui review show`` and the TUI's review screen.

    With a run awaiting review: the run, plus ``since_run`` (files that changed after the run, not part of it).
    Without one: ``own_edits``, the memory root against the baseline (a person's edits and synced inputs).
    """

    run: Phase2Run | None = None
    since_run: PendingChanges | None = None
    own_edits: PendingChanges | None = None
    error: str | None = None  # why the working tree could not be read (no baseline yet, broken .git)

    @property
    def nothing_pending(self) -> bool:
        return self.run is None and not (self.own_edits and self.own_edits.stat)


def _changes(view: TreeView) -> PendingChanges:
    return PendingChanges(tree=view.tree, stat=view.stat, diff=view.diff)


def review_state(ctx: Context, *, with_diff: bool = True) -> ReviewState:
    """What awaits a person, read-only (a temporary index; no lock, never writes ``.git``). What a killed process
    left is settled first when the root is free, so a half-finished approve never shows as awaiting review."""
    settle(ctx)
    root = ctx.paths.memory_root
    run = pending(ctx.conn)
    try:
        if run is not None:
            if run.reviewed_tree is None:
                view = worktree_view(root, with_diff=with_diff)  # an older run: all that is there now
                return ReviewState(run=run, since_run=_changes(view) if view.stat else None)
            view = worktree_view(root, against=run.reviewed_tree, against_files=run.reviewed_files, with_diff=with_diff)
            return ReviewState(run=run, since_run=_changes(view) if view.stat else None)
        if not baseline.is_usable(root):
            return ReviewState()
        return ReviewState(own_edits=_changes(worktree_view(root, with_diff=with_diff)))
    except baseline.BaselineError as exc:
        return ReviewState(run=run, error=str(exc))
