"""Forget a rollout: what it contributed (lineage), and removing it everywhere under MEMTUI_HOME.

``forget`` removes the thread's stage-1 output, its rollout summary file, its job history and the words of it the
index kept (preview, title, citation blocks), and marks it never to be extracted again. What was derived from it
goes with the next Phase 2 run: the inputs no longer hold it, the offline consolidator regenerates without it, the
agent is told which rollouts were forgotten and what they contributed, and a deterministic pass removes every line
that came only from it. When that run is approved, the history snapshots and rejected hunks that still hold its
text are rewritten or dropped, old run records are cleared, deleted rows are zeroed and the WAL truncated; the
baseline commit replaces the old one and git prunes the objects only the old one held.

Lineage, not mentions: a memory line goes only when every rollout supporting it is forgotten. It is the rollout's
when it repeats a line of its raw memory or summary that no other rollout's output has, is a pointer to its thread
id or summary file and nothing else, or sits in (or is tagged with) a task whose evidence is only forgotten
rollouts. A line that also cites a rollout still remembered loses only the forgotten citation. A line a person
wrote (``memtui/state/person_lines.py``) is never removed: the review names it as mentioning a forgotten rollout.
Where the rollout's text lives is ``memtui/services/stores.py``: forget runs every store there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic import BaseModel

from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY, ROLLOUT_SUMMARIES
from memtui.adapters.memroot.lock import memory_root_lock
from memtui.core import clock
from memtui.domain.stems import rollout_summary_file_stem
from memtui.services import history, stores
from memtui.services.context import Context
from memtui.services.phase2.forgotten import DerivedLine, Lineage, LineRef
from memtui.services.phase2.recovery import recover_locked
from memtui.services.phase2.review import pending_run
from memtui.services.review.after import Decision, after_decision
from memtui.services.stores import Env, line_keys, plan_lines
from memtui.state import forgotten, outputs, person_lines, threads


class ForgetError(RuntimeError):
    """The forget cannot happen now (a run awaits review, the lock is held, unknown thread); says why."""


class ForgetResult(BaseModel):
    thread_id: str
    forgotten: bool
    decision: int | None = None
    removed_output: bool = False
    removed_files: list[str] = []
    lineage: Lineage | None = None
    stores: dict[str, int] = {}  # what each store of the registry changed

    def message(self) -> str:
        if not self.forgotten:
            return f"{self.thread_id}: no longer forgotten; the next Phase 2 may extract it again"
        parts = [f"forgot {self.thread_id}"]
        parts.append("stage-1 output removed" if self.removed_output else "no stage-1 output")
        if self.removed_files:
            parts.append(f"removed {len(self.removed_files)} summary file(s)")
        if self.lineage and self.lineage.lines:
            parts.append(f"{len(self.lineage.lines)} memory line(s) derived from it go with the next Phase 2 run")
        if self.lineage and self.lineage.mentions:
            parts.append(f"{len(self.lineage.mentions)} line(s) you wrote mention it: they stay, yours to decide")
        return "; ".join(parts)


# ---- lineage ----------------------------------------------------------------------------------------------


def _summary_stems(conn: sqlite3.Connection, root: Path, thread_id: str) -> set[str]:
    stems: set[str] = set()
    stamp = outputs.stem_parts(conn, thread_id)
    if stamp is not None:
        stems.add(rollout_summary_file_stem(thread_id, stamp[0], stamp[1]))
    folder = root / ROLLOUT_SUMMARIES
    if folder.is_dir():
        for f in folder.glob("*.md"):
            try:
                with f.open("r", encoding="utf-8", errors="replace") as fh:
                    head = fh.readline()
            except OSError:
                continue
            if head.strip() == f"thread_id: {thread_id}":
                stems.add(f.stem)
    return stems


def lineage(ctx: Context, thread_id: str) -> Lineage:
    """What ``thread_id`` contributed: its summary files, its own lines, and the memory lines derived from it."""
    conn, root = ctx.conn, ctx.paths.memory_root
    texts = outputs.text_of(conn, thread_id)
    own = line_keys(f"{texts[0]}\n{texts[1]}") if texts else set()
    others: set[str] = set()
    if own:
        for raw, summary in outputs.texts_of_others_remembered(conn, thread_id):
            others |= line_keys(f"{raw}\n{summary}") & own
    stems = _summary_stems(conn, root, thread_id)
    found = Lineage(
        thread_id=thread_id,
        summary_files=sorted(f"{ROLLOUT_SUMMARIES}/{s}.md" for s in stems),
        keys=sorted(own - others),
    )
    t = found.target(person_lines.hashes(conn))
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        split = text.split("\n")
        plan, mentions = plan_lines(rel, text, t)
        found.lines += [DerivedLine(file=rel, line=i + 1, text=split[i]) for i in sorted(plan) if split[i].strip()]
        found.mentions += [LineRef(file=rel, line=i + 1) for i in mentions]
    return found


# ---- forget / undo ----------------------------------------------------------------------------------------


def forget(ctx: Context, thread_id: str, reason: str | None = None) -> ForgetResult:
    """Forget ``thread_id`` now in every store of the registry; the next Phase 2 run removes what was derived."""
    conn, root = ctx.conn, ctx.paths.memory_root
    known = threads.exists(conn, thread_id)
    has_output = outputs.has_any(conn, (thread_id,))
    if not known and not has_output:
        raise ForgetError(f"no rollout {thread_id} in the index (`memtui status` counts them; ids are exact)")
    with memory_root_lock(root, "forget"):
        recover_locked(ctx)
        if (run := pending_run(conn)) is not None:
            raise ForgetError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
        found = lineage(ctx, thread_id)
        target = found.target(person_lines.hashes(conn))
        removed_files = [rel for rel in found.summary_files if (root / rel).is_file()]
        conn.execute("BEGIN IMMEDIATE")
        try:
            changed = stores.forget_everywhere(Env(conn, ctx.paths.home), target)
            forgotten.mark(conn, thread_id, clock.now_s(), (reason or "").strip() or None, found.model_dump_json())
            decision = history.record_decision(
                conn,
                "forget",
                thread_id=thread_id,
                files_out=[stores.rename(f, target) or f for f in removed_files],  # names are text: ids and counts
                reason=reason,
                tree=history.baseline_tree(root),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        after_decision(ctx, Decision("forget", record=decision))
    return ForgetResult(
        thread_id=thread_id,
        forgotten=True,
        decision=decision,
        removed_output=changed.get("stage-1 outputs", 0) > 0,
        removed_files=removed_files,
        lineage=found,
        stores=changed,
    )


def unforget(ctx: Context, thread_id: str) -> ForgetResult:
    """Lift the mark: the next ingest re-reads the file and Phase 1 may extract it again."""
    conn = ctx.conn
    if not forgotten.unmark(conn, thread_id):
        raise ForgetError(f"{thread_id} is not forgotten")
    threads.forget_file_of(conn, thread_id)  # re-read: preview, title, citations
    decision = history.record_decision(conn, "unforget", thread_id=thread_id)
    after_decision(ctx, Decision("unforget", record=decision))
    return ForgetResult(thread_id=thread_id, forgotten=False, decision=decision)
