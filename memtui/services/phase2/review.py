"""Human review of a Phase 2 run: nothing the agent wrote becomes the baseline until a person approves it.

What a person approves is exactly what they saw. A run records the tree it produced (git tree id plus a blob id per
file); ``approve`` commits that tree and nothing else, and refuses, naming the files, when the memory root no longer
matches it, unless the person chose to include those changes after seeing them (``include_changes``, pinned to the
tree they were shown with ``expected_tree``). ``reject`` puts back exactly the files the run changed, from the
journal taken before each first write, and keeps a file a person changed since. Every decision runs under the
memory-root lock, and once a run is decided its stored diffs and pre-run snapshot are deleted for good.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import approved
from memtui.adapters.memroot.files import MEMORY_MD, RAW_MEMORIES, ROLLOUT_SUMMARIES
from memtui.adapters.memroot.lock import MemoryRootBusy, clear_stale_index_lock, memory_root_lock
from memtui.adapters.memroot.view import remove_leftover_views, worktree_view
from memtui.core import clock
from memtui.services import history, search
from memtui.services.context import Context
from memtui.services.health.consolidation import asked_removals
from memtui.services.history import is_snapshot_path
from memtui.services.phase2.approving import (
    INTENT_KEY,
    ApproveIntent,
    ReviewError,
    approve_message,
    job_after_approval,
    load_journal,
    record_approved,
    worker_id,
)
from memtui.services.phase2.recovery import recover_locked
from memtui.services.phase2.tools import restore, sha256
from memtui.services.phase2.workspace import remove_diff_file, validate_artifact_texts
from memtui.services.review import decide
from memtui.services.review.after import Decision, after_decision
from memtui.services.review.evidence import evidence_for_hunks
from memtui.services.review.references import PlanCheck, check_plan
from memtui.services.review.state import PendingChanges as PendingChanges  # re-exported: what review shows
from memtui.services.review.state import ReviewState as ReviewState
from memtui.services.review.state import review_state as review_state
from memtui.state import decisions, global_job, meta, person_lines, runs
from memtui.state.runs import Phase2Run

MANUAL_MESSAGE = "memtui: manual edit"


class ChangedSinceRun(ReviewError):
    """The memory root differs from the tree a person reviewed: approve refuses and names the files."""

    def __init__(self, run_id: int, files: list[tuple[str, str]], *, again: bool = False) -> None:
        self.run_id = run_id
        self.files = files
        names = ", ".join(f"{p} ({s})" for s, p in files) or "the memory root"
        if again:
            text = (
                f"{names} changed again after you looked; nothing was approved. Look at `memtui review show` again "
                "and approve what it shows."
            )
        else:
            text = (
                f"{names} changed since run #{run_id} was reviewed; nothing was approved. `memtui review show` shows "
                "the run's diff and, separately, what changed since; approve both with "
                "`memtui review approve --include-changes`, or undo those edits."
            )
        super().__init__(text)


class DanglingReferences(ReviewError):
    """Leaving these hunks out would commit references that point nowhere (or at the wrong task): nothing approved."""

    def __init__(self, run_id: int, check: PlanCheck) -> None:
        self.run_id = run_id
        self.check = check
        super().__init__(f"run #{run_id} was not approved: {check.describe()}")


class ReviewResult(BaseModel):
    run_id: int
    status: str
    commit: str | None = None
    watermark: int | None = None
    restored: list[str] = []
    kept: list[str] = []  # files a person edited after the run: a reject leaves them alone
    included_changes: list[tuple[str, str]] = []  # approved together with the run, after the person saw them
    decision: int | None = None  # the audit record (after an approve: the version number in the history)
    hunks_in: int = 0
    hunks_out: int = 0  # hunks left out (their lines stay as in the baseline)
    remembered: int = 0  # of those, remembered as rejected (later runs do not add their lines again)
    deferred: list[str] = []  # generated inputs left out for now: the next run renders them again


def count_lines(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff: the counts a decided run keeps after its diff is deleted."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


def get_run(conn: sqlite3.Connection, run_id: int) -> Phase2Run | None:
    return runs.get(conn, run_id)


def pending_run(conn: sqlite3.Connection) -> Phase2Run | None:
    """The run awaiting a decision, if any (at most one: an awaiting run blocks new runs)."""
    return runs.pending(conn)


def _recover(ctx: Context) -> None:
    """Leftovers of a killed process first (a dead holder's lease, an interrupted run, a half-finished approve)."""
    recover_locked(ctx)


def _awaiting(conn: sqlite3.Connection, run_id: int | None) -> Phase2Run:
    run = get_run(conn, run_id) if run_id is not None else pending_run(conn)
    if run is None:
        raise ReviewError("no Phase 2 run is awaiting review" if run_id is None else f"no Phase 2 run #{run_id}")
    if run.status != "awaiting_review":
        raise ReviewError(f"Phase 2 run #{run.id} is {run.status}, not awaiting review")
    return run


def _tree_changes(root: Any, run: Phase2Run, tree: str) -> list[tuple[str, str]]:
    if run.reviewed_tree == tree:
        return []
    current = baseline.tree_files(root, tree)
    return baseline.compare_files(run.reviewed_files, current) if run.reviewed_files else [("M", "(unknown files)")]


def approve(
    ctx: Context,
    run_id: int | None = None,
    *,
    include_changes: bool = False,
    expected_tree: str | None = None,
    except_ids: list[str] | None = None,
    amendments: dict[str, str] | None = None,
    reason: str | None = None,
    trusted_ids: list[str] | None = None,
) -> ReviewResult:
    """Commit exactly the tree the run produced as the new one-commit baseline, and record success.

    If the memory root no longer matches that tree, refuse with ``ChangedSinceRun`` (files named) unless
    ``include_changes``: then the current tree is committed, and with ``expected_tree`` (the tree the person was
    shown, ``ReviewState.since_run.tree``) only if nothing changed again since. Busy root: ``MemoryRootBusy``.

    Hunk by hunk: ``except_ids`` leaves those hunks out (their lines stay as in the baseline) and
    records them as rejected with ``reason``; ``amendments`` ({hunk id: text}) commit a reviewer's text instead
    of the run's new lines. ``trusted_ids`` approves a hunk's tool-only or flagged lines for what agents load. The
    committed tree is the reviewed tree with exactly those changes, and the memory
    root is brought in line with it. A restore run commits only the memory files it restores.
    """
    conn, root, s = ctx.conn, ctx.paths.memory_root, ctx.settings
    with memory_root_lock(root, "approve"):
        asked = get_run(conn, run_id) if run_id is not None else pending_run(conn)
        _recover(ctx)
        if asked is not None and asked.status == "awaiting_review":
            done = get_run(conn, asked.id)
            if done is not None and done.status == "approved":  # an approve of this run was killed after its commit
                return _finished_approve(conn, done)
        run = _awaiting(conn, run_id)
        p = _decided_plan(root, run, except_ids or [], amendments, trusted_ids or [])
        evidence_threads = _evidence_threads(ctx, run, p) if p.rejected else {}
        clear_stale_index_lock(root, s.index_lock_stale_seconds, purpose="approve")
        claim = global_job.try_claim_global_phase2_job(conn, worker_id(), s.job_lease_seconds, 0, skip_backoff=True)
        if not claim.claimed or claim.token is None:
            raise MemoryRootBusy("approve", detail="a Phase 2 run still holds its lease")
        intent = ApproveIntent(
            except_ids=list(except_ids or []),
            amendments=amendments or {},
            reason=reason,
            evidence_threads=evidence_threads,
        )
        try:
            commit, changed, memory_before = _commit_decided(
                ctx, run, p, claim.token, intent, include_changes, expected_tree
            )
        except BaseException:
            global_job.release_global_phase2_job(conn, claim.token)
            if baseline.is_usable(root):
                baseline.run_git(root, "read-tree", "HEAD")  # the index points back at the baseline
            raise
        decision = record_approved(ctx, run, p, commit, changed, evidence_threads, reason, memory_before)
    search.try_refresh_memory_index(conn, root)  # the index of what agents read follows the new baseline
    job = global_job.read_global_job(conn)
    return ReviewResult(
        run_id=run.id,
        status="approved",
        commit=commit,
        watermark=job.last_success_watermark if job else None,
        included_changes=changed,
        decision=decision,
        hunks_in=len(p.hunk_refs(True)),
        hunks_out=len(p.rejected),
        remembered=len(p.remembered()),
        deferred=sorted({h.file for h in p.deferred()}),
    )


def _decided_plan(
    root: Any, run: Phase2Run, except_ids: list[str], amendments: dict[str, str] | None, trusted_ids: list[str]
) -> Any:
    """The reviewer's hunk decisions as the files to commit; refused when leaving hunks out would leave a reference
    dangling."""
    try:
        p = decide.plan(
            root, run.diff, except_ids, amendments, reviewed_text=_reviewed_text(root, run), trusted_ids=trusted_ids
        )
    except ValueError as exc:
        raise ReviewError(str(exc)) from exc
    if p.partial and not (check := _check_plan(root, run, p)).ok:
        raise DanglingReferences(run.id, check)
    return p


def _commit_decided(
    ctx: Context,
    run: Phase2Run,
    p: Any,
    token: str,
    intent: ApproveIntent,
    include_changes: bool,
    expected_tree: str | None,
) -> tuple[str, list[tuple[str, str]], str | None]:
    """Commit the reviewed tree with the decisions applied, holding the Phase 2 lease ``token``; returns (commit,
    changes a person made since the run and chose to include, the approved MEMORY.md the commit replaced).

    Refuses (``ChangedSinceRun``) when the root changed since the run unless ``include_changes``. The decisions
    (``intent``) are kept before the commit, so an approve killed after it is finished by the next recovery."""
    conn, root = ctx.conn, ctx.paths.memory_root
    remove_diff_file(root)  # BEFORE staging: the diff file holds deleted content (it is excluded as well)
    baseline.ensure_baseline(root)
    # what memory health's removals are checked against after the commit (read only for a run that has any)
    memory_before = approved(root).read_text(MEMORY_MD) if asked_removals(conn, run.id) else None
    tree = baseline.write_worktree_tree(root)
    if run.reviewed_tree is None and not include_changes:
        raise ReviewError(
            f"run #{run.id} has no recorded tree (made by an older memtui); look at `memtui review show` and "
            "approve with `memtui review approve --include-changes`"
        )
    changed = _tree_changes(root, run, tree)
    # a decided file that already holds the decided text: an approve of these same decisions was cut short
    changed = [c for c in changed if not (c[1] in p.files and _current_text(root, c[1]) == p.files[c[1]])]
    if run.kind == "restore":  # synced inputs waiting for the next Phase 2 are no part of a restore
        changed = [c for c in changed if is_snapshot_path(c[1])]
    if changed and not include_changes:
        raise ChangedSinceRun(run.id, changed)
    if expected_tree is not None and tree != expected_tree:
        raise ChangedSinceRun(run.id, changed, again=True)
    if clash := sorted({path for _, path in changed} & set(p.files)):
        raise ReviewError(
            f"{', '.join(clash)} changed since the run; hunk decisions on it cannot be applied. Undo that "
            "edit, or approve the whole file"
        )
    base = run.reviewed_tree if run.kind == "restore" and not changed else tree
    if p.files:
        base = decide.apply_to_tree(root, str(base), p)
        # the root first, then the commit: a kill in between leaves the run awaiting review with the root
        # already showing the decided text, and approving with the same decisions again finishes it
        try:
            decide.write_plan(root, p, checked=baseline.tree_files(root, tree))
        except decide.ChangedWhileApproving as exc:
            raise ChangedSinceRun(run.id, [("M", f) for f in exc.files], again=True) from exc
    # what the rest of the decision needs, kept before the commit: a kill after it is finished from this
    intent = intent.model_copy(
        update={
            "changed": changed,
            "written": {rel: sha256(None if t is None else t.encode("utf-8")) for rel, t in p.files.items()},
        }
    )
    meta.put(conn, INTENT_KEY.format(run.id), intent.model_dump_json())
    commit = baseline.commit_tree(root, str(base), approve_message(run))
    job_after_approval(conn, run, token)
    return commit, changed, memory_before


def _finished_approve(conn: sqlite3.Connection, run: Phase2Run) -> ReviewResult:
    """The approve recovery just finished: the decision the killed command committed is the answer (the person's
    repeated request cannot decide differently, the baseline already holds it)."""
    decision = decisions.last_approval_of(conn, run.id)
    job = global_job.read_global_job(conn)
    return ReviewResult(
        run_id=run.id,
        status="approved",
        commit=run.new_commit,
        watermark=job.last_success_watermark if job else None,
        decision=decision,
    )


def _check_plan(root: Any, run: Phase2Run, p: Any) -> PlanCheck:
    reviewed = _reviewed_text(root, run)
    hunk_file = {h.id: h.file for h in p.hunks}

    def plan_with(ids: set[str]) -> dict[str, str | None]:
        amended = {k: v for k, v in p.amended.items() if k not in ids}
        return decide.plan(root, run.diff, sorted(ids), amended, reviewed_text=reviewed).files

    return check_plan(
        plan_with,
        lambda rel: reviewed(root, rel),
        set(run.reviewed_files) if run.reviewed_files else set(baseline.tree_files(root, "HEAD")),
        set(p.rejected),
        [(h.id, hunk_file[h.id]) for h in p.hunks if h.id not in p.rejected],
        validate_artifact_texts,
    )


def check_partial(
    ctx: Context,
    run_id: int | None = None,
    except_ids: list[str] | None = None,
    amendments: dict[str, str] | None = None,
) -> PlanCheck:
    """What approving with these hunk decisions would leave dangling, with fixes (the TUI's approve dialog asks
    this first; ``approve`` refuses the same)."""
    root = ctx.paths.memory_root
    run = _awaiting(ctx.conn, run_id)
    try:
        p = decide.plan(root, run.diff, except_ids or [], amendments, reviewed_text=_reviewed_text(root, run))
    except ValueError as exc:
        raise ReviewError(str(exc)) from exc
    return _check_plan(root, run, p) if p.partial else PlanCheck([], [], [])


def _current_text(root: Any, rel: str) -> str | None:
    path = root / rel
    return path.read_bytes().decode("utf-8", "replace") if path.is_file() else None


def _reviewed_text(root: Any, run: Phase2Run) -> Any:
    """Read a file as the run left it (from its recorded tree), not as the root holds it now."""

    def read(_root: Any, rel: str) -> str | None:
        if run.reviewed_files:
            blob = run.reviewed_files.get(rel)
            return None if blob is None else baseline.run_git(root, "cat-file", "blob", blob)
        path = root / rel
        return path.read_bytes().decode("utf-8", "replace") if path.is_file() else None

    return read


def _evidence_threads(ctx: Context, run: Phase2Run, p: Any) -> dict[str, list[str]]:
    """Rollouts behind each rejected hunk (so forgetting one of them also scrubs the rejected text)."""
    rejected = [h for h in p.hunks if h.id in p.rejected]
    found = evidence_for_hunks(ctx, rejected, run)
    return {hid: sorted({e.thread_id for e in items}) for hid, items in found.items()}


def reject(ctx: Context, reason: str | None = None, run_id: int | None = None) -> ReviewResult:
    """Undo the run's writes (a file a person changed since the run is kept), store the reason for the next prompt."""
    conn, root = ctx.conn, ctx.paths.memory_root
    with memory_root_lock(root, "reject"):
        _recover(ctx)
        run = _awaiting(conn, run_id)
        pre, post = load_journal(conn, run.id)
        restored = restore(root, pre, post or {})
        kept = sorted(set(pre) - set(restored))
        remove_diff_file(root)
        if baseline.is_usable(root):
            clear_stale_index_lock(root, ctx.settings.index_lock_stale_seconds, purpose="reject")
            baseline.unstage(root)  # the agent's staged blobs become unreachable and are pruned
        runs.mark_rejected(conn, run.id, clock.now_s(), (reason or "").strip() or None)
        decision = decide.record_rejection(conn, root, run_id=run.id, diff=run.diff, reason=reason)
        after_decision(ctx, Decision("reject", run_id=run.id, record=decision))  # the text leaves the search index
    return ReviewResult(run_id=run.id, status="rejected", restored=restored, kept=kept, decision=decision)


def workspace_diff(ctx: Context) -> tuple[list[tuple[str, str]], str]:
    """(A/M/D stat, unified diff) of the working tree against the baseline, read-only: e.g. a person's own edits."""
    root = ctx.paths.memory_root
    if not baseline.is_usable(root):
        return [], ""
    view = worktree_view(root)
    return view.stat, view.diff


def baseline_commit(ctx: Context) -> str:
    """The baseline commit; a root without a usable one gets it first (under the lock)."""
    root = ctx.paths.memory_root
    if baseline.is_usable(root):
        return baseline.head_commit(root)
    with memory_root_lock(root, "create the baseline"):
        return baseline.ensure_baseline(root)


def commit_manual_edit(ctx: Context, message: str | None = None, *, expected_tree: str | None = None) -> str:
    """Make a person's direct change the new baseline; synced inputs keep their baseline version (still pending).

    With ``expected_tree`` (the tree of the diff the person was shown) the commit is refused if the root changed
    since, so nobody commits an edit they did not see.
    """
    conn, root, s = ctx.conn, ctx.paths.memory_root, ctx.settings
    with memory_root_lock(root, "commit"):
        _recover(ctx)
        if (run := pending_run(conn)) is not None:
            raise ReviewError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
        if global_job.lease_live(global_job.read_global_job(conn)):
            raise MemoryRootBusy("commit", detail="a Phase 2 run still holds its lease")
        clear_stale_index_lock(root, s.index_lock_stale_seconds, purpose="commit")
        baseline.ensure_baseline(root)
        remove_leftover_views(root)
        remove_diff_file(root)
        # Stage once, check that tree, and commit exactly it: a write landing after the check is never committed
        # (it stays an uncommitted edit, shown by the next `review show`).
        tree = baseline.write_worktree_tree(root)
        if expected_tree is not None and tree != expected_tree:
            baseline.run_git(root, "read-tree", "HEAD")
            raise ReviewError(
                "the memory root changed after you looked at it; nothing was committed. Look at the diff again "
                "(`memtui review show`) and commit what it shows."
            )
        checked = baseline.tree_keeping(root, tree, [RAW_MEMORIES, ROLLOUT_SUMMARIES])
        changed = [
            p for _, p in baseline.compare_files(baseline.tree_files(root, "HEAD"), baseline.tree_files(root, checked))
        ]
        if not changed:  # new inputs alone stay pending for Phase 2: a commit of them would record an empty change
            baseline.run_git(root, "read-tree", "HEAD")
            raise ReviewError("nothing to commit: MEMORY.md, memory_summary.md and skills/ match the baseline")
        # a person's own lines: forget never removes them
        person_lines.record_added(conn, baseline.run_git(root, "diff", "--no-ext-diff", "HEAD", checked), changed)
        commit = baseline.commit_tree(root, checked, message or MANUAL_MESSAGE)
        decision = history.record_decision(
            conn, "manual_commit", files_in=changed, reason=message, tree=history.baseline_tree(root), commit=commit
        )
        after_decision(ctx, Decision("manual_commit", record=decision))
    return commit
