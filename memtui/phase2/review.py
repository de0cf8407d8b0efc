"""Human review of a Phase 2 run: nothing the agent wrote becomes the baseline until a person approves it.

What a person approves is exactly what they saw. A run records the tree it produced (git tree id plus a blob id per
file); ``approve`` commits that tree and nothing else, and refuses, naming the files, when the memory root no longer
matches it, unless the person chose to include those changes after seeing them (``include_changes``, pinned to the
tree they were shown with ``expected_tree``). ``reject`` puts back exactly the files the run changed, from the
journal taken before each first write, and keeps a file a person changed since. Every decision runs under the
memory-root lock, and once a run is decided its stored diffs and pre-run snapshot are deleted for good.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from typing import Any

from pydantic import BaseModel

from memtui import clock
from memtui.context import Context
from memtui.history import is_snapshot_path
from memtui.memroot.lock import MemoryRootBusy, clear_stale_index_lock, memory_root_lock
from memtui.memroot.view import TreeView, remove_leftover_views, worktree_view
from memtui.phase2 import baseline
from memtui.phase2.tools import restore
from memtui.phase2.workspace import RAW_MEMORIES, ROLLOUT_SUMMARIES, remove_diff_file
from memtui.state import global_job
from memtui.state.db import checkpoint_wal

POST_KEY = "phase2.post.{}"  # meta key: {path: sha256|null} of what a run left, to spot later hand edits
MANUAL_MESSAGE = "memtui: manual edit"


class ReviewError(RuntimeError):
    """The decision cannot be made (nothing awaits review, the root changed...); the message says why."""


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


class Phase2Run(BaseModel):
    id: int
    status: str
    started_at: int
    finished_at: int | None = None
    decided_at: int | None = None
    offline: bool = False
    model: str | None = None
    baseline_commit: str | None = None
    new_commit: str | None = None
    claimed_watermark: int | None = None
    new_watermark: int | None = None
    selected: list[tuple[str, int]] = []
    stat: list[tuple[str, str]] = []
    diff: str = ""
    input_diff: str = ""
    reason: str | None = None
    turns: int | None = None
    reviewed_tree: str | None = None  # the git tree the run produced: what approve commits
    reviewed_files: dict[str, str] = {}  # {path: blob id} of that tree
    lines_added: int | None = None
    lines_removed: int | None = None
    included_changes: list[tuple[str, str]] = []  # files a person chose to approve with the run
    kind: str = "consolidation"  # consolidation | restore (issue 11: a past version brought back through review)
    restore_of: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Phase2Run:
        d: dict[str, Any] = dict(row)
        d["selected"] = [tuple(x) for x in json.loads(d.get("selected") or "[]")]
        d["stat"] = [tuple(x) for x in json.loads(d.get("stat") or "[]")]
        d["included_changes"] = [tuple(x) for x in json.loads(d.get("included_changes") or "[]")]
        d["reviewed_files"] = json.loads(d.get("reviewed_files") or "{}")
        d["diff"] = d.get("diff") or ""
        d["input_diff"] = d.get("input_diff") or ""
        d.pop("pre_snapshot", None)
        d.pop("prompt_tokens", None)
        d.pop("completion_tokens", None)
        return cls(**d)


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
    hunks_out: int = 0  # hunks left out (their lines stay as in the baseline), remembered as rejected


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


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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
    row = conn.execute("SELECT * FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    return Phase2Run.from_row(row) if row else None


def pending_run(conn: sqlite3.Connection) -> Phase2Run | None:
    """The run awaiting a decision, if any (at most one: an awaiting run blocks new runs)."""
    row = conn.execute("SELECT * FROM phase2_runs WHERE status='awaiting_review' ORDER BY id DESC LIMIT 1").fetchone()
    return Phase2Run.from_row(row) if row else None


def recent_rejection_reasons(conn: sqlite3.Connection, limit: int = 5) -> list[str]:
    rows = conn.execute(
        "SELECT reason FROM phase2_runs WHERE status='rejected' AND TRIM(COALESCE(reason, '')) != ''"
        " ORDER BY decided_at DESC, id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [r[0] for r in rows]


def load_journal(conn: sqlite3.Connection, run_id: int) -> tuple[dict[str, Any], dict[str, str | None] | None]:
    row = conn.execute("SELECT pre_snapshot FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    pre = json.loads(row[0]) if row and row[0] else {}
    post_row = conn.execute("SELECT value FROM meta WHERE key=?", (POST_KEY.format(run_id),)).fetchone()
    post = json.loads(post_row[0]) if post_row and post_row[0] else None
    return pre, post


def drop_journal(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("DELETE FROM meta WHERE key=?", (POST_KEY.format(run_id),))


def forget_run_content(conn: sqlite3.Connection, run_id: int) -> None:
    """A decided run keeps its file lists (changed, and written by the run itself) and counts, never memory
    content: the diffs and the pre-run snapshot go.

    The connection runs with ``secure_delete`` (freed pages are zeroed) and the WAL is checkpointed and truncated,
    so the deleted text leaves no copy in ``state.sqlite`` or its ``-wal`` file.
    """
    row = conn.execute("SELECT pre_snapshot FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    written = sorted(json.loads(row[0])) if row and row[0] and row[0] != "null" else []
    conn.execute(
        "UPDATE phase2_runs SET diff=NULL, input_diff=NULL, pre_snapshot=NULL, reviewed_files=NULL,"
        " written_files=? WHERE id=?",
        (json.dumps(written), run_id),
    )
    drop_journal(conn, run_id)
    checkpoint_wal(conn)


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
) -> ReviewResult:
    """Commit exactly the tree the run produced as the new one-commit baseline, and record success.

    If the memory root no longer matches that tree, refuse with ``ChangedSinceRun`` (files named) unless
    ``include_changes``: then the current tree is committed, and with ``expected_tree`` (the tree the person was
    shown, ``ReviewState.since_run.tree``) only if nothing changed again since. Busy root: ``MemoryRootBusy``.

    Hunk by hunk (issue 11): ``except_ids`` leaves those hunks out (their lines stay as in the baseline) and
    records them as rejected with ``reason``; ``amendments`` ({hunk id: text}) commit a reviewer's text instead
    of the run's new lines. The committed tree is the reviewed tree with exactly those changes, and the memory
    root is brought in line with it. A restore run commits only the memory files it restores.
    """
    from memtui import forget
    from memtui.review import decide

    conn, root, s = ctx.conn, ctx.paths.memory_root, ctx.settings
    with memory_root_lock(root, "approve"):
        run = _awaiting(conn, run_id)
        try:
            p = decide.plan(root, run.diff, except_ids or [], amendments, reviewed_text=_reviewed_text(root, run))
        except ValueError as exc:
            raise ReviewError(str(exc)) from exc
        evidence_threads = _evidence_threads(ctx, run, p) if p.rejected else {}
        clear_stale_index_lock(root, s.index_lock_stale_seconds, purpose="approve")
        claim = global_job.try_claim_global_phase2_job(conn, worker_id(), s.job_lease_seconds, 0, skip_backoff=True)
        if not claim.claimed or claim.token is None:
            raise MemoryRootBusy("approve", detail="a Phase 2 run still holds its lease")
        try:
            remove_diff_file(root)  # BEFORE staging: the diff file holds deleted content (it is excluded as well)
            baseline.ensure_baseline(root)
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
                decide.write_plan(root, p)
            message = (
                f"memtui baseline: restored version {run.restore_of} (run #{run.id})"
                if run.kind == "restore"
                else f"memtui baseline: approved Phase 2 run #{run.id}"
            )
            commit = baseline.commit_tree(root, str(base), message)
            if run.kind == "restore":
                global_job.release_global_phase2_job(conn, claim.token)
            else:
                watermark = int(run.new_watermark or 0)
                if not global_job.mark_global_phase2_job_succeeded(conn, claim.token, watermark, list(run.selected)):
                    raise ReviewError("lost the Phase 2 lock while approving; approve again")
        except BaseException:
            global_job.release_global_phase2_job(conn, claim.token)
            if baseline.is_usable(root):
                baseline.run_git(root, "read-tree", "HEAD")  # the index points back at the baseline
            raise
        conn.execute(
            "UPDATE phase2_runs SET status='approved', decided_at=?, new_commit=?, included_changes=? WHERE id=?",
            (clock.now_s(), commit, json.dumps(changed) if changed else None, run.id),
        )
        decision = decide.record_approval(
            conn,
            root,
            run_id=run.id,
            kind=run.kind,
            p=p,
            commit=commit,
            reason=reason,
            keep_versions=s.history_versions,
            evidence_threads=evidence_threads,
        )
        forget_run_content(conn, run.id)
        forget.finish_after_approval(ctx, run.id)
    job = global_job.read_global_job(conn)
    return ReviewResult(
        run_id=run.id,
        status="approved",
        commit=commit,
        watermark=job["last_success_watermark"],
        included_changes=changed,
        decision=decision,
        hunks_in=len(p.hunk_refs(True)),
        hunks_out=len(p.rejected),
    )


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
    from memtui.review.evidence import evidence_for_hunks

    rejected = [h for h in p.hunks if h.id in p.rejected]
    found = evidence_for_hunks(ctx, rejected, run)
    return {hid: sorted({e.thread_id for e in items}) for hid, items in found.items()}


def reject(ctx: Context, reason: str | None = None, run_id: int | None = None) -> ReviewResult:
    """Undo the run's writes (a file a person changed since the run is kept), store the reason for the next prompt."""
    conn, root = ctx.conn, ctx.paths.memory_root
    with memory_root_lock(root, "reject"):
        run = _awaiting(conn, run_id)
        pre, post = load_journal(conn, run.id)
        restored = restore(root, pre, post)
        kept = sorted(set(pre) - set(restored))
        remove_diff_file(root)
        if baseline.is_usable(root):
            clear_stale_index_lock(root, ctx.settings.index_lock_stale_seconds, purpose="reject")
            baseline.unstage(root)  # the agent's staged blobs become unreachable and are pruned
        conn.execute(
            "UPDATE phase2_runs SET status='rejected', decided_at=?, reason=? WHERE id=?",
            (clock.now_s(), (reason or "").strip() or None, run.id),
        )
        from memtui import forget
        from memtui.review import decide

        decision = decide.record_rejection(conn, root, run_id=run.id, diff=run.diff, reason=reason)
        forget.release_after_rejection(conn, run.id)
        forget_run_content(conn, run.id)
    return ReviewResult(run_id=run.id, status="rejected", restored=restored, kept=kept, decision=decision)


