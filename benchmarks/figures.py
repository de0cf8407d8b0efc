"""What the benchmarks share: which code they measure, and their figures in the one form ``compare.py`` reads.

A benchmark measures the code under ``MEMTUI_BENCH_CODE`` (a checkout's root; unset: the checkout the script is in),
so ``compare.py`` runs the same script over an older commit's code and the working tree. It ends its output with one
line, ``FIGURES {json}``: ``{"benchmark": name, "figures": {figure: {"value", "unit", "better"}}}``, where
``better`` is ``lower`` (a time: more than 10 % higher is flagged), ``higher`` (a throughput) or ``none`` (a count
shown for context, never flagged). Print it with ``emit``; a new benchmark joins ``compare.py`` by calling ``emit``
and adding one entry to ``compare.BENCHMARKS``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Literal

PREFIX = "FIGURES "
CODE_ENV = "MEMTUI_BENCH_CODE"


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    better: Literal["lower", "higher", "none"] = "lower"


def code_root() -> Path:
    """The checkout whose ``memtui`` (and ``tests.support``) is measured, put first on ``sys.path``."""
    root = Path(os.environ.get(CODE_ENV) or Path(__file__).resolve().parents[1])
    sys.path.insert(0, str(root))
    return root


def load(*names: str) -> ModuleType:
    """The first of ``names`` that imports: a module moved between the layouts of the commits compared."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    return importlib.import_module(names[-1])


def emit(benchmark: str, figures: dict[str, Figure]) -> None:
    """The machine-readable last line of a benchmark's output."""
    body = {"benchmark": benchmark, "figures": {k: asdict(v) for k, v in figures.items()}}
    print(PREFIX + json.dumps(body), flush=True)


def parse(output: str) -> dict[str, Figure]:
    """The figures of a benchmark's output (its last ``FIGURES`` line); empty when it printed none."""
    for line in reversed(output.splitlines()):
        if line.startswith(PREFIX):
            return {k: Figure(**v) for k, v in json.loads(line[len(PREFIX) :])["figures"].items()}
    return {}
