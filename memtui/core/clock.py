"""The one injectable clock: every timestamp memtui writes comes from here.

Tests and snapshots freeze it (``freeze(ts)``) so that leases, backoff and the UI are deterministic.
``MEMTUI_FROZEN_TIME`` (unix seconds) freezes it for a subprocess.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

_now: Callable[[], float] = time.time


def _from_env() -> None:
    frozen = os.environ.get("MEMTUI_FROZEN_TIME")
    if frozen:
        freeze(float(frozen))


def now() -> float:
    """Current unix time in seconds (float)."""
    return _now()


def now_s() -> int:
    """Current unix time in whole seconds, the unit of every watermark and lease."""
    return int(_now())


def file_time() -> float:
    """The real time, never frozen: only to compare with file mtimes, which the filesystem stamps in real time
    (e.g. how old a git ``index.lock`` is)."""
    return time.time()


def freeze(ts: float) -> None:
    global _now
    _now = lambda: ts  # noqa: E731


@contextmanager
def frozen(ts: float) -> Iterator[None]:
    """The clock stopped at ``ts`` for the block, then back to what it was (frozen or not)."""
    global _now
    before = _now
    freeze(ts)
    try:
        yield
    finally:
        _now = before


def reset() -> None:
    global _now
    _now = time.time
    _from_env()


def iso(ts: float | int | None) -> str:
    """RFC 3339 UTC rendering used in memory files (``2026-07-01T12:00:00+00:00``)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(int(ts), UTC).isoformat()


_from_env()
