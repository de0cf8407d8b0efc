"""Write screenshots/*.svg of every screen, from the same fixture home and steps as the snapshot tests.

.venv/bin/python scripts/screenshots.py            # into screenshots/
.venv/bin/python scripts/screenshots.py --out DIR  # elsewhere
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memtui.core import clock  # noqa: E402
from tests.tui.conftest import SIZE, app_for  # noqa: E402
from tests.tui.homes import FROZEN_NOW, build_snapshot_home, pin_git_dates  # noqa: E402
from tests.tui.test_snapshots import CASES, steps  # noqa: E402

TITLES = {
    "rollouts": "memtui: rollouts",
    "rollouts_filtered": "memtui: rollouts filtered as you type",
    "rollout_detail": "memtui: a rollout, its memory and job history",
    "jobs": "memtui: jobs",
    "review": "memtui: consolidation review, hunk by hunk",
    "review_reject_dialog": "memtui: rejecting a consolidation",
    "review_evidence": "memtui: the evidence behind a hunk, one hunk left out",
    "review_partial_approve": "memtui: approving a consolidation in part",
    "review_approve_dialog": "memtui: approving a consolidation",
    "review_amend_dialog": "memtui: amending a hunk before approving",
    "memory_editing": "memtui: MEMORY.md in edit mode",
    "memory_commit_dialog": "memtui: committing your own edit",
    "memory_unsaved_dialog": "memtui: leaving the editor with unsaved changes",
    "evidence_jump": "memtui: from a hunk's evidence to the cited transcript item",
    "history": "memtui: the decision history and a past version's diff",
    "memory": "memtui: MEMORY.md editor",
    "citations": "memtui: citations and their validation",
    "citation_jump": "memtui: a citation jump to the cited lines",
    "help": "memtui: help",
    "task_log": "memtui: the task log",
    "health": "memtui: memory health, worst first, with what the user said since",
}
# Screens shot on the demo home rather than the fixture home (they need an approved memory and later sessions).
DEMO_CASES = {"health": steps("7")}


async def shoot(name: str, home: Path, out: Path) -> Path:
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        await {**CASES, **DEMO_CASES}[name](pilot)
        await pilot.pause()
        path = out / f"{name}.svg"
        path.write_text(app.export_screenshot(title=TITLES.get(name, "memtui")), encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["TEXTUAL_ANIMATIONS"] = "none"
    pin_git_dates()
    clock.freeze(FROZEN_NOW)
    with tempfile.TemporaryDirectory(prefix="memtui-shots-") as tmp:
        for name in CASES:
            os.environ["HOME"] = str(Path(tmp) / name)  # a fresh home per screen, as in the tests
            home = Path(tmp) / name / ".memtui"
            os.environ["MEMTUI_HOME"] = str(home)
            build_snapshot_home(home).close()
            print(asyncio.run(shoot(name, home, args.out)).relative_to(ROOT) if args.out.is_relative_to(ROOT) else name)
        from memtui.demo.build import build_demo_home

        for name in DEMO_CASES:
            os.environ["HOME"] = str(Path(tmp) / name)
            home = build_demo_home(Path(tmp) / name / "demo").home
            os.environ["MEMTUI_HOME"] = str(home)
            print(asyncio.run(shoot(name, home, args.out)).relative_to(ROOT) if args.out.is_relative_to(ROOT) else name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
