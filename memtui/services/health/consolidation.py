"""What memory health tells the next Phase 2 run: binding inputs, and the lines the offline consolidator drops.

- a restated block: "the user restated this on DATE [thread T, item N]: make it more prominent";
- a contradicted block: "the user now says Y [thread T, item N]: update or remove X";
- a person's proposal (update or removal) from the Health screen or ``memtui health --propose-*``.

The offline consolidator cannot reword, so it applies what is decidable without a model: a contradicted block and
a proposed removal are dropped; the run records their hashes, and approving that removal bans them like a person's
deletion (``ban_approved_removals``: tombstones in the state database), so an approval keeps them out of later runs
and a rejection bans nothing, and among the selected raw memories a preference that a newer
memory of the same project contradicts is dropped (the newer one stays).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memtui.adapters.memroot.approved import approved
from memtui.adapters.memroot.files import MEMORY_MD
from memtui.core import clock
from memtui.domain.health import Relation
from memtui.services import search
from memtui.services.health import watermark
from memtui.services.health.blocks import Block
from memtui.services.health.rules import clauses, relate_message, statement_of
from memtui.services.health.signals import BlockHealth, HealthReport, compute_health
from memtui.state import runs, tombstones
from memtui.state.health import Proposal
from memtui.state.tombstones import line_hash, normalize_memory_line

MAX_LINES = 40


@dataclass
class HealthInputs:
    lines: list[str] = field(default_factory=list)  # binding inputs for the agent's prompt
    drop: dict[str, BlockHealth] = field(default_factory=dict)  # normalised line -> the block the offline run drops
    update_needs_model: list[BlockHealth] = field(default_factory=list)

    def asks_for_change(self, offline: bool) -> bool:
        """A contradiction or a person's proposal is work for a run even when no input changed (an update only
        for a model: the offline consolidator cannot reword)."""
        return bool(self.drop or (self.update_needs_model and not offline))


def _cite(thread_id: str, item: int) -> str:
    return f"[thread {thread_id} item {item}]"


def binding_inputs(
    conn: sqlite3.Connection, memory_root: Path, unused_days: int = 30, baseline_commit: str | None = None
) -> HealthInputs:
    """``baseline_commit`` (the approved baseline's commit) lets a run whose inputs are unchanged since a
    computation that bound nothing skip the scan (``watermark``); without it health is computed in full."""
    digest = None
    if baseline_commit is not None:
        search.ensure_index(conn)
        search.refresh_messages(conn)  # new user messages change the fingerprint
        search.purge_deleted(conn)
        if watermark.is_clean(conn, digest := watermark.fingerprint(conn, baseline_commit)):
            return HealthInputs()
    report = compute_health(conn, memory_root, unused_days=unused_days, refresh=digest is None)
    out = _inputs(report)
    if baseline_commit is not None:
        empty = not (out.lines or out.drop or out.update_needs_model)
        watermark.remember(conn, watermark.fingerprint(conn, baseline_commit) if empty else None)
    return out


def _inputs(report: HealthReport) -> HealthInputs:
    out = HealthInputs()
    for b in report.blocks:
        where = f"MEMORY.md line {b.line}: {b.text}"
        if b.proposal == Proposal.REMOVE:
            why = (
                f"; the user now says: {b.contradicted[-1].text!r} {_cite(b.contradicted[-1].thread_id, b.contradicted[-1].item)}"
                if b.contradicted
                else ""
            )
            out.lines.append(f"a person asks to remove {where}{why}. Remove it.")
            out.drop[normalize_memory_line(b.text)] = b
        elif b.contradicted:
            last = b.contradicted[-1]
            out.lines.append(
                f"the user now says {last.text!r} {_cite(last.thread_id, last.item)} on {clock.iso(last.at)[:10]}: "
                f"update or remove {where}"
            )
            out.drop[normalize_memory_line(b.text)] = b
        elif b.proposal == Proposal.UPDATE:
            out.lines.append(f"a person asks to update {where}: check it against the newest inputs and reword it.")
            out.update_needs_model.append(b)
        if b.restated and not b.contradicted and b.proposal != Proposal.REMOVE:
            last = b.restated[-1]
            out.lines.append(
                f"the user restated this on {clock.iso(last.at)[:10]} {_cite(last.thread_id, last.item)} "
                f"({len(b.restated)} session(s)): make it more prominent: {where}"
            )
    out.lines = out.lines[:MAX_LINES]
    return out


def superseded(memories: list[tuple[str | None, int, list[str]]]) -> set[str]:
    """Preference bullets (normalised) of older memories that a newer memory of the same project contradicts.

    ``memories``: (cwd, source_updated_at, preference bullets) per selected raw memory."""
    out: set[str] = set()
    for cwd, when, bullets in memories:
        for bullet in bullets:
            parts = clauses(statement_of(bullet))
            for other_cwd, other_when, other_bullets in memories:
                if other_cwd != cwd or other_when <= when:
                    continue
                if any(
                    r == Relation.CONTRADICTED for o in other_bullets for r, _ in relate_message(parts, statement_of(o))
                ):
                    out.add(normalize_memory_line(bullet))
                    break
    return out


__all__ = ["Block", "HealthInputs", "binding_inputs", "superseded"]


def record_drops(conn: sqlite3.Connection, run_id: int, drops: Mapping[str, object]) -> None:
    """The run was asked to remove these lines (normalised key -> block): keep their hashes, never their words."""
    if drops:
        runs.set_health_drops(conn, run_id, sorted(line_hash(k) for k in drops))


def asked_removals(conn: sqlite3.Connection, run_id: int) -> set[str]:
    """Hashes of the lines memory health asked run ``run_id`` to remove (``record_drops``)."""
    return runs.health_drops(conn, run_id)


def ban_approved_removals(conn: sqlite3.Connection, root: Path, run_id: int, before: str | None) -> int:
    """Lines memory health asked run ``run_id`` to remove that the approved change did remove: banned from later
    runs (a hunk left out keeps its line, and bans nothing). ``before``: the approved MEMORY.md the change replaced.
    Returns how many were new."""
    asked = asked_removals(conn, run_id)
    if not asked or before is None:
        return 0
    after = approved(root).read_text(MEMORY_MD) or ""
    still = {line_hash(x) for x in after.splitlines()}
    removed = [x for x in before.splitlines() if (h := line_hash(x)) in asked and h not in still]
    return tombstones.add(conn, [(MEMORY_MD, x) for x in removed])
