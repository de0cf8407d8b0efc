"""Possible injection: imperative text in a memory statement that originates in tool output.

A statement is imperative when it instructs the agent (ignore your instructions, always/never/must..., "the user
prefers"), pipes a command into a shell, asks for credentials, or points at a URL to fetch. It originates in tool
output when its words (or its URL or command) are found in a ``tool``-class item (tool output, fetched content, a
file's contents, another agent's message, injected context, tag-character payloads included) and not in what the
user typed. Both together flag the statement, naming the item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from memtui.domain.trust.classes import Trust

INSTRUCTION, SHELL, CREDENTIALS, URL = "instruction", "shell", "credentials", "url"

_SHELL = re.compile(
    r"\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
    r"|\|\s*(?:sudo\s+)?(?:bash|sh|zsh|python3?|node|iex)\b"
    r"|\b(?:bash|sh)\s+<\(\s*(?:curl|wget)"
    r"|\beval\s+[\"']?\$\((?:curl|wget)",
    re.I,
)
_CREDENTIALS = re.compile(
    r"\b(?:send|paste|share|post|upload|print|include|provide|give|email|forward|echo|cat|read|copy|attach|submit)"
    r"\b[^\n]{0,60}(?:\b|_)(?:api[_ -]?keys?|tokens?|passwords?|passwd|secrets?|credentials?|private keys?|id_rsa|"
    r"ssh keys?|\.ssh|\.env\b|aws_secret\w*|\.netrc|cookies?)"
    r"|(?:\b|_)(?:api[_ -]?keys?|tokens?|passwords?|secrets?|credentials?|private keys?|id_rsa|ssh keys?)\b[^\n]{0,40}"
    r"\b(?:to|into|in)\s+(?:the\s+)?(?:chat|issue|comment|reply|answer|pr|pull request|https?://)",
    re.I,
)
_URL = re.compile(r"https?://[^\s\"'`<>)\]]+", re.I)
_FETCH = re.compile(
    r"\b(?:fetch|download|visit|open|browse|load|curl|wget|go\s+to|navigate|check|read|follow|get)\b", re.I
)
# Instructions addressed to an agent, anywhere in the text.
_ADDRESSED = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|"
    r"system|original)?\s*(?:instructions?|rules?|prompts?|guidelines?)"
    r"|<\s*/?\s*system\s*>|\bsystem\s*(?:override|prompt|message)\b"
    r"|\b(?:AI|agents?|assistants?|LLMs?|language\s+models?)\s*(?:[:,]|must|should|need\s+to|are\s+to|reading\s+this)"
    r"|\bnote\s+to\s+(?:the\s+)?(?:ai|agent|assistant|model)"
    r"|\bthe\s+user\s+(?:prefers|wants|said|asked|likes|requires|insists|expects)\b"
    r"|\byou\s+(?:must|should|need\s+to|are\s+to|have\s+to|will\s+now)\b",
    re.I,
)
# An imperative at the start of a clause: "Always run ...", "Never commit ...", "Make sure to ...".
_IMPERATIVE = re.compile(
    r"(?:^|[.:;!?\n]\s*|^\s*[-*]\s*(?:[\w\s]{0,30}:\s*)?[\"'“]?)"
    r"(?:always|never|from\s+now\s+on|make\s+sure|be\s+sure\s+to|do\s+not|don'?t|remember\s+(?:to|that)|"
    r"please\s+(?:run|fetch|send|paste|push|commit|disable|use|download)|run|fetch|download|send|paste|push|"
    r"disable|commit)\b",
    re.I,
)


_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]", re.I)
_STOP = frozenset(
    "a an and are as at be but by can do for from has have i if in is it its me my of on or our so that the their them "  # noqa: SIM905
    "then there this to us was we what when which will with you your it's item items trust user said".split()
)
MIN_COVERAGE = 0.6  # share of a statement's words found in one item for the statement to come from it


@dataclass(frozen=True)
class Flag:
    kind: str
    item: int  # 1-based item the text came from


def imperative_kinds(text: str) -> list[str]:
    """Which kinds of imperative text a statement holds, strongest first."""
    kinds = []
    if _SHELL.search(text):
        kinds.append(SHELL)
    if _CREDENTIALS.search(text):
        kinds.append(CREDENTIALS)
    if _URL.search(text) and _FETCH.search(_URL.sub(" ", text)):
        kinds.append(URL)
    if _ADDRESSED.search(text) or _IMPERATIVE.search(text):
        kinds.append(INSTRUCTION)
    return kinds


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    """Content words, lower case, crudely stemmed: what two texts share when one was copied from the other."""
    return {_stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1}


def _forms(stem: str) -> Iterator[str]:
    """The lower-case tokens ``words`` turns into ``stem``: it, or it with one of ``_stem``'s suffixes."""
    for form in (stem, stem + "ing", stem + "ed", stem + "es", stem + "s"):
        if _stem(form) == stem and form not in _STOP and len(form) > 1:
            yield form


# Every byte that cannot be in a token becomes a space, so an ASCII text's tokens are its runs with the ``_.-`` at
# their edges dropped (what ``_WORD`` finds: a token starts and ends with a letter or digit).
_RUNS = bytes(
    ord(chr(c).lower()) if chr(c).lower() in "abcdefghijklmnopqrstuvwxyz0123456789_.-" else 32 for c in range(128)
)
_RUNS += b" " * 128
_EDGES = (b" -", b" _", b" .", b"- ", b"_ ", b". ")


