"""``memtui demo``: a fresh demo home from the bundled samples, processed offline, opened in the UI."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from memtui.cli import COMMANDS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help=COMMANDS["demo"])
    p.add_argument("--dir", type=Path, help="where to build it (default: a new temporary folder)")
    p.add_argument("--no-tui", action="store_true", help="build and print the status, do not open the UI")
    p.set_defaults(func=run)


def _memtui_command() -> str:
    """How to start memtui again from any shell: this very executable, so it works without the venv on PATH."""
    exe = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if exe is not None and exe.name == "memtui" and exe.exists():
        return shlex.quote(str(exe.resolve()))
    return f"{shlex.quote(sys.executable)} -m memtui"


def run(args: argparse.Namespace) -> int:
    from memtui.demo.build import build_demo_home
    from memtui.domain.labels import PHASE2_STATUS, SKIP_REASON, counts, label

    demo = build_demo_home(args.dir)
    os.environ["MEMTUI_HOME"] = str(demo.home)
    st, p1, p2 = demo.status, demo.phase1, demo.phase2
    skipped = counts(st.skipped_files_by_reason) or "none"
    changed = ", ".join(f"{status} {path}" for status, path in p2.stat) if p2.stat else "nothing"
    lines = [
        f"demo home   {demo.home}",
        f"ingest      {st.threads} rollouts indexed; files skipped: {skipped}; "
        f"{st.citations} citation{'s' if st.citations != 1 else ''} counted",
        f"phase 1     offline: {p1.succeeded} memories, {p1.noop} no-op, {p1.failed} failed; "
        f"{sum(p1.redactions.values())} secrets redacted; not eligible: {counts(p1.skipped, SKIP_REASON) or 'none'}",
        f"phase 2     offline: {label(p2.outcome, PHASE2_STATUS)} (run {p2.run_id}): {changed}",
        f"Open it again later with: MEMTUI_HOME={shlex.quote(str(demo.home))} {_memtui_command()}",
    ]
    if args.no_tui:
        print("\n".join(lines))
        return 0
    from memtui.tui.launch import launch

    code = launch(demo.home)
    print("\n".join(lines))  # after the UI, so nothing is left printed under it
    return code
