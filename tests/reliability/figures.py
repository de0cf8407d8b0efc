"""The suite's figures: each test appends what it tried to a JSON-lines file; the session prints one line per area.

xdist workers are separate processes, so the file is keyed by the controller's pid (a worker's parent) unless
``RELIABILITY_FIGURES_FILE`` names one (``benchmarks/soak.py`` does, to print the same lines itself).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

AREAS = (
    "ingest kill -9",
    "phase1 kill -9",
    "phase2 kill -9",
    "gate kill -9",
    "races",
    "broken environment",
    "fuzz: rollouts",
    "fuzz: citations",
    "prompt injection",
    "secrets",
    "UI diff vs phase 2",
    "save during a run",
    "deleted content",
    "unapproved reads",
    "agent-facing view",
)


def figures_file() -> Path:
    explicit = os.environ.get("RELIABILITY_FIGURES_FILE")
    if explicit:
        return Path(explicit)
    owner = os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()
    return Path(tempfile.gettempdir()) / f"memtui-reliability-{owner}.jsonl"


def record(area: str, **counts: Any) -> None:
    """Add counts to an area: trials, survived, bad_inputs, leaked, fp, negatives (numbers, summed per area)."""
    assert area in AREAS, area
    with figures_file().open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"area": area, **counts}) + "\n")


class Trial:
    """One trial of an area, its outcome counted rather than written: ``survived`` is ``faults`` only when every
    check in the ``with`` block held. A loop of faults sets ``faults`` as it injects them and ``passed`` as each
    one's checks hold, so a failure counts the faults that did survive. The exception still fails the test."""

    def __init__(self, area: str, faults: int = 1) -> None:
        self.area, self.faults, self.trials = area, faults, 1
        self.passed: int | None = None

    def __enter__(self) -> Trial:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        survived = (self.passed or 0) if exc_type else self.faults
        record(self.area, trials=self.trials, faults=self.faults, survived=survived)
        return False


def trial(area: str, faults: int = 1) -> Trial:
    return Trial(area, faults)


def collect(path: Path | None = None) -> dict[str, dict[str, float]]:
    path = path or figures_file()
    totals: dict[str, dict[str, float]] = {}
    if not path.is_file():
        return totals
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        area = totals.setdefault(row.pop("area"), {})
        for key, value in row.items():
            area[key] = area.get(key, 0) + value
    return totals


def lines(totals: dict[str, dict[str, float]]) -> list[str]:
    out = []
    for area in AREAS:
        t = totals.get(area)
        if not t:
            continue
        parts = []
        if "trials" in t:
            parts.append(f"trials {int(t['trials'])}")
        if "faults" in t:
            parts.append(f"faults injected {int(t['faults'])}, survived {int(t.get('survived', 0))}")
        if "edits" in t:
            parts.append(f"person's edits {int(t['edits'])}, kept {int(t.get('kept', 0))}")
        if "runs" in t:
            ended, stuck = int(t.get("ended", 0)), int(t.get("stuck", 0))
            parts.append(f"runs {int(t['runs'])}, ended {ended}, stuck after one restart {stuck}")
        if "bad_inputs" in t:
            parts.append(f"bad inputs tried {int(t['bad_inputs'])}")
        if "bad_lines" in t:
            parts.append(f"bad lines counted {int(t['bad_lines'])}")
        if "escapes" in t:
            parts.append(f"escape attempts {int(t['escapes'])}, refused {int(t.get('refused', 0))}")
        if "deleted" in t:
            parts.append(f"deleted texts planted {int(t['deleted'])}, found afterwards {int(t.get('found', 0))}")
        if "reads" in t:
            parts.append(
                f"agent reads {int(t['reads'])}, unapproved bytes planted {int(t.get('unapproved_bytes', 0))}, "
                f"served {int(t.get('served_bytes', 0))}"
            )
        if "surfaces" in t:
            kinds = sorted(k.removeprefix("planted_") for k in t if k.startswith("planted_"))
            parts.append(
                f"surfaces {int(t['surfaces'])}, bytes planted/served per surface: "
                + ", ".join(f"{k} {int(t[f'planted_{k}'])}/{int(t.get(f'served_{k}', 0))}" for k in kinds)
            )
        if "planted" in t:
            parts.append(f"secrets planted {int(t['planted'])}, leaked {int(t.get('leaked', 0))}")
        if "negatives" in t:
            fp, n = int(t.get("fp", 0)), int(t["negatives"])
            parts.append(f"false positives {fp}/{n} ({100 * fp / max(n, 1):.1f}%)")
        out.append(f"{area:<20} " + "; ".join(parts))
        surfaces = sorted({k.split("|")[1] for k in t if k.startswith("surface|")})
        out += [
            f"{'':<20}   {s}: planted {int(t[f'surface|{s}|planted'])} bytes, served {int(t[f'surface|{s}|served'])}"
            for s in surfaces
        ]
    return out


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the figures (imported into tests/conftest.py, the conftest an xdist controller loads)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker's summary goes nowhere; the controller prints what every worker recorded
    path = figures_file()
    totals = collect(path)
    if not totals:
        return
    terminalreporter.write_sep("-", "reliability figures")
    for line in lines(totals):
        terminalreporter.write_line(line)
    if not os.environ.get("RELIABILITY_FIGURES_FILE"):
        path.unlink(missing_ok=True)
