"""The long version of the reliability suite: the same tests of ``tests/reliability`` with soak-sized counts.

    .venv/bin/python benchmarks/soak.py            # 100 ingest, 300 Phase 1, 60 Phase 2 and 60 gate kill trials, 5,000 fuzz examples
    .venv/bin/python benchmarks/soak.py --phase1 50 --phase2 20 --fuzz 1000 --seed 11

It runs pytest on ``tests/reliability`` (``-n 2``) with RELIABILITY_* variables raising the counts, then prints one
line per area: trials run, faults injected and survived, bad inputs tried, secrets leaked, false-positive rate.
Exit status is pytest's: 0 only when every trial survived.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.reliability import figures  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ingest", type=int, default=100, help="ingest kill -9 trials")
    parser.add_argument("--phase1", type=int, default=300, help="Phase 1 kill -9 trials")
    parser.add_argument("--phase2", type=int, default=60, help="Phase 2 kill -9 trials")
    parser.add_argument("--gate", type=int, default=60, help="kill -9 trials across the gate (agents, decisions)")
    parser.add_argument("--fuzz", type=int, default=5000, help="hypothesis examples per fuzz test")
    parser.add_argument("--seed", type=int, default=7, help="seed of the trials' random choices")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memtui-soak-") as tmp:
        out = Path(tmp) / "figures.jsonl"
        # The soak explores: new hypothesis examples every run, whatever profile the calling shell (a CI) selects.
        env = {
            **{k: v for k, v in os.environ.items() if k != "CI"},
            "RELIABILITY_INGEST_TRIALS": str(args.ingest),
            "RELIABILITY_PHASE1_TRIALS": str(args.phase1),
            "RELIABILITY_PHASE2_TRIALS": str(args.phase2),
            "RELIABILITY_GATE_TRIALS": str(args.gate),
            "RELIABILITY_FUZZ_EXAMPLES": str(args.fuzz),
            "RELIABILITY_SEED": str(args.seed),
            "RELIABILITY_FIGURES_FILE": str(out),
        }
        started = time.perf_counter()
        cmd = [sys.executable, "-m", "pytest", "tests/reliability", "-q", "-n", args.workers, "-p", "no:cacheprovider"]
        code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        seconds = time.perf_counter() - started
        print(f"\nsoak: seed {args.seed}, {seconds:.0f} s wall, pytest exit {code}")
        for line in figures.lines(figures.collect(out)):
            print(line)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
