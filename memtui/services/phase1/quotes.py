"""Quote fidelity: a bullet that says "the user said: "<quote>"" keeps its place only if the user said it.

The stage-one prompt asks for preferences (and remember/forget requests) in the user's own words. A model that
paraphrases, merges two messages or puts the assistant's words in the user's mouth produces a quote that is not in
any ``user`` item; such a bullet would become a false "what the user said" in long-term memory. This check keeps a
bullet only when every fragment of its quote (fragments are separated by ``...``) appears in the user's words,
compared after redaction and with case, whitespace and typographic quotes normalised. Other bullets are untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memtui.adapters.redact import redact_text
from memtui.adapters.rollouts.model import Transcript

_QUOTED = re.compile(
    r"(?:the user (?:said|asked|corrected|wrote)[^:\"]{0,40}:|\b(?:remember|forget):)\s*[\"“](?P<quote>[^\"”]+)[\"”]",
    re.I,
)
_ELLIPSIS = re.compile(r"\.\.\.|…")
_TYPO = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-"})
MIN_FRAGMENT = 3


@dataclass(frozen=True)
class QuoteCheck:
    text: str
    dropped: list[str]  # the bullets removed, for the record


def _norm(text: str) -> str:
    return " ".join(text.replace("\\n", " ").translate(_TYPO).lower().split())


def user_words(items: Transcript) -> str:
    """Everything the user typed in a rollout (``user`` message items), redacted and normalised."""
    return _norm(redact_text("\n".join(items.user_texts())))


def quote_is_faithful(quote: str, said: str) -> bool:
    fragments = [_norm(f) for f in _ELLIPSIS.split(quote)]
    fragments = [f.strip(" .,;:!?'\"") for f in fragments]
    fragments = [f for f in fragments if len(f) >= MIN_FRAGMENT]
    return bool(fragments) and all(f in said for f in fragments)


def user_quotes(text: str) -> list[str]:
    """The quotes a line attributes to the user (``the user said: "..."``, ``remember: "..."``)."""
    return [m.group("quote") for m in _QUOTED.finditer(text)] if text else []


def has_user_quote(text: str) -> bool:
    """True when ``text`` quotes the user at all (the batch path reads the rollout's words only then)."""
    return bool(text) and _QUOTED.search(text) is not None


def enforce_user_quotes(text: str, said: str) -> QuoteCheck:
    """``text`` without the lines that quote the user with words the user did not say."""
    if not text:
        return QuoteCheck(text, [])
    kept: list[str] = []
    dropped: list[str] = []
    for line in text.splitlines(keepends=True):
        quotes = [m.group("quote") for m in _QUOTED.finditer(line)]
        if quotes and not all(quote_is_faithful(q, said) for q in quotes):
            dropped.append(line.rstrip("\n"))
            continue
        kept.append(line)
    return QuoteCheck("".join(kept), dropped)
