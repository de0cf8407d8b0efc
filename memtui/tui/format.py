"""Display formatting shared by the screens: times, sizes, counts with the right plural, shortened paths."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path


def fmt_time(ts: int | float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%d %H:%M")


def fmt_clock(ts: float) -> str:
    """The time of day of a task log entry (the log lives for one session)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")


def fmt_size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{int(size)}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``; ``many`` for irregular plurals (``1 memory``, ``2 memories``)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def short_path(path: str, *roots: str | Path) -> str:
    """A path relative to the first root that contains it (keeps tmp prefixes out of the screen)."""
    for root in roots:
        root_s = str(root).rstrip("/")
        if root_s and path.startswith(root_s + "/"):
            return path[len(root_s) + 1 :]
    return path


def home_path(path: str | Path) -> str:
    """``~/...`` for paths under the user's home, so hints stay short and recognisable."""
    text = str(path)
    home = str(Path.home())
    return "~" + text[len(home) :] if home not in ("", "/") and (text == home or text.startswith(home + "/")) else text
