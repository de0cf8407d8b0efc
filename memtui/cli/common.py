"""Helpers shared by the sub-commands: building the context, printing, progress."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from memtui.core.settings import SettingsError
from memtui.services.context import Context, open_context

EXIT_BUSY = 75  # EX_TEMPFAIL: the memory root is busy; retry shortly

_FLAG_OVERRIDES: dict[str, Any] = {}


def set_flag_overrides(pairs: list[str]) -> None:
    """Global ``--set KEY=VALUE`` flags; validated with the other layers when the context is built."""
    _FLAG_OVERRIDES.clear()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"--set expects KEY=VALUE, got {pair!r}")
        _FLAG_OVERRIDES[key.strip()] = value.strip()


def make_context(*, creates_home: bool = False, **overrides: Any) -> Context:
    """The effective context with command-line flags as the top layer (None = flag not given).

    ``creates_home``: the command is a first step (``memtui ingest``) and may create a missing home, saying so on
    stderr; any other command refuses a missing home (``NoHome``) instead of leaving an empty one behind.
    """
    return open_context(
        {**_FLAG_OVERRIDES, **{k: v for k, v in overrides.items() if v is not None}},
        creates_home=creates_home,
        announce=_say,
    )


def _say(message: str) -> None:
    print(f"memtui: {message}", file=sys.stderr)


def positive_int(text: str) -> int:
    """An argparse type for counts (``--limit``, ``--concurrency``): a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def print_json(obj: Any) -> None:
    import orjson  # only the --json runs need it

    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


class Progress:
    """A one-line progress display on stderr, only when stderr is a terminal; throttled to 10 Hz."""

    def __init__(self, label: str, total: int | None = None, enabled: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._last = 0.0

    def update(self, done: int, detail: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and (self.total is None or done < self.total):
            return
        self._last = now
        total = f"/{self.total}" if self.total else ""
        sys.stderr.write(f"\r\x1b[2K{self.label} {done}{total} {detail}"[:200])
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
