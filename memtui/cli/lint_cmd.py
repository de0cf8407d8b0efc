"""``memtui lint``: memory that would leak across projects (cross-project mentions, one-project "global"
preferences, task groups without applies_to), and untrusted statements (tool-only, possible injection, speaking for
the user without the user's words, hidden characters)."""

from __future__ import annotations

import argparse

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.services.lint import lint_memory


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lint", help=COMMANDS["lint"])
    p.add_argument("--json", action="store_true", help="a JSON list of findings")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context()
    findings = lint_memory(ctx.paths.memory_root, ctx.conn)
    if args.json:
        print_json([f.model_dump() for f in findings])
    else:
        for f in findings:
            print(f.format())
        print(f"{len(findings)} finding(s)" if findings else "no findings")
    return 1 if findings else 0
