"""Hidden text: characters a reviewer cannot see but a model reads.

Bidirectional controls reorder what a terminal shows, zero-width characters split words so a filter misses them,
tag characters (U+E0000-E007F) spell ASCII no font draws, and other format or control characters do the same in
smaller ways. Every view shows them as visible escapes (``reveal``); everything memtui writes to the memory root or
an export has them removed (``strip_hidden``, with a count).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Tab and the line separators ``str.splitlines`` knows: they hide nothing (a line ends), and the editor keeps each
# line's separator byte for byte (``memroot.lines``).
_KEEP = frozenset("\n\t\r\x0b\x0c\x1c\x1d\x1e\x85")
_BIDI = frozenset(
    [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)  # marks, embeddings, overrides, isolates
_ZERO_WIDTH = frozenset([0x180E, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF])
_TAGS = range(0xE0000, 0xE0080)
_VARIATION = frozenset([*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])


def is_hidden(ch: str) -> bool:
    """True for a character that changes or hides text without being drawn."""
    if ch in _KEEP:
        return False
    cp = ord(ch)
    if cp in _BIDI or cp in _ZERO_WIDTH or cp in _TAGS or cp in _VARIATION:
        return True
    return unicodedata.category(ch) in ("Cf", "Cc")


# Every character that may be hidden: controls (less those ``_KEEP`` holds) and all beyond ASCII. The regex finds
# them in C, so text of printable ASCII (most memory) is not walked a character at a time in Python.
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t\r\x0b\x0c\x1c\x1d\x1e]")


def has_hidden(text: str) -> bool:
    return any(is_hidden(m.group()) for m in _SUSPECT.finditer(text))


@dataclass(frozen=True)
class Stripped:
    text: str
    removed: int  # characters removed


def strip_hidden(text: str) -> Stripped:
    """``text`` without hidden characters, and how many there were."""
    if not has_hidden(text):
        return Stripped(text, 0)
    kept = [ch for ch in text if not is_hidden(ch)]
    return Stripped("".join(kept), len(text) - len(kept))


def tag_payload(text: str) -> str:
    """The ASCII that tag characters spell (what a model may read and a person cannot see)."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in text if 0xE0020 <= ord(ch) <= 0xE007E)


def with_payloads(text: str) -> str:
    """``text`` stripped, plus what its tag characters spell: the words a model reads, for provenance checks."""
    payload = tag_payload(text)
    clean = strip_hidden(text).text
    return f"{clean}\n{payload}" if payload else clean


HIDDEN_ESCAPE = re.compile(r'⟨U\+[0-9A-F]{4,6}⟩|⟨hidden: "[^"\n]*"⟩')  # what ``reveal`` writes


def reveal(text: str) -> str:
    """``text`` with every hidden character shown as a visible escape: ``⟨U+202E⟩``; a run of tag characters as
    ``⟨hidden: "what they spell"⟩``, so a reviewer reads what a model would."""
    if not has_hidden(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if 0xE0000 <= ord(ch) < 0xE0080:
            j = i
            while j < n and 0xE0000 <= ord(text[j]) < 0xE0080:
                j += 1
            out.append(f'⟨hidden: "{tag_payload(text[i:j])}"⟩')
            i = j
            continue
        out.append(f"⟨U+{ord(ch):04X}⟩" if is_hidden(ch) else ch)
        i += 1
    return "".join(out)
