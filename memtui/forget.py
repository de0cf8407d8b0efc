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
Where the rollout's text lives is ``memtui/state/stores.py``: forget runs every store there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memtui import clock, history
from memtui.context import Context
from memtui.memroot.files import MEMORY_MD, MEMORY_SUMMARY, ROLLOUT_SUMMARIES
from memtui.phase2.stems import rollout_summary_file_stem
from memtui.state import person_lines, stores
from memtui.state.stores import Env, Target, line_keys, plan_lines, scrub_text


class ForgetError(RuntimeError):
    """The forget cannot happen now (a run awaits review, the lock is held, unknown thread); says why."""


class Lineage(BaseModel):
    """What a rollout contributed, as far as memtui can tell."""

    thread_id: str
    summary_files: list[str] = []  # rollout_summaries/<stem>.md
    keys: list[str] = []  # normalised lines of its raw memory and summary that no other rollout has
    lines: list[dict[str, Any]] = []  # [{file, line, text}] lines of the memory files derived only from it
    mentions: list[dict[str, Any]] = []  # [{file, line}] a person's lines that mention it: theirs to decide

    def target(self, person: set[str] | frozenset[str] = frozenset()) -> Target:
        return Target(
            self.thread_id, frozenset(Path(f).stem for f in self.summary_files), frozenset(self.keys), frozenset(person)
        )


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
    row = conn.execute(
        "SELECT source_updated_at, rollout_slug FROM stage1_outputs WHERE thread_id=?", (thread_id,)
    ).fetchone()
    if row is not None:
        stems.add(rollout_summary_file_stem(thread_id, row[0], row[1]))
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
    row = conn.execute(
        "SELECT raw_memory, rollout_summary FROM stage1_outputs WHERE thread_id=?", (thread_id,)
    ).fetchone()
    own = line_keys(f"{row[0]}\n{row[1]}") if row else set()
    others: set[str] = set()
    if own:
        for raw, summary in conn.execute(
            "SELECT raw_memory, rollout_summary FROM stage1_outputs WHERE thread_id != ? AND thread_id NOT IN"
            " (SELECT thread_id FROM forgotten_threads)",
            (thread_id,),
        ):
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
        found.lines += [{"file": rel, "line": i + 1, "text": split[i]} for i in sorted(plan) if split[i].strip()]
        found.mentions += [{"file": rel, "line": i + 1} for i in mentions]
    return found


# ---- forget / undo ----------------------------------------------------------------------------------------


def forget(ctx: Context, thread_id: str, reason: str | None = None) -> ForgetResult:
    """Forget ``thread_id`` now in every store of the registry; the next Phase 2 run removes what was derived."""
    conn, root = ctx.conn, ctx.paths.memory_root
    known = conn.execute("SELECT 1 FROM threads WHERE id=?", (thread_id,)).fetchone()
    has_output = conn.execute("SELECT 1 FROM stage1_outputs WHERE thread_id=?", (thread_id,)).fetchone()
    if not known and not has_output:
        raise ForgetError(f"no rollout {thread_id} in the index (`memtui status` counts them; ids are exact)")
    from memtui.memroot.lock import memory_root_lock
    from memtui.phase2.recovery import recover_locked
    from memtui.phase2.review import pending_run

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
            conn.execute(
                "INSERT INTO forgotten_threads (thread_id, forgotten_at, reason, contributed, run_id, done_at)"
                " VALUES (?,?,?,?,NULL,NULL) ON CONFLICT(thread_id) DO UPDATE SET forgotten_at=excluded.forgotten_at,"
                " reason=excluded.reason, contributed=excluded.contributed, run_id=NULL, done_at=NULL",
                (thread_id, clock.now_s(), (reason or "").strip() or None, found.model_dump_json()),
            )
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
        _purge_search(conn)
        history.checkpoint(conn)
    return ForgetResult(
        thread_id=thread_id,
        forgotten=True,
        decision=decision,
        removed_output=changed.get("stage-1 outputs", 0) > 0,
        removed_files=removed_files,
        lineage=found,
        stores=changed,
    )


def _purge_search(conn: sqlite3.Connection) -> None:
    """Deleted search documents leave the FTS5 segments too (the index keeps terms until merged)."""
    from memtui import search

    search.purge_deleted(conn, force=True)


