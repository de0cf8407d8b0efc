"""Deterministic rules that say how one later user sentence relates to one memory block.

A block's statement (the user's quoted words when the bullet quotes them, else the bullet's text) is cut into
clauses; each clause has content terms (the normalised words of ``phase1.statements.normalized``, lightly stemmed,
stop words out) and, per term, a polarity: negative when a negator (never, don't, avoid, not, no longer...) stands
before it in its phrase. A later sentence of the user is then:

- **restated**: a durable statement (the offline extractor's recogniser, ``phase1.statements.is_durable``) holding
  most of a clause's terms with the same polarities and no other value in their place;
- **contradicted**: a durable or change-marked statement ("now", "no longer", "instead", "anymore") on the same
  topic that flips a shared term's polarity ("use npm" after "never npm"), puts another value of the same kind in
  a value's place ("Thursdays" after "Tuesdays", port 8002 after 8001, yarn after pnpm) or says the old value is
  out ("not on Tuesdays");
- **corrected**: a correction of the agent ("no, ...", "you forgot", "I told you", "again") on the clause's topic
  that agrees with the block;
- otherwise nothing.

Tuned on ``tests/fixtures/health_tuning.py``; measured on the held-out ``tests/fixtures/health_eval.py`` by
``benchmarks/health.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from memtui.phase1.offline import _STOPWORDS
from memtui.phase1.statements import is_durable, normalized, sentences


class Relation(StrEnum):
    RESTATED = "restated"
    CONTRADICTED = "contradicted"
    CORRECTED = "corrected"


# Kinds of values: two different members of one kind in the same place say different things.
_VALUE_KINDS: dict[str, frozenset[str]] = {
    "weekday": frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]),
    "package_manager": frozenset(["npm", "pnpm", "yarn", "bun", "pip", "uv", "poetry", "pipenv", "conda"]),
    "test_runner": frozenset(["jest", "vitest", "mocha", "pytest", "unittest", "nose"]),
    "linter": frozenset(["ruff", "flake8", "pylint", "black", "eslint", "biome", "prettier"]),
    "vcs_flow": frozenset(["rebase", "merge", "squash"]),
    "indent": frozenset(["tabs", "tab", "spaces", "space"]),
    "quote": frozenset(["single", "double"]),
    "timezone": frozenset(["utc", "local", "europe/lisbon", "cet", "pst", "est"]),
    "shell": frozenset(["bash", "zsh", "fish", "sh"]),
    "db": frozenset(["postgres", "postgresql", "mysql", "sqlite", "mariadb"]),
    "container": frozenset(["docker", "podman"]),
    "cloud_region": frozenset(["us-east-1", "us-west-2", "eu-west-1", "eu-central-1"]),
    "logging_library": frozenset(
        ["structlog", "loguru", "logbook", "log4j", "logback", "slf4j", "winston", "pino", "bunyan", "zap", "logrus"]
    ),
}
# Words that say the opposite of each other without a negator: "agents can write to it" after "read-only".
_OPPOSITES: dict[str, frozenset[str]] = {
    "read-only": frozenset(["write", "writable", "writeable", "read-write"]),
    "readonly": frozenset(["write", "writable", "writeable", "read-write"]),
    "optional": frozenset(["required", "mandatory"]),
    "required": frozenset(["optional"]),
    "mandatory": frozenset(["optional"]),
    "enabled": frozenset(["disabled"]),
    "disabled": frozenset(["enabled"]),
    "public": frozenset(["private"]),
    "private": frozenset(["public"]),
    "sync": frozenset(["async"]),
    "async": frozenset(["sync"]),
}
_OPPOSITE_WORDS = frozenset(_OPPOSITES).union(*_OPPOSITES.values())  # compared as written, not by their roots
_KIND_OF = {value: kind for kind, values in _VALUE_KINDS.items() for value in values}
_NUMBER = re.compile(r"^\d+(?:\.\d+)*$")
_HOSTPORT = re.compile(r"^(?:[\w.-]+:)?(\d{2,5})$")

_NEGATOR = re.compile(
    r"\b(?:never|don'?t|do\s+not|does\s+not|doesn'?t|avoid|mustn'?t|must\s+not|shouldn'?t|should\s+not|no\s+longer"
    r"|not|no|stop|stopped|without|instead\s+of|rather\s+than|over)\b",
    re.I,
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:;|,?\s+and\s+(?=(?:never|always|don'?t|do\s+not|use|keep|avoid|run|prefer)\b)|\.\s)\s*", re.I
)
# where a negated object ends and its context begins
_SCOPE_END = re.compile(r"\s(?:in|for|when|while|during|within|inside|unless|if|except|across)\s", re.I)
_PHRASE_SPLIT = re.compile(r",|\bbut\b|\bbecause\b|\bso\b", re.I)
_CHANGE = re.compile(
    r"\b(?:now|no\s+longer|anymore|any\s+more|instead|from\s+now\s+on|changed|moved|switched|switch|these\s+days"
    r"|not\s+\w+\s+any\s*more)\b",
    re.I,
)
_CORRECTION = re.compile(
    r"^(?:no\b|nope\b|wrong\b|stop\b|wait\b|undo\b)|\b(?:you\s+forgot|you\s+didn'?t|i\s+told\s+you|i\s+said|i\s+asked"
    r"|that'?s\s+(?:wrong|not)|that\s+is\s+(?:wrong|not)|again|why\s+did\s+you|you\s+(?:should|were\s+supposed)"
    r"|as\s+i\s+said|like\s+i\s+said|not\s+what\s+i)\b",
    re.I,
)
_QUOTE = re.compile(r'(?:the user said|remember|forget):\s*"(.+?)"', re.I)
_TAIL = re.compile(r"\s*(?:\[(?:item|items|Task)\s[^\]]*\]\s*)+|\s*->.*$")
_EXTRA_STOP = frozenset(
    [
        "it",
        "be",
        "been",
        "any",
        "all",
        "here",
        "repo",
        "project",
        "code",
        "things",
        "thing",
        "one",
        "like",
        "just",
        "also",
        "only",
        "before",
        "after",
        "about",
        "into",
        "onto",
        "off",
        "out",
        "up",
        "must",
        "need",
        "needs",
        "keep",
        "do",
        "not",
        "never",
        "no",
        "longer",
        "anymore",
        "again",
        "stop",
        "told",
        "said",
        "forgot",
        "wrong",
        "are",
        "were",
        "was",
        "has",
        "had",
        "they",
        "he",
        "she",
        "should",
        "shouldn",
        "mustn",
        "doesn",
        "didn",
        "without",
        "rather",
        "than",
        "over",
        "go",
        "goes",
        "done",
        "every",
        "time",
        "future",
        "on",
        "off",
        "yes",
        "ok",
        "okay",
        "now",
        "day",
        "days",
        "want",
        "like",
        "let",
        "asked",
        "told",
        "supposed",
        "why",
        "did",
    ]
)
STOP = _STOPWORDS | _EXTRA_STOP


def stem(word: str) -> str:
    """A light stem, enough to meet "deploys" with "deploy" and "tests" with "test"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def root(word: str) -> str:
    """``stem`` and the verb's endings too, so "committing" meets "commit" and "optimized" meets "optimize".

    Only for comparing sentences: the search index stems its own way (porter), so its queries use ``stem``."""
    w = stem(word)
    if w in _OPPOSITE_WORDS or not w.isalpha():
        return w
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 5 and w.endswith("ed"):
        w = w[:-2]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]  # committ -> commit, runn -> run
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def terms(text: str, *, roots: bool = True) -> list[str]:
    """Content terms in order: normalised words, stemmed (to their roots unless ``roots`` is off), stop words
    out."""
    out = []
    for w in normalized(text.replace("`", " ")).split():
        w = w.strip(":,;'\"()")
        key, eq, value = w.partition("=")
        if eq and key and value:  # TZ=UTC, --workers=1: the setting is the topic, its value a value of that setting
            out += [key.strip("-"), f"{key.strip('-')}={value}"]
            continue
        if len(w) < 2 or w in STOP:
            continue
        # values are names: "postgres" is no plural
        s = w if w in _KIND_OF else root(w) if roots else stem(w)
        if s not in STOP:
            out.append(s)
    return out


