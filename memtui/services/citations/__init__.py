"""Memory citations: strip them from answers, parse and validate them, count them as memory usage.

Pure functions over text and a state connection; the CLI (``memtui cite``) and the TUI both call these.
"""

from memtui.domain.citation import CitationEntry, MemoryCitation, canonical_thread_id
from memtui.services.citations.parse import ParseResult, parse_bodies, parse_citations, parse_entry
from memtui.services.citations.strip import CitationStripper, StripChunk, strip_citations
from memtui.services.citations.usage import (
    FoundCitation,
    found_in_rollout_line,
    record_citation,
    record_rollout_citations,
    record_stage1_output_usage,
)

__all__ = [
    "CitationEntry",
    "CitationStripper",
    "FoundCitation",
    "MemoryCitation",
    "ParseResult",
    "StripChunk",
    "canonical_thread_id",
    "found_in_rollout_line",
    "parse_bodies",
    "parse_citations",
    "parse_entry",
    "record_citation",
    "record_rollout_citations",
    "record_stage1_output_usage",
    "strip_citations",
]
