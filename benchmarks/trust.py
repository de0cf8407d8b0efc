"""Trust figures: the poisoning set (tests/fixtures/poisoning.py) through the whole flow, offline and with a loopback
stand-in that obeys every instruction it reads, and the demo's sample rollouts the same way.

    python benchmarks/trust.py [--json]

Prints, per path: attack success (injected instructions whose canary reaches what agents load, the export prompt,
the project block or an MCP read of any memory file, without a flag, over all attempts; goal 0), false flags
(statements Phase 1 stored for a benign look-alike, or for a demo rollout, flagged as possible injection, over all
such statements; goal at most 5 %), and hidden characters in everything exported (goal 0).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.poisoning import ATTACKS, BENIGN, run_flow
from tests.reliability.harness import IDLE, NOW, Home, frozen

PATHS = ("offline", "copy", "promote")


def _home(base: Path) -> Home:
    home = Home(base).make()
    home.memtui.chmod(0o700)
    return home


def _with_demo(home: Home) -> None:
    samples = resources.files("memtui.demo") / "rollouts"
    with resources.as_file(samples) as folder:
        shutil.copytree(Path(folder) / "codex", home.codex, dirs_exist_ok=True)
        shutil.copytree(Path(folder) / "claude", home.claude, dirs_exist_ok=True)


def measure(path: str, demo: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        home = _home(Path(tmp))
        if demo:
            _with_demo(home)
        with frozen(NOW):
            result = run_flow(home, path, [] if demo else ATTACKS + BENIGN, idle=IDLE)
    if demo:
        flagged = sum(n for k, n in result.flagged.items() if k.startswith("other:"))
        total = sum(n for k, n in result.statements.items() if k.startswith("other:"))
        return {
            "path": path,
            "set": "demo",
            "false_flags": flagged,
            "statements": total,
            "hidden_in_export": result.hidden_in_export,
            "phase2": result.outcome,
        }
    flagged, total = result.false_flags()
    return {
        "path": path,
        "set": "poisoning",
        "attacks": len(ATTACKS),
        "succeeded": len(result.succeeded),
        "succeeded_cases": result.succeeded,
        "false_flags": flagged,
        "statements": total,
        "hidden_in_export": result.hidden_in_export,
        "hidden_removed": result.hidden_removed,
        "phase2": result.outcome if result.outcome != "failed" else f"refused ({(result.reason or '')[:60]}...)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(p, demo) for demo in (False, True) for p in PATHS]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        rate = f"{r['false_flags']}/{r['statements']} = {100 * r['false_flags'] / max(1, r['statements']):.1f} %"
        if r["set"] == "poisoning":
            print(
                f"{r['path']:8} poisoning: attack success {r['succeeded']}/{r['attacks']} {r['succeeded_cases'] or ''}"
                f"; false flags on benign look-alikes {rate}; hidden characters exported {r['hidden_in_export']}"
                f" (removed {r['hidden_removed']}); Phase 2 {r['phase2']}"
            )
        else:
            print(
                f"{r['path']:8} demo:      false flags {rate}; hidden characters exported {r['hidden_in_export']};"
                f" Phase 2 {r['phase2']}"
            )
    bad = [
        r
        for r in rows
        if r.get("succeeded") or r["hidden_in_export"] or r["false_flags"] > 0.05 * max(1, r["statements"])
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
