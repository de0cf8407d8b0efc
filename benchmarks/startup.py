"""Start-up of memtui's commands against a bare interpreter, and ``memtui review show`` against ``git status``.

    .venv/bin/python benchmarks/startup.py [--repeat 9] [--no-every-command]

Builds the demo home (``memtui demo --no-tui``: a consolidation awaiting review) in a throwaway folder, then times,
in alternated rounds (each round runs every case once, so a change in the machine's load hits all alike), each as
a fresh process from spawn to exit:

- ``python -c pass``: the bare interpreter, what every command pays anyway;
- ``memtui --help``, ``memtui status``, ``memtui review show`` (the run's diff) on the demo home;
- ``git status`` of the demo's memory root, the yardstick for ``review show`` (a diff of the same tree);
- ``memtui <command> --help`` for every command: what starting that command's own path costs (its module and the
  imports it needs to parse its flags); ``--no-every-command`` leaves these out.

Printed: median wall seconds and child CPU seconds per case, each command minus the bare interpreter and
``review show`` over ``git status``, measured in the same run, with the goals (within 0.3 s of the bare
interpreter; ``review show`` within 20x ``git status``). Bytecode caches are written by a first, untimed round
(``PYTHONDONTWRITEBYTECODE`` is dropped): a person's installed memtui starts from them too.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figure, code_root, emit

ROOT = code_root()
OVER_BARE_GOAL = 0.3  # seconds a command may add to the bare interpreter
OVER_GIT_GOAL = 20.0  # review show against one git status of the same root


def commands() -> list[str]:
    """The commands of the measured code (an older layout listed them in a list, the newer in a dict)."""
    from memtui.cli import COMMANDS

    return list(COMMANDS)


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) for one process from spawn to exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-every-command", action="store_true", help="leave out `memtui <command> --help`")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="memtui-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("MEMTUI_")}
        env.update(
            HOME=tmp,
            CODEX_HOME=os.path.join(tmp, "codex"),
            CLAUDE_CONFIG_DIR=os.path.join(tmp, "claude"),
            PYTHONPATH=str(ROOT),
        )
        subprocess.run(
            [py, "-m", "memtui", "demo", "--dir", os.path.join(tmp, "demo"), "--no-tui"],
            env=env,
            cwd=tmp,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        home = Path(tmp, "demo", "home")
        env["MEMTUI_HOME"] = str(home)
        memtui = [py, "-m", "memtui"]
        cases: dict[str, list[str]] = {
            "bare": [py, "-c", "pass"],
            "git status": ["git", "-C", str(home / "memories"), "status"],
            "--help": [*memtui, "--help"],
            "status": [*memtui, "status"],
            "review show": [*memtui, "review", "show"],
        }
        if not args.no_every_command:
            cases.update({f"{name} --help": [*memtui, name, "--help"] for name in commands()})
        for argv in cases.values():  # untimed: writes the bytecode caches, warms the page cache
            run_once(argv, env, tmp)
        load_before = os.getloadavg()[0]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, argv in cases.items():
                times[name].append(run_once(argv, env, tmp))
        load_after = os.getloadavg()[0]
    wall = {name: statistics.median(t[0] for t in runs) for name, runs in times.items()}
    cpu = {name: statistics.median(t[1] for t in runs) for name, runs in times.items()}
    bare, git = wall["bare"], wall["git status"]
    print(f"medians of {args.repeat} alternated runs each (wall s, child CPU s):")
    print(f"  {'python -c pass':28} {bare:7.3f}  cpu {cpu['bare']:.3f}")
    print(f"  {'git status (memory root)':28} {git:7.3f}  cpu {cpu['git status']:.3f}")
    slowest = ("", 0.0)
    for name in cases:
        if name in ("bare", "git status"):
            continue
        over = wall[name] - bare
        slowest = max(slowest, (name, over), key=lambda x: x[1])
        mark = "" if over <= OVER_BARE_GOAL else f"  (over the {OVER_BARE_GOAL} s goal)"
        print(f"  memtui {name:21} {wall[name]:7.3f}  cpu {cpu[name]:.3f}  bare + {over:.3f} s{mark}")
    review_over_git = wall["review show"] / git
    print(f"review show / git status: {review_over_git:.1f}x (goal <= {OVER_GIT_GOAL:.0f}x)")
    print(f"slowest over the bare interpreter: memtui {slowest[0]} + {slowest[1]:.3f} s (goal <= {OVER_BARE_GOAL} s)")
    print(f"load average: {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} cores")
    emit(
        "startup",
        {
            "bare": Figure(round(bare, 4), "s", "none"),
            "git_status": Figure(round(git, 4), "s", "none"),
            "help_over_bare": Figure(round(wall["--help"] - bare, 4), "s"),
            "status_over_bare": Figure(round(wall["status"] - bare, 4), "s"),
            "review_show_over_bare": Figure(round(wall["review show"] - bare, 4), "s"),
            "review_show_over_git_status": Figure(round(review_over_git, 2), "x git status"),
            "slowest_command_over_bare": Figure(round(slowest[1], 4), "s"),
        },
    )


if __name__ == "__main__":
    main()