def unforget(ctx: Context, thread_id: str) -> ForgetResult:
    """Lift the mark: the next ingest re-reads the file and Phase 1 may extract it again."""
    conn = ctx.conn
    row = conn.execute("SELECT 1 FROM forgotten_threads WHERE thread_id=?", (thread_id,)).fetchone()
    if row is None:
        raise ForgetError(f"{thread_id} is not forgotten")
    conn.execute("DELETE FROM forgotten_threads WHERE thread_id=?", (thread_id,))
    path = conn.execute("SELECT path FROM threads WHERE id=?", (thread_id,)).fetchone()
    if path is not None:
        conn.execute("DELETE FROM ingest_files WHERE path=?", (path[0],))  # re-read: preview, title, citations
    decision = history.record_decision(conn, "unforget", thread_id=thread_id)
    return ForgetResult(thread_id=thread_id, forgotten=False, decision=decision)


# ---- Phase 2 and the review ------------------------------------------------------------------------------


def pending(conn: sqlite3.Connection) -> list[Lineage]:
    """Forgotten rollouts whose derived text a Phase 2 run still has to remove."""
    rows = conn.execute(
        "SELECT contributed FROM forgotten_threads WHERE done_at IS NULL AND contributed IS NOT NULL"
        " ORDER BY forgotten_at, thread_id"
    ).fetchall()
    return [Lineage.model_validate_json(r[0]) for r in rows]


def pending_target(conn: sqlite3.Connection) -> Target | None:
    person = person_lines.hashes(conn)
    return stores.combine([lin.target(person) for lin in pending(conn)])


def claim_for_run(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("UPDATE forgotten_threads SET run_id=? WHERE done_at IS NULL", (run_id,))


def scrub_workspace(conn: sqlite3.Connection, root: Path, write: Any) -> list[str]:
    """After the agent or the offline merge: remove every line still derived only from a forgotten rollout.
    ``write(rel, bytes)`` is the run's journal, so a reject undoes this too. Returns the files changed."""
    t = pending_target(conn)
    if t is None:
        return []
    changed = []
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        new = scrub_text(rel, text, t)
        if new != text:
            write(rel, new.encode("utf-8"))
            changed.append(rel)
    return changed


def mentions(ctx: Context) -> list[dict[str, Any]]:
    """A person's lines in the memory files that mention a forgotten rollout still being removed: the review names
    them (forget never removes a person's line)."""
    t = pending_target(ctx.conn)
    if t is None:
        return []
    out = []
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        path = ctx.paths.memory_root / rel
        if path.is_file():
            _, found = plan_lines(rel, path.read_text(encoding="utf-8", errors="replace"), t)
            out += [{"file": rel, "line": i + 1} for i in found]
    return out


def finish_after_approval(ctx: Context, run_id: int) -> int:
    """The run that removed the forgotten rollouts' derived text is approved: every store forgets again (history
    versions and left-out hunks written since), then the lineage is dropped."""
    conn = ctx.conn
    rows = conn.execute(
        "SELECT thread_id, contributed FROM forgotten_threads WHERE run_id=? AND done_at IS NULL", (run_id,)
    ).fetchall()
    if not rows:
        return 0
    person = person_lines.hashes(conn)
    env = Env(conn, ctx.paths.home)
    for r in rows:
        if r[1]:
            stores.forget_everywhere(env, Lineage.model_validate_json(r[1]).target(person))
    conn.execute(
        "UPDATE forgotten_threads SET contributed=NULL, done_at=? WHERE run_id=? AND done_at IS NULL",
        (clock.now_s(), run_id),
    )
    from memtui import search

    search.try_refresh_memory_index(conn, ctx.paths.memory_root)  # the old MEMORY.md chunks leave the index
    _purge_search(conn)
    history.checkpoint(conn)
    return len(rows)


def finish_without_changes(conn: sqlite3.Connection) -> None:
    """A Phase 2 run found nothing to change: nothing derived from a forgotten rollout is left in memory."""
    if conn.execute(
        "UPDATE forgotten_threads SET contributed=NULL, done_at=? WHERE done_at IS NULL", (clock.now_s(),)
    ).rowcount:
        history.checkpoint(conn)


def release_after_rejection(conn: sqlite3.Connection, run_id: int) -> None:
    """The removal was rejected: the next run carries it again."""
    conn.execute("UPDATE forgotten_threads SET run_id=NULL WHERE run_id=? AND done_at IS NULL", (run_id,))


def is_forgotten(conn: sqlite3.Connection, thread_id: str) -> bool:
    return conn.execute("SELECT 1 FROM forgotten_threads WHERE thread_id=?", (thread_id,)).fetchone() is not None


def prompt_lines(conn: sqlite3.Connection) -> list[str]:
    """For the agent: each forgotten rollout still to be removed, and the memory lines derived from it."""
    out = []
    for lin in pending(conn):
        out.append(f"thread_id={lin.thread_id}; summary files: {', '.join(lin.summary_files) or 'none'}")
        out += [f"  {line['file']}:{line['line']}: {line['text'].strip()}" for line in lin.lines[:40]]
    return out
