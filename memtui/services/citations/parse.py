"""Read a citation out of an agent's answer, in either form (Codex's ``memory_citation`` object or the ``<oai-mem-citation>`` block).

Codex form: one or more ``<oai-mem-citation>`` blocks, each holding ``<citation_entries>`` and
``<rollout_ids>`` (or legacy ``<thread_ids>``). Seed form: the same two blocks with no wrapper. Malformed
entry lines are dropped and counted, never fatal; the parser does not raise on any input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memtui.domain.citation import (
    ENTRIES_CLOSE,
    ENTRIES_OPEN,
    IDS_CLOSE,
    IDS_OPEN,
    LEGACY_IDS_CLOSE,
    LEGACY_IDS_OPEN,
    U32_MAX,
    CitationEntry,
    MemoryCitation,
)
from memtui.services.citations.strip import strip_citations

_NUMBER = re.compile(r"\+?[0-9]+")  # what Rust's u32::from_str accepts (Python's int() is laxer)


@dataclass
class ParseResult:
    citation: MemoryCitation | None
    dropped_lines: int = 0
    invalid_ids: list[str] = field(default_factory=list)
    visible: str = ""
    bodies: list[str] = field(default_factory=list)
    wrapped: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "citation": self.citation.model_dump() if self.citation else None,
            "dropped_lines": self.dropped_lines,
            "invalid_ids": self.invalid_ids,
            "thread_ids": self.citation.thread_ids if self.citation else [],
            "wrapped": self.wrapped,
        }


def _block(text: str, open_tag: str, close_tag: str) -> str | None:
    """The text between the first open tag and the next close tag; None unless both are present."""
    start = text.find(open_tag)
    if start < 0:
        return None
    start += len(open_tag)
    end = text.find(close_tag, start)
    return None if end < 0 else text[start:end]


def _lines(block: str) -> list[str]:
    """Rust's ``str::lines``: split on ``\\n`` and drop one trailing ``\\r``; other separators stay."""
    return [line.removesuffix("\r") for line in block.split("\n")]


def _u32(text: str) -> int | None:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    value = int(text)
    return value if value <= U32_MAX else None


RANGE_DASHES = ("\u2013", "\u2014")  # en and em dash, as models and editors write ranges; read as "-"


def _line_number(text: str) -> int | None:
    """A line number, optionally written ``L12`` (GitHub style)."""
    text = text.strip()
    return _u32(text[1:] if text[:1] == "L" else text)


def parse_entry(line: str) -> CitationEntry | None:
    """``path:start-end|note=[text]`` split at the last ``|note=[``, the last ``:`` and the first ``-``.

    Beyond Codex's grammar (which drops such lines) it accepts what agents commonly write: a single line
    ``path:12`` (= ``12-12``), an en or em dash (``12–18``) and ``L12-L18``."""
    location, sep, note = line.strip().rpartition("|note=[")
    if not sep or not note.endswith("]"):
        return None
    path, sep, line_range = location.rpartition(":")
    if not sep:
        return None
    for dash in RANGE_DASHES:
        line_range = line_range.replace(dash, "-")
    start, sep, end = line_range.partition("-")
    if not sep:
        end = start
    line_start, line_end = _line_number(start), _line_number(end)
    if line_start is None or line_end is None:
        return None
    return CitationEntry(path=path.strip(), line_start=line_start, line_end=line_end, note=note[:-1].strip())


def parse_bodies(bodies: list[str]) -> ParseResult:
    """Merge every body into one citation: entries in order (not deduplicated), ids deduplicated first-seen."""
    entries: list[CitationEntry] = []
    ids: list[str] = []
    dropped = 0
    for body in bodies:
        block = _block(body, ENTRIES_OPEN, ENTRIES_CLOSE)
        if block is not None:
            for line in _lines(block):
                if not line.strip():
                    continue
                entry = parse_entry(line)
                if entry is None:
                    dropped += 1
                else:
                    entries.append(entry)
        id_block = _block(body, IDS_OPEN, IDS_CLOSE)
        if id_block is None:
            id_block = _block(body, LEGACY_IDS_OPEN, LEGACY_IDS_CLOSE)
        for line in _lines(id_block or ""):
            rid = line.strip()
            if rid and rid not in ids:
                ids.append(rid)
    citation = MemoryCitation(entries=entries, rollout_ids=ids) if entries or ids else None
    return ParseResult(citation, dropped, citation.invalid_ids if citation else [])


def parse_citations(text: str) -> ParseResult:
    """Parse an answer: the wrapped blocks when there are any, else the whole text as one bare block."""
    visible, bodies = strip_citations(text)
    wrapped = bool(bodies)
    result = parse_bodies(bodies if wrapped else [text])
    result.visible, result.bodies, result.wrapped = visible, bodies, wrapped
    return result
