"""How much each area tries: CI defaults, raised by ``benchmarks/soak.py`` through RELIABILITY_* variables."""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


INGEST_KILL_TRIALS = _int("RELIABILITY_INGEST_TRIALS", 10)
PHASE1_KILL_TRIALS = _int("RELIABILITY_PHASE1_TRIALS", 30)
PHASE2_KILL_TRIALS = _int("RELIABILITY_PHASE2_TRIALS", 21)
GATE_KILL_TRIALS = _int("RELIABILITY_GATE_TRIALS", 18)
FUZZ_EXAMPLES = _int("RELIABILITY_FUZZ_EXAMPLES", 300)
SEED = _int("RELIABILITY_SEED", 7)
CHUNKS = 3  # trials are split into this many tests so xdist spreads them over the workers


def chunk_sizes(total: int, chunks: int = CHUNKS) -> list[int]:
    return [total // chunks + (1 if i < total % chunks else 0) for i in range(chunks)]