def value_kind(term: str) -> str | None:
    if term in _KIND_OF:
        return _KIND_OF[term]
    key, eq, _ = term.partition("=")
    if eq:
        return f"setting:{key}"
    if _HOSTPORT.match(term) or _NUMBER.match(term):
        return "number"
    return None


@dataclass(frozen=True)
class Clause:
    text: str
    polarity: dict[str, int]  # term -> +1 / -1
    context: frozenset[str] = frozenset()  # terms of where or when it applies ("in the plugin API"), not of what

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(self.polarity)

    def values(self) -> dict[str, str]:
        """value term -> its kind."""
        return {t: k for t in self.polarity if (k := value_kind(t)) is not None}


def clause_of(text: str) -> Clause:
    """Terms of ``text`` with their polarity: -1 for a term after a negator in its phrase, up to the context that
    follows ("over inheritance | in the plugin API": the plugin API is where, not what is negated)."""
    polarity: dict[str, int] = {}
    context: set[str] = set()
    for phrase in _PHRASE_SPLIT.split(text):
        negated = (0, 0)
        if m := _NEGATOR.search(phrase):
            end = _SCOPE_END.search(phrase, m.end())
            negated = (m.end(), end.start() if end else len(phrase))
        where = _SCOPE_END.search(phrase)
        for m in re.finditer(r"\S+", phrase):
            for t in terms(m.group(0)):
                sign = -1 if negated[0] <= m.start() < negated[1] and negated[1] > negated[0] else 1
                polarity.setdefault(t, sign)
                if where is not None and m.start() >= where.end() and value_kind(t) is None:
                    context.add(t)
    return Clause(text, polarity, frozenset(context - {t for t in polarity if t not in context}))