def _changes(view: TreeView) -> PendingChanges:
    return PendingChanges(tree=view.tree, stat=view.stat, diff=view.diff)


def review_state(ctx: Context, *, with_diff: bool = True) -> ReviewState:
    """What awaits a person, read-only (a temporary index; no lock, never writes ``.git``)."""
    root = ctx.paths.memory_root
    run = pending_run(ctx.conn)
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
        if (run := pending_run(conn)) is not None:
            raise ReviewError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
        job = global_job.read_global_job(conn)
        if job is not None and job["status"] == "running" and (job["lease_until"] or 0) > clock.now_s():
            raise MemoryRootBusy("commit", detail="a Phase 2 run still holds its lease")
        clear_stale_index_lock(root, s.index_lock_stale_seconds, purpose="commit")
        baseline.ensure_baseline(root)
        remove_leftover_views(root)
        remove_diff_file(root)
        if expected_tree is not None:
            tree = baseline.write_worktree_tree(root)
            if tree != expected_tree:
                baseline.run_git(root, "read-tree", "HEAD")
                raise ReviewError(
                    "the memory root changed after you looked at it; nothing was committed. Look at the diff again "
                    "(`memtui review show`) and commit what it shows."
                )
        changed = [
            path
            for _, path in worktree_view(root, with_diff=False).stat
            if path != RAW_MEMORIES and not path.startswith(ROLLOUT_SUMMARIES + "/")
        ]
        if not changed:  # new inputs alone stay pending for Phase 2: a commit of them would record an empty change
            if expected_tree is not None:
                baseline.run_git(root, "read-tree", "HEAD")
            raise ReviewError("nothing to commit: MEMORY.md, memory_summary.md and skills/ match the baseline")
        commit = baseline.commit_keeping(root, [RAW_MEMORIES, ROLLOUT_SUMMARIES], message or MANUAL_MESSAGE)
        from memtui import history

        decision = history.record_decision(
            conn, "manual_commit", files_in=changed, reason=message, tree=history.baseline_tree(root), commit=commit
        )
        history.take_snapshot(conn, root, decision, s.history_versions)
    checkpoint_wal(conn)
    return commit
