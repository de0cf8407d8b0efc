"""File stems of ``rollout_summaries/<stem>.md``, reproduced exactly as Codex names them.

The stem is stable for one thread snapshot, so re-syncing an unchanged selection rewrites nothing and git sees no change.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from functools import lru_cache

ROLLOUT_SLUG_MAX_LEN = 60
SHORT_HASH_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
SHORT_HASH_SPACE = 62**4  # 14,776,336
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_GREGORIAN_OFFSET_100NS = 0x01B21DD213814000  # 1582-10-15 -> 1970-01-01 in 100 ns ticks


def _uuid_unix_seconds(u: uuid.UUID) -> float | None:
    """The timestamp embedded in a v1/v6/v7 UUID (what the Rust ``Uuid::get_timestamp`` returns), else None."""
    if u.variant != uuid.RFC_4122:
        return None
    if u.version == 7:
        return (u.int >> 80) / 1000.0
    if u.version == 1:
        ticks = u.time
    elif u.version == 6:
        ticks = ((u.int >> 64) >> 16 << 12) | ((u.int >> 64) & 0x0FFF)
    else:
        return None
    return (ticks - _GREGORIAN_OFFSET_100NS) / 10_000_000


def _fmt(ts: float) -> str:
    return datetime.fromtimestamp(int(ts // 1), UTC).strftime("%Y-%m-%dT%H-%M-%S")


def sanitize_slug(raw: str | None) -> str:
    """ASCII alphanumerics lower-cased, everything else ``_``, at most 60 chars, trailing ``_`` stripped."""
    if not raw:
        return ""
    # One output char per input char, so truncating the input first is the same as stopping at 60.
    return _NOT_ALNUM.sub("_", raw[:ROLLOUT_SLUG_MAX_LEN]).lower().rstrip("_")


@lru_cache(maxsize=65_536)  # a sync computes each stem twice (file name, raw_memories.md line) on every run
def rollout_summary_file_stem(thread_id: str, source_updated_at: int, rollout_slug: str | None) -> str:
    """``<ts>-<hash4>[-<slug>]``: ``0194f5a6-89ab-7cde-8123-456789abcdef`` -> ``2025-02-11T15-35-19-jqmb``."""
    try:
        parsed: uuid.UUID | None = uuid.UUID(thread_id)
    except ValueError:
        parsed = None
    if parsed is not None:
        embedded = _uuid_unix_seconds(parsed)
        ts = _fmt(embedded if embedded is not None else source_updated_at)
        seed = parsed.int & 0xFFFF_FFFF
    else:
        ts = _fmt(source_updated_at)
        seed = 0
        for byte in thread_id.encode("utf-8"):
            seed = (seed * 31 + byte) & 0xFFFF_FFFF
    value = seed % SHORT_HASH_SPACE
    chars = ["0"] * 4
    for idx in range(3, -1, -1):
        chars[idx] = SHORT_HASH_ALPHABET[value % 62]
        value //= 62
    prefix = f"{ts}-{''.join(chars)}"
    slug = sanitize_slug(rollout_slug)
    return f"{prefix}-{slug}" if slug else prefix
