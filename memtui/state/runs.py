"""The ``phase2_runs`` table: every Phase 2 run (a consolidation or a restore), its review state and, until it is
decided, the text it produced (diffs, the pre-run snapshot). The only module that writes SQL against it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

_TEXT_LEFT = "(diff IS NOT NULL OR input_diff IS NOT NULL OR pre_snapshot IS NOT NULL)"


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
    kind: str = "consolidation"  # consolidation | restore (a past version brought back through review)
    restore_of: int | None = None
    trust_report: dict[str, Any] = {}  # what enforcing trust did (``trust.enforce.RunTrust``): hidden text per line
    # what remembered rejections did to the run (``review.decide.Acted``: rejection ids, files, key hashes; no text)
    rejections_acted: list[dict[str, Any]] = []

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Phase2Run:
        d: dict[str, Any] = dict(row)
        d["selected"] = [tuple(x) for x in json.loads(d.get("selected") or "[]")]
        d["stat"] = [tuple(x) for x in json.loads(d.get("stat") or "[]")]
        d["included_changes"] = [tuple(x) for x in json.loads(d.get("included_changes") or "[]")]
        d["reviewed_files"] = json.loads(d.get("reviewed_files") or "{}")
        d["trust_report"] = json.loads(d.get("trust_report") or "{}")
        d["rejections_acted"] = json.loads(d.get("rejections_acted") or "[]")
        d["diff"] = d.get("diff") or ""
        d["input_diff"] = d.get("input_diff") or ""
        d.pop("pre_snapshot", None)
        d.pop("prompt_tokens", None)
        d.pop("completion_tokens", None)
        return cls(**d)


def _run(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> Phase2Run | None:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row  # by name, whatever the connection's factory
    row = cur.execute(sql, args).fetchone()
    return Phase2Run.from_row(row) if row else None


# ---- reading ------------------------------------------------------------------------------------------------------


def get(conn: sqlite3.Connection, run_id: int) -> Phase2Run | None:
    return _run(conn, "SELECT * FROM phase2_runs WHERE id=?", (run_id,))


def pending(conn: sqlite3.Connection) -> Phase2Run | None:
    """The run awaiting a decision, if any (at most one: an awaiting run blocks new runs)."""
    return _run(conn, "SELECT * FROM phase2_runs WHERE status='awaiting_review' ORDER BY id DESC LIMIT 1")


def pending_or_latest(conn: sqlite3.Connection) -> Phase2Run | None:
    """The run awaiting review, else the latest run (so a screen can say what happened)."""
    return _run(conn, "SELECT * FROM phase2_runs ORDER BY status = 'awaiting_review' DESC, id DESC LIMIT 1")


def pending_id(conn: sqlite3.Connection) -> int | None:
    row = conn.execute("SELECT id FROM phase2_runs WHERE status='awaiting_review' ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else int(row[0])


def any_pending(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM phase2_runs WHERE status='awaiting_review' LIMIT 1").fetchone() is not None


@dataclass(frozen=True)
class LastRun:
    id: int
    status: str
    reason: str | None


def last(conn: sqlite3.Connection) -> LastRun | None:
    row = conn.execute("SELECT id, status, reason FROM phase2_runs ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else LastRun(int(row[0]), row[1], row[2])


# The runs after which a memory counts as consolidated: a person approved what the run made of it, or the run found
# the memory already as it would make it. A rejected, failed or restore run does not count.
_CONSOLIDATED = "kind = 'consolidation' AND status IN ('approved', 'no_changes')"


def last_consolidated_at(conn: sqlite3.Connection) -> int:
    """When the last consolidation read its selection (its ``started_at``), 0 before the first: retention leaves
    every memory made since, which no consolidation has had the chance to take."""
    row = conn.execute(f"SELECT started_at FROM phase2_runs WHERE {_CONSOLIDATED} ORDER BY id DESC LIMIT 1").fetchone()
    return 0 if row is None else int(row[0])


def running_ids(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT id FROM phase2_runs WHERE status='running'")]


def any_running(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM phase2_runs WHERE status='running' LIMIT 1").fetchone() is not None


_DECIDED_WITH_TEXT = f"SELECT id FROM phase2_runs WHERE status IN ('approved', 'rejected', 'failed') AND {_TEXT_LEFT}"


def decided_with_text(conn: sqlite3.Connection) -> list[int]:
    """Decided runs that still hold memory text (a decision killed before it dropped it)."""
    return [int(r[0]) for r in conn.execute(_DECIDED_WITH_TEXT).fetchall()]


def any_decided_with_text(conn: sqlite3.Connection) -> bool:
    return conn.execute(_DECIDED_WITH_TEXT + " LIMIT 1").fetchone() is not None


def pre_snapshot(conn: sqlite3.Connection, run_id: int) -> dict[str, Any]:
    """The journal's pre-run content of the files the run wrote ({} when none or dropped)."""
    row = conn.execute("SELECT pre_snapshot FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    return json.loads(row[0]) if row and row[0] else {}


@dataclass(frozen=True)
class RejectedRun:
    id: int
    reason: str | None
    stat: str | None  # JSON [[status, path]]
    written_files: str | None  # JSON [path], kept when decided
    pre_snapshot: str | None


def rejected_since_last_approval(conn: sqlite3.Connection) -> list[RejectedRun]:
    """Rejected runs decided after the last approved one, newest first."""
    last_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM phase2_runs WHERE status='approved'").fetchone()[0]
    rows = conn.execute(
        "SELECT id, reason, stat, written_files, pre_snapshot FROM phase2_runs WHERE status='rejected' AND id > ?"
        " ORDER BY id DESC",
        (last_id,),
    ).fetchall()
    return [RejectedRun(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows]


def health_drops(conn: sqlite3.Connection, run_id: int) -> set[str]:
    row = conn.execute("SELECT health_drops FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    return set(json.loads(row[0])) if row and row[0] else set()


# ---- writing ------------------------------------------------------------------------------------------------------


def insert_no_changes(
    conn: sqlite3.Connection,
    now: int,
    offline: bool,
    base: str | None,
    claimed: int | None,
    new_watermark: int,
    *,
    started_at: int | None = None,
) -> int:
    cur = conn.execute(
        # selected stays NULL: the flags in stage1_outputs hold it, and thousands of no-change rows must stay small
        "INSERT INTO phase2_runs (status, started_at, finished_at, offline, baseline_commit, claimed_watermark,"
        " new_watermark, selected) VALUES ('no_changes', ?, ?, ?, ?, ?, ?, ?)",
        (now if started_at is None else started_at, now, int(offline), base, claimed, new_watermark, None),
    )
    return int(cur.lastrowid or 0)


def insert_running(
    conn: sqlite3.Connection,
    *,
    started_at: int,
    offline: bool,
    model: str | None,
    base: str | None,
    claimed: int | None,
    new_watermark: int,
    selected: list[Any],
    input_diff: str,
) -> int:
    cur = conn.execute(
        "INSERT INTO phase2_runs (status, started_at, offline, model, baseline_commit, claimed_watermark,"
        " new_watermark, selected, input_diff, pre_snapshot) VALUES ('running', ?, ?, ?, ?, ?, ?, ?, ?, '{}')",
        (started_at, int(offline), model, base, claimed, new_watermark, json.dumps(selected), input_diff),
    )
    return int(cur.lastrowid or 0)


def set_rejections_acted(conn: sqlite3.Connection, run_id: int, acted: list[dict[str, Any]]) -> None:
    """What remembered rejections did to the run, for its review (ids and hashes, no memory text)."""
    conn.execute("UPDATE phase2_runs SET rejections_acted=? WHERE id=?", (json.dumps(acted), run_id))


def set_model(conn: sqlite3.Connection, run_id: int, model: str) -> None:
    """The model the agent really used, once its run said (the row starts with the one asked for)."""
    conn.execute("UPDATE phase2_runs SET model=? WHERE id=?", (model, run_id))


def insert_restore(
    conn: sqlite3.Connection,
    *,
    decision_id: int,
    now: int,
    base: str | None,
    tree: str,
    files: dict[str, str],
    added: int,
    removed: int,
) -> int:
    cur = conn.execute(
        "INSERT INTO phase2_runs (status, kind, restore_of, started_at, offline, baseline_commit, selected,"
        " pre_snapshot, reason, reviewed_tree, reviewed_files, lines_added, lines_removed)"
        " VALUES ('running', 'restore', ?, ?, 1, ?, '[]', '{}', ?, ?, ?, ?, ?)",
        (decision_id, now, base, f"restore of version {decision_id}", tree, json.dumps(files), added, removed),
    )
    return int(cur.lastrowid or 0)


def save_pre_snapshot(conn: sqlite3.Connection, run_id: int, pre: dict[str, Any]) -> None:
    conn.execute("UPDATE phase2_runs SET pre_snapshot=? WHERE id=?", (json.dumps(pre), run_id))


def finish_restore(conn: sqlite3.Connection, run_id: int, now: int, diff: str, stat: list[Any]) -> None:
    conn.execute(
        "UPDATE phase2_runs SET status='awaiting_review', finished_at=?, diff=?, stat=? WHERE id=?",
        (now, diff, json.dumps(stat), run_id),
    )


@dataclass(frozen=True)
class Produced:
    """What a consolidation run produced, recorded when it starts awaiting review."""

    finished_at: int
    diff: str
    stat: list[Any]
    pre: dict[str, Any]
    turns: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    tree: str
    files: dict[str, str]
    added: int
    removed: int
    trust_report: dict[str, Any]


def finish_awaiting_review(conn: sqlite3.Connection, run_id: int, p: Produced) -> None:
    conn.execute(
        "UPDATE phase2_runs SET status='awaiting_review', finished_at=?, diff=?, stat=?, pre_snapshot=?, turns=?,"
        " prompt_tokens=?, completion_tokens=?, reviewed_tree=?, reviewed_files=?, lines_added=?,"
        " lines_removed=?, trust_report=? WHERE id=?",
        (
            p.finished_at,
            p.diff,
            json.dumps(p.stat),
            json.dumps(p.pre),
            p.turns,
            p.prompt_tokens,
            p.completion_tokens,
            p.tree,
            json.dumps(p.files),
            p.added,
            p.removed,
            json.dumps(p.trust_report),
            run_id,
        ),
    )


def finish_failed(conn: sqlite3.Connection, run_id: int, status: str, now: int, reason: str, turns: int | None) -> None:
    conn.execute(
        "UPDATE phase2_runs SET status=?, finished_at=?, reason=?, turns=? WHERE id=?",
        (status, now, reason, turns, run_id),
    )


def mark_interrupted(conn: sqlite3.Connection, run_id: int, now: int, why: str, note: str) -> None:
    conn.execute(
        "UPDATE phase2_runs SET status='failed', finished_at=?,"
        " reason=COALESCE(reason || '; undone by the next run', ?) || ? WHERE id=?",
        (now, why, note, run_id),
    )


def mark_approved(conn: sqlite3.Connection, run_id: int, now: int, commit: str, changed: list[Any] | None) -> None:
    conn.execute(
        "UPDATE phase2_runs SET status='approved', decided_at=?, new_commit=?, included_changes=? WHERE id=?",
        (now, commit, json.dumps(changed) if changed else None, run_id),
    )


def mark_rejected(conn: sqlite3.Connection, run_id: int, now: int, reason: str | None) -> None:
    conn.execute("UPDATE phase2_runs SET status='rejected', decided_at=?, reason=? WHERE id=?", (now, reason, run_id))


def set_health_drops(conn: sqlite3.Connection, run_id: int, hashes: list[str]) -> None:
    conn.execute("UPDATE phase2_runs SET health_drops=? WHERE id=?", (json.dumps(hashes), run_id))


def drop_content(conn: sqlite3.Connection, run_id: int) -> None:
    """A decided run keeps file lists and counts: its diffs and pre-run snapshot go; the files it wrote stay named."""
    row = conn.execute("SELECT pre_snapshot FROM phase2_runs WHERE id=?", (run_id,)).fetchone()
    written = sorted(json.loads(row[0])) if row and row[0] and row[0] != "null" else []
    conn.execute(
        "UPDATE phase2_runs SET diff=NULL, input_diff=NULL, pre_snapshot=NULL, reviewed_files=NULL,"
        " written_files=? WHERE id=?",
        (json.dumps(written), run_id),
    )


# ---- forgetting ---------------------------------------------------------------------------------------------------

_NAME_COLUMNS = ("stat", "reviewed_files", "included_changes", "written_files", "reason", "diff", "input_diff")


def forget(conn: sqlite3.Connection, holds: Any, rename: Any) -> int:
    """Decided runs whose stored text ``holds`` a forgotten rollout's lines drop that text; every name column is
    passed through ``rename`` (summary stems carry a rollout's words). Returns the rows changed."""
    n = 0
    for run_id, *texts in conn.execute(
        f"SELECT id, diff, input_diff, pre_snapshot FROM phase2_runs WHERE status != 'awaiting_review' AND {_TEXT_LEFT}"
    ).fetchall():
        if any(x and holds(x) for x in texts):
            conn.execute("UPDATE phase2_runs SET diff=NULL, input_diff=NULL, pre_snapshot=NULL WHERE id=?", (run_id,))
            n += 1
    cols = (*_NAME_COLUMNS, "trust_report")
    for row in conn.execute(f"SELECT id, {', '.join(cols)} FROM phase2_runs").fetchall():
        values = [rename(v) if isinstance(v, str) else v for v in row[1:]]
        if values != list(row[1:]):
            conn.execute(f"UPDATE phase2_runs SET {', '.join(f'{c}=?' for c in cols)} WHERE id=?", (*values, row[0]))
            n += 1
    return n
