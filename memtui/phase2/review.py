"""Human review of a Phase 2 run: nothing the agent wrote becomes the baseline until a person approves it.

``approve`` commits the workspace as the new one-commit baseline and records success (selection flags, watermark).
``reject`` puts back exactly the files the run changed, from the journal taken before each first write.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memtui import clock
from memtui.context import Context
from memtui.phase2 import baseline
from memtui.phase2.tools import restore
from memtui.phase2.workspace import RAW_MEMORIES, ROLLOUT_SUMMARIES, remove_diff_file
from memtui.state import global_job

POST_KEY = "phase2.post.{}"  # meta key: {path: sha256|null} of what a run left, to spot later hand edits


class ReviewError(RuntimeError):
    """The decision cannot be made (nothing awaits review, or a run holds the lock); the message says why."""


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
    kind: str = "consolidation"  # consolidation | restore (issue 11)
    restore_of: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Phase2Run:
        d: dict[str, Any] = dict(row)
        d["selected"] = [tuple(x) for x in json.loads(d.get("selected") or "[]")]
        d["stat"] = [tuple(x) for x in json.loads(d.get("stat") or "[]")]
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
    decision: int | None = None  # the audit record (and, after an approve, the version number)
    hunks_in: int = 0
    hunks_out: int = 0


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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


def _awaiting(conn: sqlite3.Connection, run_id: int | None) -> Phase2Run:
    run = get_run(conn, run_id) if run_id is not None else pending_run(conn)
    if run is None:
        raise ReviewError("no Phase 2 run is awaiting review" if run_id is None else f"no Phase 2 run #{run_id}")
    if run.status != "awaiting_review":
        raise ReviewError(f"Phase 2 run #{run.id} is {run.status}, not awaiting review")
    return run


def approve(
    ctx: Context,
    run_id: int | None = None,
    *,
    except_ids: list[str] | None = None,
    amendments: dict[str, str] | None = None,
    reason: str | None = None,
) -> ReviewResult:
    """Diff file out, new one-commit baseline, success recorded with the run's exact selection and watermark.

    ``except_ids`` leaves those hunks out (their lines stay as in the baseline) and records them as rejected with
    ``reason``; ``amendments`` ({hunk id: text}) commit a reviewer's text instead of the run's new lines.
    """
    from memtui.review import decide

    conn, root, s = ctx.conn, ctx.paths.memory_root, ctx.settings
    run = _awaiting(conn, run_id)
    claim = global_job.try_claim_global_phase2_job(conn, worker_id(), s.job_lease_seconds, 0, skip_backoff=True)
    if not claim.claimed or claim.token is None:
        raise ReviewError("a Phase 2 run holds the lock; try again when it has finished")
    try:
        remove_diff_file(root)  # BEFORE the commit: the diff holds deleted content
        baseline.ensure_baseline(root, clear_stale_lock=True)  # we hold the lock: a leftover index.lock is stale
        try:
            p = decide.plan(root, run.diff, except_ids or [], amendments)
        except ValueError as exc:
            raise ReviewError(str(exc)) from exc
        evidence_threads = _evidence_threads(ctx, run, p) if p.rejected else {}
        decide.write_plan(root, p)
        if run.kind == "restore":
            commit = baseline.commit_keeping(
                root, [RAW_MEMORIES, ROLLOUT_SUMMARIES], f"memtui baseline: restored version {run.restore_of}"
            )
            global_job.release_global_phase2_job(conn, claim.token)
        else:
            commit = baseline.reset_baseline(root, f"memtui baseline: approved Phase 2 run #{run.id}")
            watermark = int(run.new_watermark or 0)
            if not global_job.mark_global_phase2_job_succeeded(conn, claim.token, watermark, list(run.selected)):
                raise ReviewError("lost the Phase 2 lock while approving; approve again")
    except BaseException:
        global_job.release_global_phase2_job(conn, claim.token)
        raise
    conn.execute(
        "UPDATE phase2_runs SET status='approved', decided_at=?, new_commit=? WHERE id=?",
        (clock.now_s(), commit, run.id),
    )
    drop_journal(conn, run.id)
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
    from memtui import forget

    forget.finish_after_approval(ctx, run.id)
    job = global_job.read_global_job(conn)
    return ReviewResult(
        run_id=run.id,
        status="approved",
        commit=commit,
        watermark=job["last_success_watermark"],
        decision=decision,
        hunks_in=len(p.hunk_refs(True)),
        hunks_out=len(p.rejected),
    )


def _evidence_threads(ctx: Context, run: Phase2Run, p: Any) -> dict[str, list[str]]:
    """Rollouts behind each rejected hunk (so forgetting one of them also scrubs the rejected text)."""
    from memtui.review.evidence import evidence_for_hunks

    rejected = [h for h in p.hunks if h.id in p.rejected]
    found = evidence_for_hunks(ctx, rejected, run)
    return {hid: sorted({e.thread_id for e in items}) for hid, items in found.items()}


def reject(ctx: Context, reason: str | None = None, run_id: int | None = None) -> ReviewResult:
    """Undo the run's writes (a file a person changed since the run is kept), store the reason for the next prompt."""
    conn, root = ctx.conn, ctx.paths.memory_root
    run = _awaiting(conn, run_id)
    pre, post = load_journal(conn, run.id)
    restored = restore(root, pre, post)
    kept = sorted(set(pre) - set(restored))
    remove_diff_file(root)
    if baseline.is_usable(root):
        baseline.unstage(root)  # the agent's staged blobs become unreachable and are pruned
    conn.execute(
        "UPDATE phase2_runs SET status='rejected', decided_at=?, reason=? WHERE id=?",
        (clock.now_s(), (reason or "").strip() or None, run.id),
    )
    drop_journal(conn, run.id)
    from memtui import forget
    from memtui.review import decide

    decision = decide.record_rejection(conn, root, run_id=run.id, diff=run.diff, reason=reason)
    forget.release_after_rejection(conn, run.id)
    return ReviewResult(run_id=run.id, status="rejected", restored=restored, kept=kept, decision=decision)


def workspace_diff(ctx: Context) -> tuple[list[tuple[str, str]], str]:
    """(A/M/D stat, unified diff) of the working tree against the baseline, e.g. a person's own edits."""
    root = ctx.paths.memory_root
    baseline.ensure_baseline(root)
    return baseline.stat_and_diff(root)


def baseline_commit(ctx: Context) -> str:
    root: Path = ctx.paths.memory_root
    return baseline.ensure_baseline(root)


def commit_manual_edit(ctx: Context, message: str) -> str:
    """Make a person's direct change the new baseline; synced inputs keep their baseline version (still pending)."""
    conn, root = ctx.conn, ctx.paths.memory_root
    if (run := pending_run(conn)) is not None:
        raise ReviewError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
    job = global_job.read_global_job(conn)
    if job is not None and job["status"] == "running" and (job["lease_until"] or 0) > clock.now_s():
        raise ReviewError("a Phase 2 run is in progress; try again when it has finished")
    baseline.ensure_baseline(root)
    remove_diff_file(root)
    changed = [p for _, p in baseline.changes(root) if not p.startswith((RAW_MEMORIES, ROLLOUT_SUMMARIES + "/"))]
    commit = baseline.commit_keeping(root, [RAW_MEMORIES, ROLLOUT_SUMMARIES], message or "memtui: manual edit")
    from memtui import history

    decision = history.record_decision(
        conn, "manual_commit", files_in=changed, reason=message, tree=history.baseline_tree(root), commit=commit
    )
    history.take_snapshot(conn, root, decision, ctx.settings.history_versions)
    return commit
