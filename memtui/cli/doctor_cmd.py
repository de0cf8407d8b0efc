"""``memtui doctor``: check the home and recover from a broken state database."""

from __future__ import annotations

import argparse
import sys

from memtui import clock
from memtui.cli.common import make_context
from memtui.state.db import StateError, connect


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the home; --reset-state moves a broken database aside")
    p.add_argument("--reset-state", action="store_true", help="move state.sqlite aside and start a new one")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context(read_only=not args.reset_state)
    db = ctx.paths.state_db
    if args.reset_state:
        if db.exists():
            aside = db.with_name(f"state.sqlite.broken-{clock.now_s()}")
            db.rename(aside)
            for suffix in ("-wal", "-shm"):
                side = db.with_name(db.name + suffix)
                if side.exists():
                    side.rename(aside.with_name(aside.name + suffix))
            print(f"moved {db} to {aside}; run `memtui ingest` to rebuild the index")
        connect(db).close()
        return 0
    try:
        connect(db).close()
    except StateError as exc:
        print(f"state: {exc}", file=sys.stderr)
        return 2
    print(f"state: ok ({db})")
    return 0
