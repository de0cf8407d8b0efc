"""Memory citations: strip them from answers, parse and validate them, count them as memory usage.

Pure functions over text and a state connection; the CLI (``memtui cite``) and the TUI both call these.
"""

from memtui.citations.model import CitationEntry, MemoryCitation, canonical_thread_id
from memtui.citations.parse import ParseResult, parse_bodies, parse_citations, parse_entry
from memtui.citations.strip import CitationStripper, StripChunk, strip_citations

__all__ = [
    "CitationEntry",
    "CitationStripper",
    "MemoryCitation",
    "ParseResult",
    "StripChunk",
    "canonical_thread_id",
    "parse_bodies",
    "parse_citations",
    "parse_entry",
    "strip_citations",
]
