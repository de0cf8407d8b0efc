"""Hidden text: characters a reviewer cannot see but a model reads.

Bidirectional controls reorder what a terminal shows, zero-width characters split words so a filter misses them,
tag characters (U+E0000-E007F) spell ASCII no font draws, and other format or control characters do the same in
smaller ways. Every view shows them as visible escapes (``reveal``); everything memtui writes to the memory root or
an export has them removed (``strip_hidden``, with a count).

Some of these characters are writing, not hiding, in the right place (Unicode's security guidance, UTS #39 with the
joiner contexts of UAX #31, and the emoji sequences of UTS #51): a zero-width non-joiner between two letters of a
script that joins them (Persian ``می‌خواهم``) or after a virama, a zero-width joiner inside an emoji sequence
(``👩‍💻``) or after a virama, a variation selector after the character it selects a glyph of (``❤️``, ``1️⃣``, a
Han ideograph's variant), and the tag characters of the three subdivision flags. There they are kept and not
flagged; anywhere else (between ASCII letters, at a word's edge, alone) they hide text and are treated as such.
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


ZWNJ, ZWJ = "\u200c", "\u200d"
_VS_EMOJI = frozenset("\ufe0e\ufe0f")  # text and emoji presentation selectors
_KEYCAP = "\u20e3"
_SKIN_TONES = range(0x1F3FB, 0x1F400)
# The subdivision flags emoji lists (England, Scotland, Wales): a black flag, tag letters, a cancel tag.
_TAG_FLAGS = frozenset(
    "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in code) + "\U000e007f" for code in ("gbeng", "gbsct", "gbwls")
)


def is_hidden(ch: str) -> bool:
    """True for a character that can change or hide text without being drawn (whatever its context: see
    ``hidden_at`` for whether it does so where it stands)."""
    if ch in _KEEP:
        return False
    cp = ord(ch)
    if cp in _BIDI or cp in _ZERO_WIDTH or cp in _TAGS or cp in _VARIATION:
        return True
    return unicodedata.category(ch) in ("Cf", "Cc")


def _letter(ch: str) -> bool:
    """A letter or mark of a script beyond ASCII (where a joiner can be writing; between ASCII letters it only
    splits a word for a filter to miss)."""
    return ord(ch) > 0x7F and unicodedata.category(ch)[0] in "LM"


def _virama(ch: str) -> bool:
    return bool(ch) and unicodedata.combining(ch) == 9


def _pictographic(ch: str) -> bool:
    """A character an emoji sequence is built of (a symbol beyond ASCII, a skin tone, a regional indicator)."""
    return ord(ch) > 0x7F and (unicodedata.category(ch) in ("So", "Sm", "Sk") or ord(ch) in _SKIN_TONES)


def _emoji_before(text: str, i: int) -> bool:
    """An emoji ends just before ``i`` (skipping its presentation selector and skin tone)."""
    j = i - 1
    while j >= 0 and (text[j] in _VS_EMOJI or ord(text[j]) in _SKIN_TONES):
        if ord(text[j]) in _SKIN_TONES:
            return True
        j -= 1
    return j >= 0 and _pictographic(text[j])


def _writing(text: str, i: int) -> bool:
    """Whether the joiner, selector or tag at ``i`` is part of the writing around it (kept), not hiding text."""
    ch = text[i]
    before = text[i - 1] if i else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if ch == ZWNJ:
        return _virama(before) or (bool(before) and bool(after) and _letter(before) and _letter(after))
    if ch == ZWJ:
        return _virama(before) or (_emoji_before(text, i) and bool(after) and _pictographic(after))
    if ch in _VS_EMOJI:
        return bool(before) and (_pictographic(before) or (before in "#*0123456789" and after == _KEYCAP))
    if ord(ch) in _VARIATION:  # standardized and ideographic variation sequences follow a letter or symbol
        return bool(before) and ord(before) > 0x7F and unicodedata.category(before)[0] in "LS"
    return False


def _tag_flag_at(text: str, i: int) -> int:
    """The length of the subdivision flag starting at ``i``, or 0."""
    if text[i] != "\U0001f3f4":
        return 0
    for flag in _TAG_FLAGS:
        if text.startswith(flag, i):
            return len(flag)
    return 0


def hidden_at(text: str) -> list[int]:
    """The positions in ``text`` of characters that hide text where they stand."""
    out: list[int] = []
    skip = 0
    for m in _SUSPECT.finditer(text):
        i = m.start()
        if i < skip:
            continue
        if (n := _tag_flag_at(text, i)) > 0:
            skip = i + n
            continue
        if is_hidden(m.group()) and not _writing(text, i):
            out.append(i)
    return out


# Every character that may be hidden: controls (less those ``_KEEP`` holds) and all beyond ASCII. The regex finds
# them in C, so text of printable ASCII (most memory) is not walked a character at a time in Python.
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t\r\x0b\x0c\x1c\x1d\x1e]")


def has_hidden(text: str) -> bool:
    return bool(hidden_at(text))


@dataclass(frozen=True)
class Stripped:
    text: str
    removed: int  # characters removed


def strip_hidden(text: str) -> Stripped:
    """``text`` without hidden characters, and how many there were."""
    drop = hidden_at(text)
    if not drop:
        return Stripped(text, 0)
    gone = set(drop)
    return Stripped("".join(ch for i, ch in enumerate(text) if i not in gone), len(drop))


_TAG_CHARS = re.compile("[\U000e0020-\U000e007e]")  # the tag characters that spell ASCII (found in C)


def tag_payload(text: str) -> str:
    """The ASCII that tag characters spell (what a model may read and a person cannot see)."""
    return "".join(chr(ord(ch) - 0xE0000) for ch in _TAG_CHARS.findall(text))


def with_payloads(text: str) -> str:
    """``text`` stripped, plus what its tag characters spell: the words a model reads, for provenance checks."""
    payload = tag_payload(text)
    clean = strip_hidden(text).text
    return f"{clean}\n{payload}" if payload else clean


HIDDEN_ESCAPE = re.compile(r'⟨U\+[0-9A-F]{4,6}⟩|⟨hidden: "[^"\n]*"⟩')  # what ``reveal`` writes


def reveal(text: str) -> str:
    """``text`` with every hidden character shown as a visible escape: ``⟨U+202E⟩``; a run of tag characters as
    ``⟨hidden: "what they spell"⟩``, so a reviewer reads what a model would."""
    hidden = set(hidden_at(text))
    if not hidden:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if i in hidden and 0xE0000 <= ord(ch) < 0xE0080:
            j = i
            while j < n and j in hidden and 0xE0000 <= ord(text[j]) < 0xE0080:
                j += 1
            out.append(f'⟨hidden: "{tag_payload(text[i:j])}"⟩')
            i = j
            continue
        out.append(f"⟨U+{ord(ch):04X}⟩" if i in hidden else ch)
        i += 1
    return "".join(out)
