"""``memtui history``: the decisions made on the memory, each version's diff, restore (through review), purge."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help=COMMANDS["history"])
    p.add_argument("--json", action="store_true")
    actions = p.add_subparsers(dest="history_action", metavar="ACTION")
    show = actions.add_parser("show", help="version N's diff against the current baseline")
    show.add_argument("version", type=int)
    restore = actions.add_parser("restore", help="put version N's files in the workspace as a run awaiting review")
    restore.add_argument("version", type=int)
    restore.add_argument("--json", action="store_true")
    actions.add_parser("purge", help="drop every stored version (the audit records stay)")
    p.set_defaults(func=run, history_action=None)


def fmt_time(ts: int) -> str:
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%d %H:%M")


def _line(d: Any) -> str:
    what = d.kind.replace("_", " ")
    if d.run_id:
        what += f" run #{d.run_id}"
    if d.thread_id:
        what += f" {d.thread_id}"
    hunks = f"  hunks {len(d.hunks_in)} in / {len(d.hunks_out)} out" if d.hunks_in or d.hunks_out else ""
    files = f"  files {len(d.files_in)} in / {len(d.files_out)} out" if d.files_in or d.files_out else ""
    reason = f"  reason: {d.reason}" if d.reason else ""
    version = "version kept" if d.snapshot else "-"
    tree = (d.tree or "-")[:12]
    return f"{d.id:>4}  {fmt_time(d.at)}  {what:<34} tree {tree}  {version}{files}{hunks}{reason}\n"


def run(args: argparse.Namespace) -> int:
    from memtui.services import history
    from memtui.services.phase2 import restore

    ctx = make_context()
    try:
        action = args.history_action
        if action is None:
            decisions = history.list_decisions(ctx.conn)
            if args.json:
                print_json({"decisions": [d.model_dump(mode="json") for d in decisions]})
            else:
                sys.stdout.write("".join(_line(d) for d in decisions) or "(no decisions yet)\n")
            return 0
        if action == "show":
            diff = history.version_diff(ctx.conn, ctx.paths.memory_root, args.version)
            print(f"version {args.version} against the current baseline (what a restore would change)", file=sys.stderr)
            sys.stdout.write(diff or "(identical to the current baseline)\n")
            return 0
        if action == "restore":
            result = restore.restore_version(ctx, args.version)
            if getattr(args, "json", False):
                print_json(result.model_dump(mode="json"))
            else:
                print(result.message())
            return 0
        n = history.purge(ctx.conn)
        print(f"dropped {n} stored version(s); the audit records stay")
        return 0
    except history.HistoryError as exc:
        print(f"memtui history: {exc}", file=sys.stderr)
        return 1
    finally:
        ctx.close()
