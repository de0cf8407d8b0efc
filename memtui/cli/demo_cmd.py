"""``memtui demo``: a fresh demo home from the bundled samples, processed offline, opened in the UI."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build a demo home from bundled sample rollouts and open the UI on it")
    p.add_argument("--dir", type=Path, help="where to build it (default: a new temporary folder)")
    p.add_argument("--no-tui", action="store_true", help="build and print the status, do not open the UI")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtui.demo.build import build_demo_home

    demo = build_demo_home(args.dir)
    os.environ["MEMTUI_HOME"] = str(demo.home)
    st, p1, p2 = demo.status, demo.phase1, demo.phase2
    skipped = ", ".join(f"{n} {reason}" for reason, n in st["skipped_files_by_reason"].items()) or "none"
    print(f"demo home   {demo.home}")
    print(f"ingest      {st['threads']} rollouts indexed; files skipped: {skipped}; {st['citations']} citation counted")
    print(
        f"phase 1     offline: {p1.succeeded} memories, {p1.noop} no-op, {p1.failed} failed; "
        f"{sum(p1.redactions.values())} secrets redacted; not eligible: "
        + (", ".join(f"{n} {reason}" for reason, n in p1.skipped.items()) or "none")
    )
    changed = ", ".join(f"{status} {path}" for status, path in p2.stat) if p2.stat else "nothing"
    print(f"phase 2     offline: {p2.outcome.replace('_', ' ')} (run {p2.run_id}): {changed}")
    print(f"Open it again later with: MEMTUI_HOME={demo.home} memtui")
    if args.no_tui:
        return 0
    from memtui.tui.launch import launch

    return launch(demo.home)
