"""Forget a rollout: what it contributed (lineage), and removing it everywhere under MEMTUI_HOME.

``forget`` removes the thread's stage-1 output, its rollout summary file, its job history and the words of it the
index kept (preview, title, citation blocks), and marks it never to be extracted again. What was derived from it
goes with the next Phase 2 run: the inputs no longer hold it, the offline consolidator regenerates without it, the
agent is told which rollouts were forgotten and what they contributed, and a deterministic pass removes every line
that came only from it. When that run is approved, the history snapshots and rejected hunks that still hold its
text are rewritten or dropped, old run records are cleared, deleted rows are zeroed and the WAL truncated; the
baseline commit replaces the old one and git prunes the objects only the old one held.

"Only from it": a line is the rollout's when it repeats a line of its raw memory or summary that no other rollout's
output has, names its thread id or summary file, or sits in (or is tagged with) a task whose evidence is only it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memtui import clock, history
from memtui.context import Context
from memtui.phase2.stems import rollout_summary_file_stem
from memtui.phase2.workspace import MEMORY_MD, MEMORY_SUMMARY, ROLLOUT_SUMMARIES
from memtui.review.decide import normalize_line
from memtui.state.jobs import STAGE1

MIN_KEY_CHARS = 12  # shorter lines ("- none", "## Task 1") are too generic to say where they came from
_TASK = re.compile(r"^##\s+Task\s+(\d+)\b")
_TAG = re.compile(r"\[Task (\d+)\]")
_SUMMARY_REF = re.compile(rf"{ROLLOUT_SUMMARIES}/([^\s)]+?)\.md")
_THREAD_REF = re.compile(r"thread_id=([0-9A-Za-z_-]+)")


class ForgetError(RuntimeError):
    """The forget cannot happen now (a run awaits review, the lock is held, unknown thread); says why."""


class Lineage(BaseModel):
    """What a rollout contributed, as far as memtui can tell."""

    thread_id: str
    summary_files: list[str] = []  # rollout_summaries/<stem>.md
    keys: list[str] = []  # normalised lines of its raw memory and summary that no other rollout has
    lines: list[dict[str, Any]] = []  # [{file, line, text}] lines of the memory files derived only from it


class ForgetResult(BaseModel):
    thread_id: str
    forgotten: bool
    decision: int | None = None
    removed_output: bool = False
    removed_files: list[str] = []
    lineage: Lineage | None = None
    snapshots_rewritten: int = 0
    snapshots_dropped: int = 0

    def message(self) -> str:
        if not self.forgotten:
            return f"{self.thread_id}: no longer forgotten; the next Phase 1 may extract it again"
        parts = [f"forgot {self.thread_id}"]
        parts.append("stage-1 output removed" if self.removed_output else "no stage-1 output")
        if self.removed_files:
            parts.append(f"removed {', '.join(self.removed_files)}")
        if self.lineage and self.lineage.lines:
            parts.append(f"{len(self.lineage.lines)} memory line(s) derived from it go with the next Phase 2 run")
        return "; ".join(parts)


# ---- lineage ----------------------------------------------------------------------------------------------


def _keys(text: str) -> set[str]:
    return {k for line in text.splitlines() if len(k := normalize_line(line)) >= MIN_KEY_CHARS}


def _refs(line: str) -> set[str]:
    return set(_THREAD_REF.findall(line)) | set(_SUMMARY_REF.findall(line))


def derived_line_numbers(rel: str, text: str, marks: set[str], keys: set[str]) -> list[int]:
    """0-based numbers of the lines of ``text`` derived only from the rollouts named by ``marks`` (thread ids and
    summary stems) or repeating one of their ``keys``."""
    lines = text.split("\n")
    drop: set[int] = set()
    if rel == MEMORY_MD:
        # A task runs from its "## Task n" heading to the next heading of level 1 or 2 (or the generated block's end).
        tasks: dict[tuple[int, str], tuple[int, int, set[str]]] = {}
        group = -1
        open_task: tuple[tuple[int, str], int, set[str]] | None = None

        def close(at: int) -> None:
            nonlocal open_task
            if open_task is not None:
                key, start, refs = open_task
                tasks[key] = (start, at, refs)
                open_task = None

        for i, line in enumerate(lines):
            if line.startswith(("# ", "## ", "<!--")):
                close(i)
                if line.startswith("# "):
                    group = i
                elif m := _TASK.match(line):
                    open_task = ((group, m.group(1)), i, set())
            elif open_task is not None:
                open_task[2].update(_refs(line))
        close(len(lines))
        only = {key for key, (_, _, refs) in tasks.items() if refs and refs <= marks}
        for key in only:
            start, end, _ = tasks[key]
            drop.update(range(start, end))
        group = -1
        for i, line in enumerate(lines):
            if line.startswith("# "):
                group = i
            tags = _TAG.findall(line)
            if tags and all((group, t) in only for t in tags):
                drop.add(i)
    for i, line in enumerate(lines):
        refs = _refs(line)
        if refs & marks:
            drop.add(i)
            stripped = line.lstrip()
            if rel == MEMORY_SUMMARY and stripped.startswith("- desc:") and i > 0 and lines[i - 1].startswith("- "):
                drop.add(i - 1)  # the topic line whose description points at the summary
        elif normalize_line(line) in keys:
            drop.add(i)
    return sorted(drop)


def scrub_text(rel: str, text: str, marks: set[str], keys: set[str]) -> str:
    drop = set(derived_line_numbers(rel, text, marks, keys))
    if not drop:
        return text
    return "\n".join(line for i, line in enumerate(text.split("\n")) if i not in drop)


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
    own = _keys(f"{row[0]}\n{row[1]}") if row else set()
    others: set[str] = set()
    if own:
        for raw, summary in conn.execute(
            "SELECT raw_memory, rollout_summary FROM stage1_outputs WHERE thread_id != ?", (thread_id,)
        ):
            others |= _keys(f"{raw}\n{summary}") & own
    keys = own - others
    stems = _summary_stems(conn, root, thread_id)
    marks = {thread_id, *stems}
    lines: list[dict[str, Any]] = []
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        split = text.split("\n")
        for i in derived_line_numbers(rel, text, marks, keys):
            if split[i].strip():
                lines.append({"file": rel, "line": i + 1, "text": split[i]})
    return Lineage(
        thread_id=thread_id,
        summary_files=sorted(f"{ROLLOUT_SUMMARIES}/{s}.md" for s in stems),
        keys=sorted(keys),
        lines=lines,
    )


# ---- forget / undo ----------------------------------------------------------------------------------------


def forget(ctx: Context, thread_id: str, reason: str | None = None) -> ForgetResult:
    """Forget ``thread_id`` now (see the module docstring); the next Phase 2 run removes what was derived."""
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
        removed_files: list[str] = []
        for rel in found.summary_files:
            path = root / rel
            if path.is_file():
                path.unlink()
                removed_files.append(rel)
        conn.execute("BEGIN IMMEDIATE")
        try:
            removed = conn.execute("DELETE FROM stage1_outputs WHERE thread_id=?", (thread_id,)).rowcount > 0
            conn.execute("DELETE FROM jobs WHERE kind=? AND job_key=?", (STAGE1, thread_id))
            conn.execute("DELETE FROM job_runs WHERE kind=? AND job_key=?", (STAGE1, thread_id))
            conn.execute("UPDATE threads SET preview='', title=NULL WHERE id=?", (thread_id,))
            conn.execute(
                "DELETE FROM citation_entries WHERE event_key IN (SELECT key FROM citation_events WHERE thread_id=?)",
                (thread_id,),
            )
            conn.execute("DELETE FROM citation_events WHERE thread_id=?", (thread_id,))
            # the search index's copies of its messages (its stage-1 documents follow stage1_outputs by trigger)
            conn.execute("DELETE FROM search_docs WHERE source=? AND kind='message'", (thread_id,))
            conn.execute("DELETE FROM search_sources WHERE key=?", (f"thread:{thread_id}",))
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
                files_out=removed_files,
                reason=reason,
                tree=history.baseline_tree(root),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        rewritten, dropped = scrub_state(conn, {thread_id, *_stems_of(found)}, set(found.keys), thread_id)
        _purge_search(conn)
        history.checkpoint(conn)
    return ForgetResult(
        thread_id=thread_id,
        forgotten=True,
        decision=decision,
        removed_output=removed,
        removed_files=removed_files,
        lineage=found,
        snapshots_rewritten=rewritten,
        snapshots_dropped=dropped,
    )


def _purge_search(conn: sqlite3.Connection) -> None:
    """Deleted search documents leave the FTS5 segments too (issue 14's index keeps terms until merged)."""
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


def _stems_of(found: Lineage) -> set[str]:
    return {Path(f).stem for f in found.summary_files}


# ---- Phase 2 and the review ------------------------------------------------------------------------------


def pending(conn: sqlite3.Connection) -> list[Lineage]:
    """Forgotten rollouts whose derived text a Phase 2 run still has to remove."""
    rows = conn.execute(
        "SELECT contributed FROM forgotten_threads WHERE done_at IS NULL AND contributed IS NOT NULL"
        " ORDER BY forgotten_at, thread_id"
    ).fetchall()
    return [Lineage.model_validate_json(r[0]) for r in rows]


def claim_for_run(conn: sqlite3.Connection, run_id: int) -> None:
    conn.execute("UPDATE forgotten_threads SET run_id=? WHERE done_at IS NULL", (run_id,))


def scrub_workspace(conn: sqlite3.Connection, root: Path, write: Any) -> list[str]:
    """After the agent or the offline merge: remove every line still derived only from a forgotten rollout.
    ``write(rel, bytes)`` is the run's journal, so a reject undoes this too. Returns the files changed."""
    todo = pending(conn)
    if not todo:
        return []
    marks = {m for lin in todo for m in (lin.thread_id, *_stems_of(lin))}
    keys = {k for lin in todo for k in lin.keys}
    changed = []
    for rel in (MEMORY_MD, MEMORY_SUMMARY):
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        new = scrub_text(rel, text, marks, keys)
        if new != text:
            write(rel, new.encode("utf-8"))
            changed.append(rel)
    return changed


def scrub_state(
    conn: sqlite3.Connection, marks: set[str], keys: set[str], thread_id: str | None = None
) -> tuple[int, int]:
    """Rewrite the history snapshots and drop the rejected hunks and old run records that hold the rollout's
    text. Returns (snapshots rewritten, snapshots dropped)."""
    rewritten = dropped = 0
    for decision_id, files in list(history.snapshots(conn)):
        new = {rel: scrub_text(rel, text, marks, keys) for rel, text in files.items()}
        if new == files:
            continue
        if any(_holds(text, marks, keys) for text in new.values()):
            history.drop_snapshots(conn, [decision_id])
            dropped += 1
        else:
            data, raw = history._pack(new)
            conn.execute(
                "UPDATE history_snapshots SET data=?, raw_bytes=? WHERE decision_id=?", (data, raw, decision_id)
            )
            rewritten += 1
    for hid, text, added, threads in conn.execute("SELECT id, text, added, thread_ids FROM rejected_hunks").fetchall():
        lines = json.loads(added or "[]")
        if (
            (thread_id and thread_id in json.loads(threads or "[]"))
            or _holds(text, marks, set())
            or any(normalize_line(line) in keys for line in lines)
        ):
            conn.execute("DELETE FROM rejected_hunks WHERE id=?", (hid,))
    for run_id, *texts in conn.execute(
        "SELECT id, diff, input_diff, pre_snapshot FROM phase2_runs WHERE status != 'awaiting_review'"
        " AND (diff IS NOT NULL OR input_diff IS NOT NULL OR pre_snapshot IS NOT NULL)"
    ).fetchall():
        if any(t and _holds(t, marks, keys, diff=True) for t in texts):
            conn.execute("UPDATE phase2_runs SET diff=NULL, input_diff=NULL, pre_snapshot=NULL WHERE id=?", (run_id,))
    return rewritten, dropped


def _holds(text: str, marks: set[str], keys: set[str], *, diff: bool = False) -> bool:
    if any(m in text for m in marks):
        return True
    if not keys:
        return False
    for line in text.split("\n"):
        if diff and line[:1] in "+- ":
            line = line[1:]
        if normalize_line(line) in keys:
            return True
    return False


def finish_after_approval(ctx: Context, run_id: int) -> int:
    """The run that removed the forgotten rollouts' derived text is approved: scrub what is left, drop lineage."""
    conn = ctx.conn
    rows = conn.execute(
        "SELECT thread_id, contributed FROM forgotten_threads WHERE run_id=? AND done_at IS NULL", (run_id,)
    ).fetchall()
    if not rows:
        return 0
    lins = [Lineage.model_validate_json(r[1]) for r in rows if r[1]]
    marks = {m for lin in lins for m in (lin.thread_id, *_stems_of(lin))}
    keys = {k for lin in lins for k in lin.keys}
    for lin in lins:
        scrub_state(conn, marks, keys, lin.thread_id)
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
