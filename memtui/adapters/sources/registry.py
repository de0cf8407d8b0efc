"""The one registry of transcript sources: every package under ``memtui/adapters/sources/`` that exposes ``SOURCE``.

Packages are found by listing this folder, not by a list someone must remember to edit; a package whose ``SOURCE``
lacks a part of the protocol (``protocol.PARTS``) stops memtui at start-up with the parts named, so an incomplete
agent cannot ingest half-read. ``registered`` adds a source for the length of a ``with`` (tests, scratch agents).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memtui.adapters.rollouts.discover import Found
from memtui.adapters.sources.protocol import TranscriptSource, missing_parts
from memtui.core.paths import Paths

_PACKAGE = __name__.rsplit(".", 1)[0]


class IncompleteSource(TypeError):
    """A source that lacks a part of the protocol."""


class UnknownSource(ValueError):
    """A ``source_kind`` no registered source reads (a row written by another memtui, or a removed agent)."""


def check(source: object, where: str) -> TranscriptSource:
    missing = missing_parts(source)
    if missing:
        raise IncompleteSource(f"{where}: the transcript source lacks {', '.join(missing)} (memtui.adapters.sources)")
    return source  # type: ignore[return-value]  # every part checked above


def _found_packages() -> dict[str, TranscriptSource]:
    package = importlib.import_module(_PACKAGE)
    out: dict[str, TranscriptSource] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        source = check(getattr(module, "SOURCE", None), module.__name__)
        if source.kind in out:
            raise IncompleteSource(f"{module.__name__}: source kind {source.kind!r} is taken")
        out[source.kind] = source
    return out


_SOURCES: dict[str, TranscriptSource] | None = None


def _all() -> dict[str, TranscriptSource]:
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = _found_packages()
    return _SOURCES


def sources() -> list[TranscriptSource]:
    """Every registered source, in kind order (a stable order for discovery and listings)."""
    return [s for _, s in sorted(_all().items())]


def kinds() -> list[str]:
    return sorted(_all())


def source(kind: str) -> TranscriptSource:
    try:
        return _all()[kind]
    except KeyError:
        raise UnknownSource(f"no transcript source reads {kind!r} (known: {', '.join(kinds())})") from None


def label(kind: str) -> str:
    """What people call the agent of ``kind`` (the kind itself for one no source reads)."""
    found = _all().get(kind)
    return found.label if found is not None else kind


@contextmanager
def registered(new: object) -> Iterator[TranscriptSource]:
    """Register ``new`` (checked like a package's ``SOURCE``) until the ``with`` ends."""
    checked = check(new, type(new).__name__)
    table = _all()
    if checked.kind in table:
        raise IncompleteSource(f"source kind {checked.kind!r} is taken")
    table[checked.kind] = checked
    try:
        yield checked
    finally:
        table.pop(checked.kind, None)


def discover(paths: Paths) -> list[Found]:
    """Every session of every source, sorted by path (a stable order for progress and batches)."""
    return sorted((f for s in sources() for f in s.discover(paths)), key=lambda f: f.path)


def source_roots(paths: Paths) -> list[Path]:
    return [root for s in sources() for root in s.roots(paths)]
