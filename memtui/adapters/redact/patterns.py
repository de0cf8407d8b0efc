"""The scanner: every rule as one alternative of a single RE2 program, and the `re` lookup that tells which rule a
candidate is.

RE2 runs the alternation once over the UTF-8 bytes with no capture group, so its DFA alone answers whatever the
number of rules; for each candidate it reports, `re` tries in rule order only the rules that can start with that
byte, which picks the same rule RE2 did for a fraction of the cost of the whole alternation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import re2

from memtui.adapters.redact.data import _CONTEXT_RULES, _FULL, RULES

_FULL_RE = {kind: re.compile(pattern) for kind, pattern in _FULL.items()}


def _unbounded(pattern: bytes) -> bytes:
    """A rule without its leading `\\b`, which Python checks instead: in JSON-encoded text a token at the start of a
    line follows the `n` of a `\\n` escape, a word character, and `\\b` alone would miss it."""
    return pattern.removeprefix(rb"\b")


def _at_boundary(data: bytes, start: int) -> bool:
    """`\\b` before `start`, counting the escapes `\\n`, `\\t`, `\\r` of JSON-encoded text as separators."""
    if start == 0 or data[start - 1] not in _WORD_BYTES:
        return True
    return start >= 2 and data[start - 2] == 92 and data[start - 1] in b"nrt"  # 92: backslash


_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _compile() -> re2._Regexp:
    options = re2.Options()
    options.max_mem = 64 << 20  # room for the DFA cache: a bail-out to the NFA would cost an order of magnitude
    options.never_capture = True  # the DFA alone answers: no submatch pass over each candidate
    return re2.compile(b"|".join(b"(?:" + _unbounded(pattern) + b")" for _, pattern in RULES), options)


_SCANNER = _compile()


def _first_match_start(scanner: re2._Regexp) -> Callable[[bytes, int, int], int]:
    """Where the next candidate starts (-1: none). Calls the binding's `Match` directly when it has one: on bytes,
    `search()` only wraps that call in a generator and a match object, a third of the cost per candidate."""
    raw = getattr(scanner, "_regexp", None)
    unanchored = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    if raw is not None and unanchored is not None:

        def start(data: bytes, pos: int, end: int) -> int:
            return raw.Match(unanchored, data, pos, end)[0][0]

        return start

    def start_via_search(data: bytes, pos: int, end: int) -> int:
        match = scanner.search(data, pos, end)
        return -1 if match is None else match.start()

    return start_via_search


_MATCH = _first_match_start(_SCANNER)


def _first_bytes(pattern: bytes) -> frozenset[int]:
    """Bytes a match of `pattern` can start with (all 256 when the parse tree is not simple enough to tell)."""
    # typeshed leaves out re's parser modules (private, but stable since 3.11 and what ``re`` itself compiles with)
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser as P  # type: ignore[attr-defined]

    def first(items: list[tuple[Any, Any]]) -> set[int] | None:
        out: set[int] = set()
        for op, av in items:
            if op is C.AT:  # \b: zero-width
                continue
            if op is C.LITERAL:
                return out | {av}
            if op is C.IN:
                for o, a in av:
                    if o is C.LITERAL:
                        out.add(a)
                    elif o is C.RANGE:
                        out |= set(range(a[0], a[1] + 1))
                    else:
                        return None
                return out
            if op is C.SUBPATTERN:
                sub = first(list(av[3]))
                return None if sub is None else out | sub
            if op is C.BRANCH:
                for branch in av[1]:
                    sub = first(list(branch))
                    if sub is None:
                        return None
                    out |= sub
                return out
            if op in (C.MAX_REPEAT, C.MIN_REPEAT):
                sub = first(list(av[2]))
                if sub is None:
                    return None
                out |= sub
                if av[0] == 0:
                    continue
                return out
            return None
        return None

    try:
        found = first(list(P.parse(pattern)))
    except Exception:  # a future parser: fall back to trying the rule at every candidate
        found = None
    return frozenset(range(256)) if found is None else frozenset(found)


# RE2 reports where a candidate starts; `re` then tries, in rule order, only the rules that can start with that
# byte: leftmost-first picks the same rule RE2 did, for a fraction of the cost of the whole alternation.
_RULE_RES = [
    (kind, re.compile(_unbounded(pattern)), pattern.startswith(rb"\b"), _first_bytes(_unbounded(pattern)))
    for kind, pattern in RULES
]
_BY_FIRST_BYTE: tuple[tuple[tuple[str, re.Pattern[bytes], bool], ...], ...] = tuple(
    tuple((kind, rx, bounded) for kind, rx, bounded, firsts in _RULE_RES if byte in firsts) for byte in range(256)
)
_RULE_RE = {kind: rx for kind, rx, _, _ in _RULE_RES}

# Token formats recognised inside a value (assignment, URL password, bearer) to count it under its real kind.
_SPECIFIC = re.compile(
    b"|".join(
        b"(?P<" + kind.encode() + b">" + _FULL.get(kind, pattern).removeprefix(rb"\b") + b")"
        for kind, pattern in RULES
        if kind not in _CONTEXT_RULES
    )
)
_DIGIT = re.compile(rb"[0-9]")

Span = tuple[int, int, str]
Found = tuple[list[Span], int]  # spans found at a candidate, and where the scan resumes
