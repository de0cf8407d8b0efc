"""How an approve ends, shared by ``review.approve`` and the recovery that finishes an approve a kill cut short.

An approve writes its decisions (``ApproveIntent``) before its commit; everything after the commit
(``record_approved``) can then be done by whichever process comes next: the approve itself, or
``finish_interrupted_approve`` under the next holder of the memory-root lock. Recovery needs these steps and the
review operations need recovery, so the steps live here, below both.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from typing import Any

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import write_if_changed
from memtui.core import clock
from memtui.services import stores
from memtui.services.context import Context
from memtui.services.phase2.tools import POST_KEY, sha256
from memtui.services.review import decide
from memtui.services.review.after import Decision, after_decision
from memtui.services.review.hunks import parse_diff, resolve_ids
from memtui.services.review.marks import INTENT_KEY as INTENT_KEY  # re-exported: the approve's own marks
from memtui.services.review.marks import approve_message as approve_message
from memtui.state import global_job, meta, person_lines, runs
from memtui.state.db import checkpoint_wal
from memtui.state.runs import Phase2Run


class ReviewError(RuntimeError):
    """The decision cannot be made (nothing awaits review, the root changed...); the message says why."""


class ApproveIntent(BaseModel):
    """What an approve decided, written before its commit: a kill after the commit is finished from this alone."""

    except_ids: list[str] = []
    amendments: dict[str, str] = {}
    reason: str | None = None
    changed: list[tuple[str, str]] = []
    evidence_threads: dict[str, list[str]] = {}
    written: dict[str, str | None] = {}  # file -> hash of what the approve wrote (None: removed)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def load_journal(conn: sqlite3.Connection, run_id: int) -> tuple[dict[str, Any], dict[str, str | None] | None]:
    pre = runs.pre_snapshot(conn, run_id)
    post_value = meta.get(conn, POST_KEY.format(run_id))
    post = json.loads(post_value) if post_value else None
    return pre, post


def forget_run_content(conn: sqlite3.Connection, run_id: int) -> None:
    """A decided run keeps its file lists (changed, and written by the run itself) and counts, never memory
    content: the diffs, the pre-run snapshot and the journal go, through the store registry.

    The connection runs with ``secure_delete`` (freed pages are zeroed) and the WAL is checkpointed and truncated,
    so the deleted text leaves no copy in ``state.sqlite`` or its ``-wal`` file.
    """
    stores.drop_run_content(conn, run_id)
    checkpoint_wal(conn)


def job_after_approval(conn: sqlite3.Connection, run: Phase2Run, token: str) -> None:
    if run.kind == "restore":
        global_job.release_global_phase2_job(conn, token)
        return
    if not global_job.mark_global_phase2_job_succeeded(conn, token, int(run.new_watermark or 0), list(run.selected)):
        raise ReviewError("lost the Phase 2 lock while approving; approve again")


def record_approved(
    ctx: Context,
    run: Phase2Run,
    p: Any,
    commit: str,
    changed: list[tuple[str, str]],
    evidence_threads: dict[str, list[str]],
    reason: str | None,
    memory_before: str | None = None,
) -> int | None:
    """Everything an approve does after its commit: the run approved, the decision in the history, then its
    follow-ups (``after_decision``: snapshot, health bans, content gone, forget finished, search index).

    ``memory_before``: the approved MEMORY.md the commit replaced, for memory health's removals (an approve finished
    after a kill has no copy of it: its health removals are not banned, and the next run proposes them again)."""
    conn = ctx.conn
    runs.mark_approved(conn, run.id, clock.now_s(), commit, changed)
    meta.delete(conn, INTENT_KEY.format(run.id))
    decision = decide.record_approval(
        conn,
        ctx.paths.memory_root,
        run_id=run.id,
        kind=run.kind,
        p=p,
        commit=commit,
        reason=reason,
        evidence_threads=evidence_threads,
    )
    amended = tuple((h.file, x) for h in p.hunks if h.id in p.amended for x in p.amended[h.id].split("\n"))
    kind = decide.approval_kind(run.kind, p)
    after_decision(ctx, Decision(kind, run_id=run.id, record=decision, amended=amended, memory_before=memory_before))
    return decision


def finish_interrupted_approve(ctx: Context) -> int | None:
    """An approve killed after its commit: finish it (the run approved, the job done, the history recorded), so no
    run awaits review on a baseline that already holds it and a reject can never keep its text committed. An
    approve killed before its commit left the baseline as it was: the run awaits review again. Needs the lock.
    Returns the run finished, if any."""

    conn, root = ctx.conn, ctx.paths.memory_root
    run = runs.pending(conn)
    if run is None or not baseline.is_usable(root):
        return None
    intent_value = meta.get(conn, INTENT_KEY.format(run.id))
    subject = baseline.run_git(root, "log", "-1", "--format=%s", "HEAD", check=False).strip()
    if subject != approve_message(run):
        if intent_value is not None:  # killed before its commit: put back what it wrote, as it was reviewed
            roll_back_plan(root, run, ApproveIntent.model_validate_json(intent_value).written)
            meta.delete(conn, INTENT_KEY.format(run.id))
        return None
    intent = ApproveIntent.model_validate_json(intent_value) if intent_value is not None else ApproveIntent()
    p = plan_after_commit(root, run, intent.except_ids, intent.amendments)
    claim = global_job.try_claim_global_phase2_job(
        conn, worker_id(), ctx.settings.job_lease_seconds, 0, skip_backoff=True
    )
    if not claim.claimed or claim.token is None:
        return None
    commit = baseline.head_commit(root)
    try:
        job_after_approval(conn, run, claim.token)
    except BaseException:
        global_job.release_global_phase2_job(conn, claim.token)
        raise
    record_approved(ctx, run, p, commit, intent.changed, intent.evidence_threads, intent.reason)
    return run.id


def roll_back_plan(root: Any, run: Phase2Run, written: dict[str, str | None]) -> None:
    """Files an approve wrote for its hunk decisions before it was killed (still holding exactly that) go back to
    the run's version, so the run's accepted hunks never linger as uncommitted edits that look like a person's."""
    for rel, digest in written.items():
        path = root / rel
        if sha256(path.read_bytes() if path.is_file() else None) != digest:
            continue  # changed since: a person's edit stays
        blob = run.reviewed_files.get(rel)
        if blob is None:
            path.unlink(missing_ok=True)
        else:
            write_if_changed(path, baseline.run_git(root, "cat-file", "blob", blob).encode("utf-8"))


def plan_after_commit(root: Any, run: Phase2Run, except_ids: list[str], amendments: dict[str, str]) -> Any:
    """The decisions of an approve whose commit is already made, for its record: the hunks in and out. The files
    are committed already (and the run's own blobs pruned), so they are not computed again; a left-out hunk's new
    lines are judged against the baseline it left, which holds its old lines and not its new ones."""
    files = parse_diff(run.diff)
    hunks = [h for f in files for h in f.hunks]
    p = decide.Plan(hunks=hunks, rejected=resolve_ids(hunks, except_ids))
    p.amended = {hid: text for key, text in amendments.items() for hid in resolve_ids(hunks, [key])}
    for f in files:
        if any(h.id in p.rejected for h in f.hunks):
            text = baseline.run_git(root, "cat-file", "blob", f"HEAD:{f.path}", check=False)
            p.baseline_keys[f.path] = {person_lines.normalize_line(line) for line in text.split("\n")}
    return p
