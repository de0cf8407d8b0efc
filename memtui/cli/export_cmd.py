"""``memtui export``: give the memory to agents (a prompt block, or a section of AGENTS.md / CLAUDE.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.cli.common import make_context
from memtui.export import loader_warnings, render_prompt, write_agents_md


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="hand the memory to agents: a prompt block or an AGENTS.md section")
    ex = p.add_subparsers(dest="export_command", metavar="WHAT", required=True)
    q = ex.add_parser("prompt", help="print the read-path instructions plus memory_summary.md")
    q.set_defaults(func=run_prompt)
    q = ex.add_parser("agents-md", help="write or refresh the memtui section of an AGENTS.md or CLAUDE.md")
    q.add_argument("path", type=Path, help="the AGENTS.md / CLAUDE.md to update (created if missing)")
    q.set_defaults(func=run_agents_md)


def _warn(root: Path, bytes_per_token: float) -> None:
    for warning in loader_warnings(root, bytes_per_token):
        print(f"memtui export: warning: {warning}", file=sys.stderr)


def run_prompt(args: argparse.Namespace) -> int:
    ctx = make_context()
    root, bpt = ctx.paths.memory_root, ctx.settings.bytes_per_token
    block = render_prompt(root, bpt)
    if block is None:
        print(f"memtui export: no memory summary at {root / 'memory_summary.md'}; nothing to export", file=sys.stderr)
        return 0
    _warn(root, bpt)
    sys.stdout.write(block if block.endswith("\n") else block + "\n")
    return 0


def run_agents_md(args: argparse.Namespace) -> int:
    ctx = make_context()
    root, bpt = ctx.paths.memory_root, ctx.settings.bytes_per_token
    block = render_prompt(root, bpt)
    if block is None:
        print(
            f"memtui export: no memory summary at {root / 'memory_summary.md'}; an existing memtui section is "
            f"emptied, nothing is added",
            file=sys.stderr,
        )
    else:
        _warn(root, bpt)
    outcome = write_agents_md(
        args.path, block, warn=lambda message: print(f"memtui export: warning: {message}", file=sys.stderr)
    )
    print(f"{outcome} {args.path}")
    return 0
