"""Redaction applied: scan the bytes once, keep sorted disjoint spans, rebuild the text once.

`redact_bytes` keeps the whole path in bytes for callers that hold bytes (serialized rollouts); `redact` wraps it for
str (encode once, decode once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memtui.adapters.redact.data import _PLACEHOLDER_B, ANCHORS
from memtui.adapters.redact.handlers import _HANDLERS, _specific
from memtui.adapters.redact.patterns import _BY_FIRST_BYTE, _MATCH, Span, _at_boundary


@dataclass
class Redaction:
    """Redacted text plus how many secrets of each kind were replaced (never the secrets themselves)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class BytesRedaction:
    """`Redaction` for UTF-8 bytes: the redacted bytes and the per-kind counts."""

    data: bytes
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact_bytes(data: bytes) -> BytesRedaction:
    """Replace every secret in UTF-8 `data` with PLACEHOLDER: one RE2 pass, one rebuild, no decoding."""
    spans = _scan(data) if data else []
    if not spans:
        return BytesRedaction(data, {})
    return BytesRedaction(*_rebuild(data, spans))


def redact(text: str) -> Redaction:
    """Replace every secret in `text` with PLACEHOLDER (encode once, redact the bytes, decode once)."""
    if not text:
        return Redaction(text, {})
    data = text.encode("utf-8", "surrogatepass")
    spans = _scan(data)
    if not spans:
        return Redaction(text, {})
    # Rebuilding bytes and decoding once beats mapping offsets back to the str and slicing it (UCS-4 copies).
    rebuilt, counts = _rebuild(data, spans)
    return Redaction(rebuilt.decode("utf-8", "surrogatepass"), counts)


def _rebuild(data: bytes, spans: list[Span]) -> tuple[bytes, dict[str, int]]:
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    counts: dict[str, int] = {}
    last = 0
    for start, end, kind in spans:
        pieces.append(view[last:start])
        pieces.append(_PLACEHOLDER_B)
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    pieces.append(view[last:])
    return b"".join(pieces), counts


def redact_text(text: str) -> str:
    return redact(text).text


def merge_counts(*counts: Mapping[str, int]) -> dict[str, int]:
    """Sum per-kind counts, e.g. over every redaction of one job (the `redactions` column)."""
    total: dict[str, int] = {}
    for one in counts:
        for kind, n in one.items():
            total[kind] = total.get(kind, 0) + n
    return total


def has_anchor(text: str) -> bool:
    """True when `text` contains a literal every rule needs; without one, redact() is the identity."""
    lowered = text.lower()
    return any(anchor in lowered for anchor in ANCHORS)


def _scan(data: bytes) -> list[Span]:
    """Byte spans (sorted, disjoint) of the secrets in `data`."""
    spans: list[Span] = []
    pos = 0
    end_of_data = len(data)
    match_at = _MATCH
    unordered = False
    while pos < end_of_data:
        start = match_at(data, pos, end_of_data)
        if start < 0:
            break
        for rule, rx, bounded in _BY_FIRST_BYTE[data[start]]:
            if bounded and not _at_boundary(data, start):
                continue
            which = rx.match(data, start)
            if which is not None:
                kind = rule
                break
        else:  # a rule that needs a word boundary before it, inside a word
            pos = start + 1
            continue
        found, resume = _HANDLERS.get(kind, _specific)(data, start, which.end(), kind)
        for span in found:
            if spans and span[0] < spans[-1][1]:
                unordered = True
            spans.append(span)
        pos = max(resume, start + 1)
    if unordered:
        spans = _disjoint(spans)
    return spans


def _disjoint(spans: list[Span]) -> list[Span]:
    """Sorted spans without overlaps (a command handler can report spans ahead of the scan)."""
    out: list[Span] = []
    for span in sorted(spans):
        if out and span[0] < out[-1][1]:
            if span[1] > out[-1][1]:
                out[-1] = (out[-1][0], span[1], out[-1][2])
            continue
        out.append(span)
    return out
