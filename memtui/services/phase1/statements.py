"""Durable statements in what a person typed: the standing rules, preferences and facts worth remembering.

A sentence is durable when it is normative (must, need(s), should, always, never, prefer, avoid, don't, "use X for
Y", remember, from now on) and nothing marks it as being about this session only: a question, a request ("can
you", "please", "let's", "try"), a time limit (yet, for now, this time, again), an instruction aimed at the agent's
current task ("you should", "I need you to"), a reference to the agent's own output ("the version you showed"),
or an idiom where the normative word is not a rule ("never mind", "always the same", "I never noticed", "it must
be"). Tuned on ``tests/fixtures/offline_tuning.py``; measured on the held-out ``tests/fixtures/offline_eval.py``
by ``benchmarks/offline_extractor.py``. ``is_standing`` (the extractor's test) also leaves out one-off task requests;
tuned on ``tests/fixtures/extractor_eval/tune/``, measured on its held-out ``heldout/``.
"""

from __future__ import annotations

import re

MIN_CHARS, MAX_CHARS = 8, 400

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])|\n+")
_NORMATIVE = re.compile(
    r"\b(?:always|never|must|mustn'?t|should|shouldn'?t|prefer(?:s|red)?|avoid|needs?|don'?t|do\s+not|remember"
    r"|from\s+now\s+on|make\s+sure)\b"
    r"|\buse\s+(?:\S+\s+){1,5}?(?:for|instead\s+of|rather\s+than|over|not|everywhere|whenever|when)\b",
    re.IGNORECASE,
)
_STANDING = re.compile(r"\b(?:always|never|from\s+now\s+on|in\s+future|every\s+time)\b", re.IGNORECASE)
_TIME_LIMITED = re.compile(
    r"\b(?:yet|for\s+now|right\s+now|this\s+time|today|tonight|just\s+now|at\s+the\s+moment|for\s+the\s+moment"
    r"|currently|anymore|again|for\s+this\s+(?:task|pr|change|one))\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^(?:(?:can|could|would|will)\s+you|let'?s|try|ok(?:ay)?|thanks|thank\s+you|great|nice|good|cool|hmm|yes|yeah"
    r"|go\s+ahead|now)\b",
    re.IGNORECASE,
)
_PLEASE = re.compile(r"^please\b", re.IGNORECASE)
_AT_THE_AGENT = re.compile(r"^(?:you|i\s+need\s+you|we\s+need\s+you|i\s+want\s+you)\b", re.IGNORECASE)
_ABOUT_THE_OUTPUT = re.compile(
    r"\byou\s+(?:showed|suggested|proposed|wrote|gave|did|made|used|tried|added|changed)\b"
    r"|\b(?:the|your)\s+(?:first|second|third|last|previous|other|earlier|new)\s+(?:version|one|approach|option|attempt|draft)\b"
    r"|\bline\s+\d+\b",
    re.IGNORECASE,
)
_IDIOM = re.compile(
    r"\bnever\s+mind\b|\bdon'?t\s+(?:worry|bother|care)\b|\balways\s+the\s+same\b|\balways\s+(?:get|gets|got)\b"
    r"|\bI\s+(?:always|never)\s+(?:\w+ed|saw|knew|thought|heard|got|had|did|seen)\b"
    r"|^(?:it|that|this|there)(?:'s|\s+is)?\s+(?:must|should|needs?)\b"
    r"|\bmust\s+(?:be|have)\s+(?:been|something|because)\b",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """The sentences of a message, whitespace collapsed."""
    out = []
    for part in _SENTENCE.split(text):
        s = " ".join(part.split())
        if s:
            out.append(s)
    return out


def is_durable(sentence: str) -> bool:
    """True when ``sentence`` states a standing rule, preference or fact (see the module docstring)."""
    s = sentence.strip()
    if not (MIN_CHARS <= len(s) <= MAX_CHARS) or s.endswith("?"):
        return False
    if not _NORMATIVE.search(s) or _TIME_LIMITED.search(s) or _IDIOM.search(s) or _ABOUT_THE_OUTPUT.search(s):
        return False
    standing = _STANDING.search(s) is not None
    if _REQUEST.search(s) or _AT_THE_AGENT.search(s):
        return standing
    return not (_PLEASE.search(s) and not standing)


# A one-off task request with a normative word in it ("Prepare a demo for tomorrow; it must stay under 8 minutes",
# "I need a VAT report by Friday", "Make sure the fix has a test", "The tickets should be short"): the current
# task's, not a standing order. Only the extractor asks (``is_standing``); health keeps ``is_durable``'s view.
_TASK_VERB = re.compile(
    r"^(?:(?:also|and|then|now|first|next|please|ok(?:ay)?|so)\b[\s,]*)*"
    r"(?:prepare|fix|write|implement|create|add|build|draft|find|investigate|look|check|refactor|update|rename|move"
    r"|change|remove|delete|debug|review|summari[sz]e|explain|show|give|send|generate|bump|upgrade|set\s+up|migrate"
    r"|port|rewrite|clean|split|convert|translate|deploy|benchmark|profile|help|figure|get|open|close|publish|install"
    r"|run|make\s+sure|ensure|finish|complete|start|continue|go|redo|polish|tidy|improve|optimi[sz]e|speed\s+up)\b",
    re.IGNORECASE,
)
_ONE_OFF = re.compile(
    r"\b(?:tomorrow|tonight|asap|this\s+(?:week|morning|afternoon|evening|sprint|quarter)|next\s+(?:week|monday"
    r"|tuesday|wednesday|thursday|friday|sprint)|(?:by|for|on|before|until)\s+(?:the\s+)?(?:monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|eod|end\s+of\s+(?:the\s+)?(?:day|week)|noon|the\s+(?:demo|meeting|call"
    r"|review|standup|presentation|sales\s+call|deadline)))\b"
    r"|^(?:i|we)\s+(?:need|want|would\s+like|'d\s+like)\s+(?:a|an|some|you)\b"
    r"|^(?:the|this|that|your|my)\s+(?:demo|scenario|presentation|slides?|deck|talk|video|tickets?|draft|summary"
    r"|write-?up|email|pr|pull\s+request|diff|patch|fix|change|changes|answer|result|output|new\s+version)"
    r"\s+(?:must|should|needs?|has\s+to)\b",
    re.IGNORECASE,
)
_STANDING_SCOPE = re.compile(r"\b(?:always|never|from\s+now\s+on|in\s+future|going\s+forward|every\s+time"
                             r"|whenever|each\s+time|by\s+default|(?:before|after|on|in)\s+(?:every|each|any)\s+\w+)\b", re.IGNORECASE)  # fmt: skip


def is_one_off(sentence: str) -> bool:
    """A request for the current task (see ``_ONE_OFF`` above), unless it says it holds from now on."""
    s = sentence.strip()
    if _STANDING_SCOPE.search(s):
        return False
    return _TASK_VERB.search(s) is not None or _ONE_OFF.search(s) is not None


def is_standing(sentence: str) -> bool:
    """``is_durable`` and not a one-off task request: what the offline extractor keeps as a standing rule."""
    return is_durable(sentence) and not is_one_off(sentence)


# Rules said without a normative word: "has to", a standing "keep X at Y", or an instruction with a recurrence
# ("before every deploy, run ..."). Too broad for the extractor, which would keep every request that says "each";
# used where another signal already ties the sentence to a known rule (memory health's restatements).
_OBLIGATION = re.compile(
    r"\b(?:has|have|had|got)\s+to\b|\b(?:is|are)\s+(?:to\s+be|(?:not\s+)?(?:allowed|permitted|required|mandatory)"
    r"|forbidden|banned|prohibited|off[- ]limits)\b",
    re.IGNORECASE,
)
_STANDING_VERB = re.compile(r"^(?:keep|stick\s+(?:to|with)|stay|leave)\b", re.IGNORECASE)
_RECURRENCE = re.compile(r"\b(?:each|every|whenever|any\s+time)\b", re.IGNORECASE)
_LEADING_CONDITION = re.compile(
    r"^(?:before|after|on|for|with|in|at|when|whenever|once)\b[^,]{1,80},\s*", re.IGNORECASE
)
# base forms that start an instruction; an imperative needs a verb, and without a tagger a list of the verbs that
# instructions to a coding agent start with is what tells "Run the tests on every push" from "Tests run on every push"
_INSTRUCTION_VERBS = frozenset(
    [
        "add",
        "ask",
        "avoid",
        "build",
        "bump",
        "call",
        "check",
        "clean",
        "clear",
        "close",
        "commit",
        "compile",
        "create",
        "delete",
        "deploy",
        "document",
        "format",
        "generate",
        "include",
        "install",
        "keep",
        "label",
        "lint",
        "log",
        "merge",
        "migrate",
        "name",
        "open",
        "pin",
        "prefer",
        "push",
        "put",
        "rebase",
        "record",
        "release",
        "remove",
        "rename",
        "run",
        "save",
        "send",
        "set",
        "ship",
        "sign",
        "sort",
        "squash",
        "start",
        "store",
        "tag",
        "test",
        "translate",
        "type",
        "update",
        "upgrade",
        "upload",
        "use",
        "validate",
        "verify",
        "write",
    ]
)


# a standing prohibition said as a noun phrase and where it holds: "No database migrations on Fridays, please."
_PROHIBITION = re.compile(
    r"^no\s+(?!(?:problem|worries|idea|thanks|need|way|one|wait|doubt|rush)\b)[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}"
    r"\s+(?:on|in|at|during|before|after|without|until|inside|under|to|from)\s+\w",
    re.I,
)


def is_rule_like(sentence: str) -> bool:
    """``is_durable``, or a standing rule said without a normative word (see ``_OBLIGATION`` above), still not a
    question, time-limited, about the agent's output or an idiom."""
    s = sentence.strip()
    if is_durable(s):
        return True
    if not (MIN_CHARS <= len(s) <= MAX_CHARS) or s.endswith("?"):
        return False
    if _TIME_LIMITED.search(s) or _IDIOM.search(s) or _ABOUT_THE_OUTPUT.search(s) or _AT_THE_AGENT.search(s):
        return False
    main = _LEADING_CONDITION.sub("", s)
    first = main.split(maxsplit=1)[0].lower() if main.split() else ""
    if _OBLIGATION.search(s) or _STANDING_VERB.search(main) or _PROHIBITION.search(main):
        return True
    return _RECURRENCE.search(s) is not None and first in _INSTRUCTION_VERBS


def normalized(statement: str) -> str:
    """The dedupe key: lower case, words only."""
    words = (w.strip("./=-") for w in re.findall(r"[a-z0-9_+./=-]+", statement.lower()))
    return " ".join(w for w in words if w)
