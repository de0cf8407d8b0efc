"""Run a command under an artificial CPU load, as CI's shared two-core machine gives the suite.

    python -m tests.support.load --procs 10 -- .venv/bin/python -m pytest tests/test_phase2_processes.py -q

Starts ``--procs`` busy-loop processes at normal priority (the load competes as CI's does), each ending by itself
after ``--seconds`` however this script ends, waits ``--warmup`` seconds for the load average to climb, runs the
command, kills the hogs it started (by pid) and prints the load averages before, during and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

HOG = "import time\nend = time.monotonic() + float({seconds})\nwhile time.monotonic() < end:\n    pass\n"


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=10, help="busy-loop processes")
    parser.add_argument("--seconds", type=float, default=1800, help="each hog ends by itself after this long")
    parser.add_argument("--warmup", type=float, default=60, help="seconds of load before the command starts")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    print(f"load: before {loadavg()}", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG.format(seconds=args.seconds)]) for _ in range(args.procs)]
    try:
        time.sleep(args.warmup)
        print(f"load: {args.procs} hogs, command starts at {loadavg()}", flush=True)
        samples: list[float] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(5):
                samples.append(os.getloadavg()[0])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = subprocess.call(command)
        done.set()
        sampler.join()
        spread = f"; 1-min load while it ran: min {min(samples):.2f}, max {max(samples):.2f}" if samples else ""
        print(f"load: command ended ({code}) at {loadavg()}{spread}", flush=True)
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
    return code


if __name__ == "__main__":
    sys.exit(main())