def statement_of(bullet: str) -> str:
    """What a memory bullet says: the user's quoted words when it quotes them, else its text without tags."""
    if m := _QUOTE.search(bullet):
        return m.group(1)
    body = bullet.strip().lstrip("-* ").strip()
    return _TAIL.sub("", body).strip()


def clauses(statement: str) -> list[Clause]:
    parts = [p for s in sentences(statement) for p in _CLAUSE_SPLIT.split(s) if p and p.strip()]
    out = [c for p in parts if (c := clause_of(p)).polarity]
    return out or [clause_of(statement)]


def _substituted(block: Clause, said: Clause) -> bool:
    """A value of the block has, in the later sentence, another value of its kind in its place (and is not
    restated there positively), or is itself negated there."""
    mine = block.values()
    theirs = said.values()
    for term, sign in block.polarity.items():
        if any(said.polarity.get(o) == sign for o in _OPPOSITES.get(term, ())) and term not in said.polarity:
            return True
    for value, kind in mine.items():
        if said.polarity.get(value) == -block.polarity[value]:
            return True
        if value in said.polarity:
            continue
        if any(k == kind and v != value and said.polarity[v] == block.polarity[value] for v, k in theirs.items()):
            return True
    return False


def _flipped(block: Clause, said: Clause) -> list[str]:
    return [t for t in block.terms & said.terms if block.polarity[t] != said.polarity[t]]


def relate_clause(block: Clause, sentence: str) -> Relation | None:
    """How one sentence of the user relates to one clause of a block (see the module docstring)."""
    s = sentence.strip()
    if not s or s.endswith("?"):
        return None
    said = clause_of(s)
    shared = block.terms & said.terms
    if not shared:
        return None
    topic = block.terms - set(block.values())
    shared_topic = shared & topic
    coverage = len(shared) / max(1, len(block.terms))
    durable = is_durable(s)
    correction = _CORRECTION.search(s) is not None
    changed = _CHANGE.search(s) is not None
    flips = _flipped(block, said)
    substituted = _substituted(block, said)
    # the topic is what the block is about, values aside: "The X job runs on Tuesdays" and "The Y job runs on
    # Thursdays" share a day's kind and a verb, not a topic
    topic_coverage = len(shared_topic) / max(1, len(topic))
    on_topic = len(shared_topic) >= 2 or (len(shared_topic) >= 1 and topic_coverage >= 0.5)
    kept_values = [v for v in block.values() if said.polarity.get(v) == block.polarity[v]]
    if correction and not changed and (not substituted or kept_values):
        # the user is putting the agent right; a negation in a correction ("not npm, I told you") repeats the rule
        if (coverage >= 0.4 and len(shared) >= 2) or (len(shared) >= 1 and any(value_kind(t) for t in shared)):
            return Relation.CORRECTED
        return None
    if (durable or changed or correction) and (substituted or flips):
        value_flip = any(value_kind(t) for t in flips)
        if substituted and (on_topic or (changed and shared_topic)):
            return Relation.CONTRADICTED
        if flips and (value_flip or len(shared - block.context) >= 2) and on_topic:
            return Relation.CONTRADICTED
        if value_flip and len(block.terms) <= 3:
            return Relation.CONTRADICTED
        return None
    what = shared - block.context  # a restatement says the what again, not only the where
    # half the block's words can be its subject alone ("API responses ... should include a request id"): a sentence
    # holding only half of them restates the block when it says little else (half of both sentences' words shared)
    overlap = len(shared) / max(1, len(block.terms | said.terms))
    close = coverage >= 0.75 or (coverage >= 0.5 and overlap >= 0.5)
    if durable and close and len(shared) >= 2 and what and (kept_values or not block.values()):
        return Relation.RESTATED  # a block that names values is restated only with one of them
    return None


_ORDER = {Relation.CONTRADICTED: 0, Relation.CORRECTED: 1, Relation.RESTATED: 2}


def relate(block_statement: str | list[Clause], sentence: str) -> Relation | None:
    """The strongest relation of ``sentence`` to any clause of a block: contradicted > corrected > restated."""
    parts = clauses(block_statement) if isinstance(block_statement, str) else block_statement
    found = [r for c in parts if (r := relate_clause(c, sentence)) is not None]
    return min(found, key=_ORDER.__getitem__) if found else None


def relate_message(block: list[Clause], message: str) -> list[tuple[Relation, str]]:
    """Each sentence of a user message that relates to the block, with its relation."""
    out = []
    for s in sentences(message):
        if (r := relate(block, s)) is not None:
            out.append((r, s))
    return out


def candidate_terms(block: list[Clause], limit: int = 8) -> list[str]:
    """The words that find a block's candidate messages in the FTS index: values first, then the rarest-looking
    (longest) topic words."""
    all_terms: dict[str, None] = {}
    for c in block:
        for t in sorted(set(terms(c.text, roots=False)), key=lambda t: (value_kind(t) is None, -len(t), t)):
            all_terms.setdefault(t, None)
    return list(all_terms)[:limit]