def _tokens(text: str, lowered: str) -> set[bytes]:
    """The distinct lower-case tokens of ``text`` (UTF-8), as ``_WORD`` finds them. An ASCII text is split in C: its
    bytes mapped to token bytes or spaces, the punctuation at each run's edges blanked, then ``split`` (a third of
    ``findall``'s cost, which made a string of every token). Elsewhere a few letters lower to two characters
    (U+0130), so each token found is lowered instead."""
    if not text.isascii():
        return {m.lower().encode() for m in set(_WORD.findall(text))}
    runs = b" " + lowered.encode().translate(_RUNS) + b" "
    blanked = True
    while blanked:  # "--x" needs two passes; most texts one or none
        blanked = False
        for edge in _EDGES:
            if edge in runs:
                runs = runs.replace(edge, b"  ")
                blanked = True
    return set(runs.split())


def coverage(statement: set[str], source: set[str]) -> float:
    return len(statement & source) / len(statement) if statement else 0.0


def distinctive_tokens(text: str) -> set[str]:
    """The distinctive tokens of a statement: its URLs and the commands it pipes into a shell."""
    out = {u.rstrip(".,;:").lower() for u in _URL.findall(text)}
    out |= {m.group(0).lower() for m in _SHELL.finditer(text)}
    return out


class Sources:
    """The texts of a rollout's items by class, for asking where a statement's words came from. ``external``: the
    items whose text came from outside the conversation (any tool output, a shell's included, since ``cat`` prints a
    file as faithfully as a fetch does; another agent's message; injected context).

    Built for the cost of one scan: each item's distinct tokens are collected in C (``set(findall)``), and only the
    words of the statements asked about are looked up in them (``index``, once per rollout), so no item's words are
    lowered and stemmed one at a time. Every answer is what ``words(item)`` per item would give
    (``tests/trust/test_sources_index.py``)."""

    def __init__(
        self,
        texts: list[str],
        classes: list[Trust],
        external: list[bool] | None = None,
        said: Callable[[], str] | None = None,
    ) -> None:
        self._raw = texts
        self._lowered: list[str] | None = None
        self._user_text: str | None = None
        self._tokens: list[set[bytes]] | None = None
        self.classes = classes
        self.external = external if external is not None else [c == Trust.TOOL for c in classes]
        self._users = frozenset(n for n, c in enumerate(classes) if c == Trust.USER)
        self._postings: dict[str, list[int]] = {}  # a statement word → the items (0-based) holding it, in order
        self._said: str | None = "" if said is None else None
        self._said_of: Callable[[], str] | None = said

    @property
    def said(self) -> str:
        """The user's words as the quote check normalises them (``phase1.quotes.user_words``), computed when a
        statement first quotes the user."""
        if self._said is None:
            self._said = self._said_of() if self._said_of is not None else ""
        return self._said

    @property
    def texts(self) -> list[str]:
        """The items' texts in lower case (for the distinctive tokens' substring test)."""
        if self._lowered is None:
            self._lowered = [t.lower() for t in self._raw]
        return self._lowered

    @property
    def user_text(self) -> str:
        """What the user typed, in lower case, one item a line."""
        if self._user_text is None:
            self._user_text = "\n".join(self.texts[n] for n in sorted(self._users))
        return self._user_text

    def index(self, statements: Iterable[str]) -> None:
        """Find the words of ``statements`` in every item at once: one pass over the items for all of them."""
        forms: dict[bytes, str] = {}
        for statement in statements:
            for stem in words(statement):
                if stem not in self._postings:
                    self._postings[stem] = []
                    forms.update((form.encode(), stem) for form in _forms(stem))
        if not forms:
            return
        if self._tokens is None:  # only the items an answer reads: the external ones and the user's
            self._tokens = [
                _tokens(raw, low) if outside or n in self._users else set()
                for n, (raw, low, outside) in enumerate(zip(self._raw, self.texts, self.external, strict=True))
            ]
        for n, tokens in enumerate(self._tokens):
            for form in tokens & forms.keys():
                posting = self._postings[forms[form]]
                if not posting or posting[-1] != n:
                    posting.append(n)

    def origin(self, statement: str) -> tuple[int | None, float, float]:
        """(the best external item for the statement's words, its coverage, the user's coverage)."""
        mine = words(statement)
        self.index([statement])
        shared: dict[int, int] = {}
        user_shared = 0
        for stem in mine:
            posting = self._postings[stem]
            for n in posting:
                shared[n] = shared.get(n, 0) + 1
            user_shared += any(n in self._users for n in posting)
        tokens = distinctive_tokens(statement)
        best, best_cov = None, 0.0
        candidates = range(len(self.external)) if tokens else sorted(shared)
        for n in candidates:
            if not self.external[n]:
                continue
            cov = shared.get(n, 0) / len(mine) if mine else 0.0
            if tokens and any(t in self.texts[n] for t in tokens):
                cov = max(cov, 1.0)
            if cov > best_cov:
                best, best_cov = n + 1, cov
        user_cov = user_shared / len(mine) if mine else 0.0
        if tokens and any(t in self.user_text for t in tokens):
            user_cov = 1.0
        return best, best_cov, user_cov

    def from_tool(self, statement: str) -> int | None:
        """The external item a statement's words come from (and not from the user's), or None."""
        item, cov, user_cov = self.origin(statement)
        if item is None or cov < MIN_COVERAGE or user_cov >= cov:
            return None
        return item

    def flag(self, statement: str) -> Flag | None:
        """A possible injection: imperative text whose words come from a tool-class item, not from the user."""
        kinds = imperative_kinds(statement)
        if not kinds:
            return None
        item = self.from_tool(statement)
        return Flag(kinds[0], item) if item is not None else None
