"""``memtui doctor``: check the home and recover from a broken state database."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from memtui.cli import COMMANDS
from memtui.cli.common import make_context
from memtui.core import clock
from memtui.state.db import StateError, connect

# What a reset drops, in a person's words (tables of the store registry; the others are rebuilt by ingest/Phase 1)
_DROPPED = {
    "history_snapshots": "kept history version(s)",
    "decisions": "decision record(s)",
    "rejected_hunks": "left-out hunk(s) (the next runs may propose them again)",
    "phase2_runs": "Phase 2 run record(s)",
    "stage1_outputs": "stage-1 output(s) (Phase 1 extracts them again)",
    "citation_events": "citation record(s) (counted again by ingest)",
    "batch_submissions": "batch submission(s) (open batches are no longer collected)",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help=COMMANDS["doctor"])
    p.add_argument(
        "--reset-state",
        action="store_true",
        help="move state.sqlite aside and start a new one, keeping forget marks, tombstones and your lines",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="with --reset-state: reset without asking (needed when stdin is not a terminal)",
    )
    p.set_defaults(func=run)


def _read_old(db: Path) -> tuple[dict[str, list[tuple]], dict[str, int], str | None]:
    """Rows of the tables a reset carries over, row counts of the rest, or why the old database cannot be read."""
    from memtui.services import stores

    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        return {}, {}, str(exc)
    try:
        carried = stores.read_carried(conn)
        try:
            counts = stores.holders(stores.Env(conn))
        except sqlite3.DatabaseError as exc:
            return carried, {}, str(exc)
        problem = None if carried or counts else "no table could be read"
        return carried, counts, problem
    except sqlite3.DatabaseError as exc:
        return {}, {}, str(exc)
    finally:
        conn.close()


def reset_state(db: Path, *, ask: bool) -> int:
    """Move a broken database aside and start a new one. ``ask``: confirm on a terminal first; with no terminal to
    ask on, refuse (``--yes`` says to go ahead). A move that fails puts back what it moved and says why."""
    if not db.exists():
        connect(db).close()
        print(f"no state database at {db}: created a new one")
        return 0
    carried, counts, problem = _read_old(db)
    marks, tombs, mine = (len(carried.get(t, [])) for t in ("forgotten_threads", "tombstones", "person_lines"))
    if problem and not carried:
        print(
            f"the old database cannot be read ({problem}): no forget mark can be carried over, so a rollout you "
            "forgot may be extracted again; forget it again after `memtui ingest`"
        )
    else:
        print(
            f"keeps: {marks} forget mark(s) (forgotten rollouts stay forgotten), {tombs} tombstone(s), "
            f"{mine} line(s) marked as yours"
        )
    dropped = [f"{counts[t]} {what}" for t, what in _DROPPED.items() if counts.get(t)]
    print("drops (still readable in the set-aside copy): " + ("; ".join(dropped) or "nothing else of note"))
    if ask and not sys.stdin.isatty():
        print(
            "memtui doctor: nothing changed: --reset-state asks before it moves the database aside, and there is "
            "no terminal to ask on; run `memtui doctor --reset-state --yes` to reset without asking",
            file=sys.stderr,
        )
        return 1
    if ask and input("reset the state database? [y/N] ").strip().lower() not in ("y", "yes"):
        print("nothing changed")
        return 1
    aside = db.with_name(f"state.sqlite.broken-{clock.now_s()}")
    try:
        moved = _move_aside(db, aside)
    except OSError as exc:
        print(
            f"memtui doctor: nothing changed: could not move {db} aside ({exc.strerror or exc}); "
            f"make {db.parent} writable and run it again",
            file=sys.stderr,
        )
        return 2
    from memtui.services import stores

    try:
        conn = connect(db)
    except StateError as exc:
        _put_back(moved)
        print(f"memtui doctor: nothing changed: the new database could not be made ({exc})", file=sys.stderr)
        return 2
    try:
        stores.carry(conn, carried)
    finally:
        conn.close()
    print(f"moved {db} to {aside}; run `memtui ingest` to rebuild the index")
    return 0


def _move_aside(db: Path, aside: Path) -> list[tuple[Path, Path]]:
    """Rename the database and its -wal and -shm to ``aside``; on a failure, what was moved goes back first."""
    moved: list[tuple[Path, Path]] = []
    try:
        for suffix in ("", "-wal", "-shm"):
            side = db.with_name(db.name + suffix)
            if suffix and not side.exists():
                continue
            target = aside.with_name(aside.name + suffix)
            side.rename(target)
            moved.append((side, target))
    except OSError:
        _put_back(moved)
        raise
    return moved


def _put_back(moved: list[tuple[Path, Path]]) -> None:
    for original, target in reversed(moved):
        if not original.exists():
            target.rename(original)


def run(args: argparse.Namespace) -> int:
    ctx = make_context()
    ctx.open_home()  # a missing or read-only home is said so (and exits 2) before anything is read or moved
    db = ctx.paths.state_db
    if args.reset_state:
        return reset_state(db, ask=not args.yes)
    try:
        connect(db).close()
    except StateError as exc:
        print(f"state: {exc}", file=sys.stderr)
        return 2
    print(f"state: ok ({db})")
    return 0
