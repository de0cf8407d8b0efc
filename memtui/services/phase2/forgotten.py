"""Phase 2's part of forgetting: what a forgotten rollout contributed, carried by the next run until a person
approves it.

``memtui forget`` (``memtui.services.forget``) marks a rollout and records its lineage; the next Phase 2 run claims the
pending removals, tells the agent, scrubs what is left, and the decision that ends it finishes (or releases) them
here (``memtui.services.review.after``). The review and the run import this module, never the forget command, so the command
may go through the review's gate (recovery, the run awaiting review) without an import circle.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY
from memtui.core import clock
from memtui.services import history, search, stores
from memtui.services.context import Context
from memtui.services.stores import Env, Target, plan_lines, scrub_text
from memtui.state import forgotten as marks
from memtui.state import person_lines


class DerivedLine(BaseModel):
    """A line of a memory file derived only from the forgotten rollout: removed by the next Phase 2 run."""

    file: str
    line: int  # 1-based
    text: str


class LineRef(BaseModel):
    """A person's line that mentions the forgotten rollout: named, never removed."""

    file: str
    line: int  # 1-based


class Lineage(BaseModel):
    """What a rollout contributed, as far as memtui can tell."""

    thread_id: str
    summary_files: list[str] = []  # rollout_summaries/<stem>.md
    keys: list[str] = []  # normalised lines of its raw memory and summary that no other rollout has
    lines: list[DerivedLine] = []  # lines of the memory files derived only from it
    mentions: list[LineRef] = []  # a person's lines that mention it: theirs to decide

    def target(self, person: set[str] | frozenset[str] = frozenset()) -> Target:
        return Target(
            self.thread_id, frozenset(Path(f).stem for f in self.summary_files), frozenset(self.keys), frozenset(person)
        )


def purge_search(conn: sqlite3.Connection) -> None:
    """Deleted search documents leave the FTS5 segments too (the index keeps terms until merged)."""
    search.purge_deleted(conn, force=True)


def pending(conn: sqlite3.Connection) -> list[Lineage]:
    """Forgotten rollouts whose derived text a Phase 2 run still has to remove."""
    return [Lineage.model_validate_json(c) for c in marks.pending_lineages(conn)]


def pending_target(conn: sqlite3.Connection) -> Target | None:
    person = person_lines.hashes(conn)
    return stores.combine([lin.target(person) for lin in pending(conn)])


def claim_for_run(conn: sqlite3.Connection, run_id: int) -> None:
    marks.claim_for_run(conn, run_id)


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


def mentions(ctx: Context) -> list[LineRef]:
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
            out += [LineRef(file=rel, line=i + 1) for i in found]
    return out


def finish_after_approval(ctx: Context, run_id: int) -> int:
    """The run that removed the forgotten rollouts' derived text is approved: every store forgets again (history
    versions and left-out hunks written since), then the lineage is dropped."""
    conn = ctx.conn
    rows = marks.carried_by(conn, run_id)
    if not rows:
        return 0
    person = person_lines.hashes(conn)
    env = Env(conn, ctx.paths.home)
    for r in rows:
        if r.contributed:
            stores.forget_everywhere(env, Lineage.model_validate_json(r.contributed).target(person))
    marks.done_with_run(conn, run_id, clock.now_s())
    search.try_refresh_memory_index(conn, ctx.paths.memory_root)  # the old MEMORY.md chunks leave the index
    purge_search(conn)
    history.checkpoint(conn)
    return len(rows)


def finish_without_changes(conn: sqlite3.Connection) -> None:
    """A Phase 2 run found nothing to change: nothing derived from a forgotten rollout is left in memory."""
    if marks.done_all(conn, clock.now_s()):
        history.checkpoint(conn)


def release_after_rejection(conn: sqlite3.Connection, run_id: int) -> None:
    """The removal was rejected: the next run carries it again."""
    marks.release_run(conn, run_id)


def is_forgotten(conn: sqlite3.Connection, thread_id: str) -> bool:
    return marks.is_forgotten(conn, thread_id)


def prompt_lines(conn: sqlite3.Connection) -> list[str]:
    """For the agent: each forgotten rollout still to be removed, and the memory lines derived from it."""
    out = []
    for lin in pending(conn):
        out.append(f"thread_id={lin.thread_id}; summary files: {', '.join(lin.summary_files) or 'none'}")
        out += [f"  {line.file}:{line.line}: {line.text.strip()}" for line in lin.lines[:40]]
    return out
