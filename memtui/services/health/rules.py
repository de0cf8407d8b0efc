"""Deterministic rules that say how one later user sentence relates to one memory block.

A block's statement (the user's quoted words when the bullet quotes them, else the bullet's text) is cut into
clauses; each clause has content terms (the normalised words of ``phase1.statements.normalized``, lightly stemmed,
numbers in words as digits, stop words out) and, per term, a polarity: negative when a negator (never, don't,
avoid, not, no longer, dropped...) stands before it in its phrase, when it is the old side of a replacement ("from
X to Y", "replaced X with Y", "phasing out X", "moving Y off X", "now that X left"; the owner of what is replaced,
"knex's query builder", stays) or the subject of "is not allowed" / "is retired" / "is gone". A subject
before "must never" takes no side (it may be what is forbidden or only where), and a flip counts only when it holds
the negated predicate ("Database migrations must be reviewed" flips nothing of "Don't run database migrations"). A
capitalised word inside a sentence is a name, remembered with the word before it (its place); a number, with its
slot (its unit, else the word it is the value of: a batch size of 64 is no seed of 42; the slot may be said with
another of the sentence's words: "the connection pool to 50" after "a pool size of 20"); a path and a version
("3.12-slim"; a number after "upgraded to" is a version of whatever the block names) and a folder ("dags/") are values
too. Both sides are first said one way (``vocabulary.rewrite``: "nightly" is "every night",
"don't merge unless CI passes" is "merge only after CI passes", "turn X off" is "turn off X"), light verbs ("live
in", "are managed in", "go through") are left out, and the values of developer vocabulary (CDNs, dependency bots,
data formats, recurrences...) are kinds (``vocabulary.VALUE_KINDS``). A later sentence of the user is then:

- **restated**: a rule-like statement (``phase1.statements.is_rule_like``: the offline extractor's durable
  statements, standing rules said without a normative word, and restrictions: "..., nowhere else") holding most of a clause's terms with the same
  polarities and one of its values; or the same fact said plainly with all its values and next to nothing else
  (for a rule that names a value, with another verb: "Background jobs go through Celery.");
- **contradicted**: a rule-like or change-marked statement ("now", "no longer", "instead", "switched", "actually")
  on the same topic that flips a shared term's polarity ("use npm" after "never npm"), puts another value of the
  same kind in a value's place ("Thursdays" after "Tuesdays", port 8002 after 8001, yarn after pnpm, one approval
  after two), another name in a name's place ("with Cypress" after "with Playwright", the new side of a
  replacement, "we're on X now"), an antonym (kept for cleared, in for out, fixed for random) or says the old value
  is out ("not on Tuesdays", "dropped iOS 15", "is being retired", "turned X off"), or that a requirement is
  dropped ("is no longer required"); what the block names said to be out by a construction of change ("switched
  from WireMock to MockServer", "Okta is gone", "phasing out dbt") needs no kind for the names, only the same
  subject; with no word of change at all, a plain present statement of the block's subject that puts another value
  of the same kind (a name for any named thing) in the block's place and says nothing else, nor the block's value of
  that kind again, changes it ("feature flags are managed in flagsmith", "grype scans our container images"), unless
  it adds ("also", "too", "and unleash for ..."), is a question, a supposition, a report of someone else or a past
  event; a supposition ("if we upgrade to ...") contradicts nothing; a shared word said of another thing ("the idle timeout" after "the request
  timeout") is no shared topic, and both sides denying the same thing agree however far each negation reaches;
- **corrected**: a correction of the agent ("no, ...", "you forgot", "I told you", "why did you ...?") on the
  clause's topic that agrees with the block;
- otherwise nothing.

The values are read by their shape, not from a list of products: a word outside ordinary English prose
(``common_words.txt``, see ``scripts/gen_common_words.py``) or with a dot in it is a name whatever its case
("switched to gotenberg"), unless it qualifies the noun after it ("the e2e suite") or follows "a"; a frequency is
one value however it is said ("every_4_hour" for "every 4 hours", "every_1_night" for "nightly") and compares with
a weekday; what says which one of the subject ("the kafka cluster" after "The ClickHouse cluster", "the sdk docs"
after "The API docs") makes another subject; a going is one closed class (``GOING``) that every rule reads, said
of its subject ("X is out", "has been cancelled", "is being ripped out", "got too pricey", "isn't worth it", "X's
contract ended", "instead of X", "zendesk -> plain", "stopped paying for X", and negated continuity or a negative
evaluation: "is going away", "is legacy", "wasn't renewed", "was way too slow", "isn't used anymore", "aren't in X
anymore"), unless it is said for another use ("too expensive for the backend", "too noisy on weekends"); an event ("... gone after the reindex failed", "yesterday", "by mistake") is no
standing change; a weighed or reported change ("we considered X", "dana thinks we should ...") is none; a sentence
that opens with a subject of its own ("map tiles moved from mapbox to maptiler") moves another thing off the block's
value; what says when a sentence holds ("last quarter", "going forward", "since monday") is left out before its
words are read; a name anywhere in the predicate ("built with X", "built on Y", "hosted by", "goes through") is the
subject's value; an abbreviation ("k8s", "tf", "pg") is the name it stands for; a verb's noun is the verb ("TLS
termination", "terminates tls"), a compound is one word however it is written ("ad hoc", "ad-hoc", "adhoc"), and the
subject said by its head noun alone ("embeddings" for "vector embeddings") is the block's.

Tuned on ``tests/fixtures/health_tuning.py``; measured on the held-out ``tests/fixtures/health_eval.py`` by
``benchmarks/health.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from memtui.domain.health import Relation
from memtui.services.health.vocabulary import FILLERS, FREQUENCY, LIGHT_VERBS, SLOT_NOUNS, SYNONYMS, rewrite, strip_time
from memtui.services.health.vocabulary import KIND_OF as _KIND_OF
from memtui.services.health.vocabulary import OPPOSITES as _OPPOSITES
from memtui.services.phase1.offline import _STOPWORDS
from memtui.services.phase1.statements import is_rule_like, normalized, sentences

# past forms without -ed, to their base, so "is written in German" meets "Write ... in English"
_IRREGULAR = {
    form: base
    for base, forms in {
        "write": "wrote written",
        "run": "ran",
        "build": "built",
        "keep": "kept",
        "make": "made",
        "give": "gave given",
        "take": "took taken",
        "send": "sent",
        "begin": "began begun",
        "choose": "chose chosen",
        "drive": "drove driven",
        "freeze": "froze frozen",
        "hide": "hid hidden",
        "show": "shown",
        "know": "knew known",
        "break": "broke broken",
        "speak": "spoke spoken",
        "find": "found",
        "hold": "held",
        "leave": "left",
        "lose": "lost",
        "pay": "paid",
        "sell": "sold",
        "spend": "spent",
        "throw": "threw thrown",
        "bring": "brought",
        "buy": "bought",
        "teach": "taught",
        "catch": "caught",
        "fall": "fell fallen",
        "feed": "fed",
        "grow": "grew grown",
        "stand": "stood",
        "understand": "understood",
        "win": "won",
        "shut": "shut",
        "split": "split",
        "sit": "sat",
        "mean": "meant",
        "lend": "lent",
        "bind": "bound",
        "wind": "wound",
        "light": "lit",
        "slide": "slid",
        "strike": "struck",
        "swing": "swung",
        "draw": "drew drawn",
        "fly": "flew flown",
        "ride": "rode ridden",
        "rise": "rose risen",
        "shake": "shook shaken",
        "steal": "stole stolen",
        "tear": "tore torn",
        "wear": "wore worn",
        "forbid": "forbade forbidden",
    }.items()
    for form in forms.split()
}
# words before a noun that say which of its instances, not what kind of it
_GENERIC_MODIFIERS = frozenset(
    ["new", "old", "existing", "current", "future", "remaining", "upcoming", "older", "newer"]
)
# nouns any subject has: "Protobuf files" and "translation JSON files" share no topic
_GENERIC_NOUNS = frozenset(["file", "thing", "stuff", "data", "item"])
# kinds of when a thing happens: "every 4 hours" after "nightly", "on sundays" after "every night"
_WHEN = frozenset(["frequency", "weekday", "period"])
_UPGRADE = frozenset(["upgrad", "downgrad"])  # roots of the verbs whose number is a version
_OPPOSITE_WORDS = frozenset(_OPPOSITES).union(*_OPPOSITES.values())  # compared as written, not by their roots
_NUMBER = re.compile(r"^\d+(?:\.\d+)*$")
# a version, its variant too: "3.12-slim", "v18", "1.4.2-rc1": a number of its slot
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+(?:-[a-z][\w.-]*)?$|^v\d+$")
# numbers in words are numbers ("one approval" after "two approvals"), but not as a pronoun ("the one", "one of")
_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100"}
_NUMBER_WORD = re.compile(
    r"\b(" + "|".join(_NUMBER_WORDS) + r")\b"
    r"(?=\s+(?!(?:of|another|more|by|or|and|at|else|thousand|million|" + "|".join(_NUMBER_WORDS) + r")\b)[a-z])",
    re.I,
)
_NOT_A_NUMBER_AFTER = re.compile(r"(?:\b(?:the|this|that|which|any|no|each)\s|-)$", re.I)  # "the one", "twenty-one"
# a capitalised word inside a sentence is a name (a tool, a language, a service): another name in the same place
# says something else ("with Cypress" after "with Playwright"); acronyms of the trade are no names
_GENERIC_CAPS = frozenset(
    ["i", "ci", "cd", "pr", "prs", "api", "apis", "ui", "ux", "db", "id", "ids", "url", "urls", "ok", "todo", "cli"]
)
_ARTICLE = frozenset(["the", "a", "an", "our", "my", "their", "its"])
# the words a name of the predicate follows: "built with Tauri" and "built on electron", "runs on X", "hosted by X",
# "goes through X", "uses X" all put the name in one place, the subject's value
_PREDICATE = "@"
_PLACES = frozenset(
    [
        *("with", "on", "in", "by", "at", "through", "via", "to", "onto", "into", "under", "behind", "over", "from"),
        *("using", "use", "uses", "used", "is", "are", "be"),
    ]
)
# a replacement typed as an arrow: "zendesk -> plain", "jest → vitest"
_ARROW = r"(?:->|=>|\u2192)"
# the old value of a replacement: "from X to Y" after a change verb, "replaced X with Y", "X was replaced by Y"
_REPLACED = re.compile(
    r"\b(?:switch|mov|migrat|chang|went|gone|port|upgrad|downgrad|transition)\w*\b[^,;]*?\bfrom\s+(?P<a>.+?)\s+(?:to|for)\b"
    r"|\b(?:replac|swap|exchang|substitut)\w*\s+(?:out\s+)?(?!(?:with|by|for)\b)(?P<b>.+?)(?:\s+(?:with|by|for)\b|$)"
    r"|(?P<c>\S+)\s+(?:is|was|has\s+been|got|gets|are|were|have\s+been)\s+(?:replaced|swapped(?:\s+out)?)\b"
    # "moving search indexing off X to Y", "phasing out X in favour of Y": X is what goes
    r"|\b(?:mov|migrat|switch)\w*\s+(?:[\w.-]+\s+){0,3}?(?:off|away\s+from)\s+(?P<e>.+?)(?:\s+(?:to|for|onto)\b|$)"
    r"|\bphas\w*\s+out\s+(?P<f>.+?)(?:\s+(?:in\s+favou?r\s+of|for)\b|$)"
    # "on smol now instead of tokio": what the new one stands instead of is what goes
    r"|\b(?:instead\s+of|in\s+place\s+of)\s+(?P<g>.+?)(?:[,;]|$)"
    # "scalar took over from redoc", "superseded redoc": the one taken over from is what goes
    r"|\b(?:took|takes|taking|taken)\s+over\s+from\s+(?P<h>.+?)(?:\s+(?:for|as|in|on)\b|[,;]|$)"
    # "zendesk -> plain": the arrow's tail is what goes
    r"|(?P<i>[\w.+-]+)\s*" + _ARROW + r""
    # "we stopped paying for statuspage", "quit using X": what we stopped doing with it goes
    r"|\b(?:stopped|quit)\s+\w+ing\s+(?:for\s+|with\s+|on\s+)?(?:the\s+)?(?P<j>[\w.+-]+)",
    re.I,
)
# the new value of a change: "switched to X", "replaced ... with X", "in favour of X": a name there stands in for
# the block's name wherever the block put it
_NEW_VALUE = re.compile(
    r"\b(?:(?:switch|mov|migrat|chang|port|transition)\w*|went)\s+(?:\S+\s+){0,4}?(?:over\s+)?to\s+(?:the\s+)?"
    r"|\breplac\w*\s+(?:\S+\s+){1,4}?(?:with|by)\s+(?:the\s+)?|\bin\s+favou?r\s+of\s+(?:the\s+)?"
    r"|\b(?:we'?re|we\s+are|i'?m|we'?ve\s+gone)\s+(?:on|with|using|over\s+to)\s+(?:the\s+)?|" + _ARROW + r"\s*",
    re.I,
)
# the one closed class of what says a thing goes, shared by every rule that reads a going or a change: retired,
# cancelled, ripped out, EOL, and the evaluations that end a tool ("got too pricey", "not worth it")
GOING = (
    r"retired|retiring|deprecated|phased\s+out|sunset(?:t?ing|ted)?|removed|decommissioned|discontinued|gone|dead|out(?!\s+of\b)"
    r"|wound\s+down|shut\s+down|killed|axed|dropped|ditched|scrapped|ended|expired|cancell?ed|eol|end[- ]of[- ]life"
    r"|(?:ripped|torn|pulled|taken|thrown)\s+out|(?:not|no\s+longer)\s+worth\s+it"
    r"|(?:(?:way|far|much|just|really|so)\s+)?too\s+(?:expensive|pricey|costly|slow|flaky|unreliable|buggy|heavy|clunky"
    r"|painful|limited|noisy|fragile|complicated|complex|annoying|outdated|much\s+hassle)"
    # continuity denied: "X is going away", "X is on its way out", "X is legacy", "X is no longer maintained"
    r"|going\s+away|on\s+(?:its|their)\s+way\s+out|legacy|(?:no\s+longer|not)\s+(?:being\s+)?(?:maintained|supported|renewed)"
    r"|unmaintained|unsupported"
)
# the verb a going is said with, whatever the tense: "X is out", "X has been retired", "X got too pricey", "X's
# contract ended"
_GOING_VERB = (
    r"(?:\b(?:is|are|was|were|has\s+been|have\s+been|had\s+been|got|gets|became|becomes|is\s+getting)\s+(?:being\s+)?"
    r"|['\u2019](?:s|re|ve)\s+(?:been\s+|being\s+)?"
    r"|\s(?=(?:ended|expired)\b))"
)
_GOING_SAID = (
    _GOING_VERB
    + r"(?:"
    + GOING
    + r")|\s(?:isn'?t|aren'?t|wasn'?t|weren'?t|won'?t\s+be|is\s+not|are\s+not|was\s+not)\s+(?:being\s+)?"
    r"(?:worth\s+it|renewed|maintained|supported)"
)
# a rule negated after its subject: "force-pushing to main is not allowed"
_FORBIDDEN = re.compile(
    r"\b(?:is|are|'s|'re)\s+(?:(?:not|never|no\s+longer)\s+(?:allowed|permitted|ok|okay|fine|acceptable|wanted)"
    r"|forbidden|banned|prohibited|off[- ]limits|not\s+an?\s+option|obsolete|off)\b"
    # a going said of its subject, a closed class whatever the tense: "X is out", "X has been retired", "X is being
    # wound down", "X got too expensive", "X's contract ended"
    r"|" + _GOING_SAID + r"\b",
    re.I,
)
# what ties a product to us: "algolia's contract ended" says algolia goes
_TIE = re.compile(r"\s+(?:contract|licen[cs]e|subscription|deal|plan|account)\b", re.I)
# the old side of a change said by its going: "now that Dana left", "since Jenkins is gone"
_GONE = re.compile(
    r"\b(?:now\s+that|since|as)\s+(?P<d>\S+)\s+(?:has\s+|have\s+|is\s+|was\s+)?(?:left|quit|moved|retired|gone|leaving)\b",
    re.I,
)
_NOT_REQUIRED = re.compile(
    r"\b(?:no\s+longer|not|isn'?t|aren'?t)\s+(?:an?\s+)?(?:[\w-]+\s+){0,2}?(?:required|requirement|mandatory|needed"
    r"|necessary|enforced|blocking)\b|\b(?:don'?t|doesn'?t|no\s+longer)\s+(?:need|have\s+to|require)\b",
    re.I,
)
# a name made of parts: media-prod, release_2, api-v2 (a hyphenated word of the language has no slot noun by it)
_IDENT = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)+$|^[a-z]+\d+[a-z0-9]*(?:\.[a-z0-9]+)*$")
_COUNTED = re.compile(r"^(\d+)-([a-z]{3,})$")
_HOSTPORT = re.compile(r"^(?:[\w.-]+:)?(\d{2,5})$")
_FOLDER = re.compile(r"(?<![\w./-])([a-z][\w.-]*)/(?=[\s,;:)]|\.?$|\.\s)", re.I)
_PATH = re.compile(r"^[\w.-]*[a-z][\w.-]*/[\w./-]*$")  # deploy/k8s/, tests/data: a place in the tree

# a going said as what we did to it, before its object: "we dropped X", "killed X", "ripped out X"
_DECIDED_GOING = (
    r"dropp?(?:ed|ing)?|ditch(?:ed|ing)?|kill(?:ed|ing)|ax(?:ed|ing)|scrapp(?:ed|ing)|cancell?(?:ed|ing)|sunsett?(?:ed|ing)"
    r"|(?:ripp(?:ed|ing)|tore|torn|tearing|pull(?:ed|ing)|rip)\s+out"
)
_NEGATOR = re.compile(
    r"\b(?:never|don'?t|do\s+not|does\s+not|doesn'?t|avoid|mustn'?t|must\s+not|shouldn'?t|should\s+not|no\s+longer"
    r"|not|no|stop|stopped|without|instead\s+of|rather\s+than|over(?!\s+to\b)|no\s+more"
    # "we dropped X", "drop X", but not "the hit rate dropped" (an event, not a decision)
    r"|(?:^|(?<=^\s)|(?<=\bwe\s)|(?<=\bi\s)|(?<='ve\s)|(?<=\bhave\s)|(?<=\bhas\s)|(?<=\bto\s)|(?<=\band\s)|(?<=,\s)|(?<=\bjust\s))"
    r"(?:" + _DECIDED_GOING + r")"
    r"|got\s+rid\s+of|moved\s+(?:off|away\s+from)|retired|deprecated|(?:turn|switch|shut)(?:ed|ing|s)?\s+off|disabl\w*)\b",
    re.I,
)
_ENDING = re.compile(r"(?:" + _DECIDED_GOING + r")|got\s+rid\s+of|moved\s+(?:off|away\s+from)|retired|deprecated", re.I)
_NEGATED_BE = re.compile(r"\b(?:isn'?t|aren'?t|wasn'?t|weren'?t)\b(?!\s+worth)", re.I)
# a verb form right before the place word of a name: "runs on", "lives in", "hosted by"
_PLACING_VERB = re.compile(r"\b(\w+(?:s|ed|ing))\s+(?:on|in|through|via|by|at|with)\s", re.I)
_UNUSED = re.compile(
    r"\b(?:isn'?t|aren'?t|is\s+not|are\s+not)\s+(?:being\s+)?(?:used|needed|run|deployed|maintained|supported)\b", re.I
)
_CONTINUITY = re.compile(r"\b(?:anymore|any\s+more)\b", re.I)
# a negated predicate after its subject: "API keys must never end up ...": the subject is what the rule forbids
_PREDICATE_NEGATOR = re.compile(
    r"\b(?:(?:must|should|shall|will|can|may|do|does|is|are)\s+(?:never|not)|mustn'?t|shouldn'?t|can'?t|cannot|won'?t"
    r"|don'?t|doesn'?t|isn'?t|aren'?t)\b",
    re.I,
)
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:;|,?\s+and\s+(?=(?:never|always|don'?t|do\s+not|use|keep|avoid|run|prefer)\b)|\.\s)\s*", re.I
)
# where a negated object ends and its context begins
_SCOPE_END = re.compile(r"\s(?:in|for|when|while|during|within|inside|unless|if|except|across)\s", re.I)
_PLACE_SCOPE_END = re.compile(r"\s(?:for|when|while|during|unless|if|except|across)\s", re.I)
_PLACING = re.compile(r"\s*(?:put|store|place|keep)\w*\b", re.I)
# "and" before a verb in -ing starts another action: "turning X off and moving Y to Z"
_PHRASE_SPLIT = re.compile(r"[,;]|\bbut\b|\bbecause\b|\bso\b|\band\b(?=\s+\w+ing\b)", re.I)
_CHANGE = re.compile(
    r"(?:\s|^)" + _ARROW + r"(?=\s)|"
    r"\b(?:now|no\s+longer|anymore|any\s+more|instead|from\s+(?:now|here)\s+on|changed|moved|switched|switch|these\s+days"
    r"|not\s+\w+\s+any\s*more|replaced|dropped|migrated|ditched|got\s+rid\s+of|no\s+more|going\s+forward"
    r"|actually|nowadays|retired|deprecated|as\s+of|starting\s+(?:today|tomorrow|next|this|with)"
    r"|moving|switching|migrating|swapped|swapping|took\s+over|taken\s+over|superseded"
    # a rewrite in another tool: "the e2e tests are being rewritten in detox"
    r"|re(?:writ(?:e|es|ing|ten)|wrote|built|implemented|platformed)\s+(?:\S+\s+){0,3}?(?:in|with|on|using)"
    r"|(?:bump|rais|lower|increas|decreas|reduc|chang)\w*\s+(?:\S+\s+){0,5}?to\s+(?:\S+\s+){0,2}?\S*\d"
    r"|(?:is|are)\s+off|(?:is|are|has\s+been|have\s+been)\s+(?:gone|dead)|(?<=\w)['\u2019]s\s+(?:gone|dead|off)|(?:turn|switch|shut)(?:ed|ing)?\s+off|disabled"
    r"|phas(?:e|es|ed|ing)\s+out|(?:upgrad|downgrad)\w*\s+(?:\S+\s+){0,4}?to"
    r"|" + _GOING_SAID + r"|(?:contract|license|subscription)\s+(?:ended|expired)"
    # a beginning said with the time it holds from: "since the last release", "as of v3", "starting monday"
    r"|(?:since|as\s+of|starting)\s+(?:last|the|this|v?\d|(?:mon|tues|wednes|thurs|fri|satur|sun)day|q[1-4]|january|february"
    r"|march|april|june|july|august|september|october|november|december)"
    r"|(?:dropped|dropping|ditched|killed|axed|scrapped|cancell?ed|sunsetted|(?:ripped|ripping|tore|torn|tearing|pulled|pulling)\s+out)"
    r"|we\s+stopped)\b",
    re.I,
)
_CORRECTION = re.compile(
    r"^(?:no\b(?=\s*[^\w\s]|\s+(?:not|don'?t|never|you|that|it|i|we|use|this)\b)|nope\b|wrong\b|stop\b|wait\b|undo\b)|\b(?:you\s+forgot|you\s+didn'?t|i\s+told\s+you|i\s+said|i\s+asked"
    r"|that'?s\s+(?:the\s+|a\s+)?(?:wrong|not)|that\s+is\s+(?:the\s+|a\s+)?(?:wrong|not)|again|why\s+did\s+you|you\s+(?:should|were\s+supposed)"
    r"|as\s+i\s+said|like\s+i\s+said|not\s+what\s+i|fix\s+(?:it|that|this)|take\s+it\s+out)\b",
    re.I,
)
# what the agent did, said to it: "you imported chakra, ..." puts it right as a correction word would
_AGENT_DID = re.compile(
    r"^(?:you|the\s+agent)\s+(?:just\s+|again\s+)?(?:\w+ed|wrote|ran|put|made|broke|left|took|went|did|built|set)\b",
    re.I,
)
_PROHIBITION_START = re.compile(r"^(?:don'?t|do\s+not|never|stop)\b", re.I)
# a restriction is a standing rule however it is said: "dags go in pipelines/dags/, nowhere else"
_RESTRICTIVE = re.compile(r"\b(?:nowhere\s+else|and\s+only\s+(?:there|here)|exclusively)\b", re.I)
# a supposition changes nothing: "if we upgrade to ruby 3.3 we need to retest the gems"
_HYPOTHETICAL = re.compile(
    r"^(?:if|what\s+if|suppose|supposing|in\s+case|maybe|once|perhaps)\b"
    # a change weighed, planned or reported of someone else is not made: "we considered moving to X", "dana thinks
    # we should switch to X", "we might drop X"
    r"|\b(?:consider(?:ed|ing)?|thinking\s+(?:about|of)|thought\s+about|might|evaluat(?:e|ed|ing)|look(?:ed|ing)\s+into"
    r"|propos(?:e|ed|al)|suggest(?:ed|s|ion)?|plan(?:s|ned|ning)?\s+to|want(?:s|ed)?\s+to|should\s+we|would\s+(?:like|love)"
    r"|(?<!\bi\s)(?:said|says|thinks|mentioned)\s+(?:we|that|to|it)|wonder(?:ing)?|pros\s+and\s+cons|trial(?:l?ing)?)\b",
    re.I,
)
# what happened, not what holds
_PAST = re.compile(
    r"\b(?:was|were|did|had|yesterday|last\s+(?:night|week|time|month)|earlier|ago|ran|went|came|took|wrote|broke"
    r"|failed|crashed|happened|used\s+to|back\s+(?:then|in)|according\s+to|old)\b",
    re.I,
)
# an event, not a standing change: "the index is gone after the reindex failed", "... was suspended after the bill
# spiked", "... ran out yesterday"
_EVENT = re.compile(
    r"\b(?:after|when|because|since|during)\s+(?:the\s+|a\s+|an\s+|our\s+|we\s+)?(?:\S+\s+){0,3}?"
    r"(?:\w+ed|ran|broke|went|fell|blew|hit|died|crashed|failed|redesign|outage|incident|migration|upgrade|deploy)\b"
    r"|\b(?:yesterday|last\s+night|this\s+morning|earlier\s+today|today)\b"
    # an accident or a thing undone: "was killed by mistake and restored", "is down for a bit"
    r"|\b(?:by\s+(?:mistake|accident)|accidentally|(?:and|then|was|got)\s+restored|temporarily|for\s+a\s+(?:bit|while|few))\b",
    re.I,
)
# a statement that adds a value beside what holds: "we also page with X", "X too", "X as well", "in addition"
_ADDITIVE = re.compile(r"\b(?:also|too|as\s+well|in\s+addition|additionally|besides|alongside|plus|both)\b", re.I)
# what someone else wants or says is theirs, not what holds
_REPORTED = re.compile(r"\b(?:wants?|wanted|asked|asks|said|says|thinks|thought|told)\b", re.I)
# a change that has finished is the change itself, not an event beside it: "runs on sonic after the migration
# finished"
_CHANGE_DONE = re.compile(
    r"\b(?:after|since|now\s+that)\s+the\s+(?:\S+\s+)?(?:migration|move|switch|switchover|cutover|rewrite|rollout)"
    r"(?:\s+(?:finished|completed|landed|is\s+done|was\s+done|went\s+through))?\b",
    re.I,
)
# a going said of another use of the same thing: "vercel is too expensive for the backend": the backend goes off it
_GOING_FOR = re.compile(
    r"(?:"
    + _GOING_SAID
    + r")\s+(?:for|on)\s+(?:the\s+|our\s+|all\s+)?(?:(?:big|large|small|new|old)\s+)?(?P<w>[\w-]+)",
    re.I,
)
# a question that reproaches the agent is a correction, the only question that relates to a rule
_REPROACH = re.compile(r"^(?:why\s+did(?:n'?t)?\s+you|didn'?t\s+i\s+(?:tell|say|ask))\b", re.I)
_AT_AGENT = re.compile(r"(?:you|why\s+did\s+you)\s", re.I)
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
        "each",
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
        "nowhere",  # "X go in Y, nowhere else": a restriction, see _RESTRICTIVE
        "else",
        "phase",  # "phasing out X": the change, not a topic
        "phasing",
        "phased",
        "phas",
        "re",  # we're, they've, we'll
        "ve",
        "ll",
        "these",
        "those",
        "ourselves",
        # the words of a going ("is being ripped out", "got too pricey"): the change, not a topic
        "being",
        "rip",
        "ripped",
        "torn",
        "tore",
        "pricey",
        "eol",
    ]
)
STOP = _STOPWORDS | _EXTRA_STOP | FILLERS
# the words of ordinary English prose (``scripts/gen_common_words.py``): a word outside them is a name whatever its
# case ("switched to gotenberg"), since people type product names in lower case
COMMON = frozenset(resources.files(__package__).joinpath("common_words.txt").read_text().split())
_SUFFIXES = (
    ("ies", ("y",)),
    ("ied", ("y",)),
    ("es", ("", "e")),
    ("s", ("",)),
    ("ed", ("", "e")),
    ("ing", ("", "e")),
    ("ly", ("",)),
    ("er", ("", "e")),
    ("ers", ("", "e")),
)
_NAME_SHAPE = re.compile(r"^[a-z][a-z0-9]*(?:[.+_-][a-z0-9]+)*$")


@lru_cache(maxsize=65536)
def uncommon(word: str) -> bool:
    """A word no common English word is a form of: a name typed in lower case ("opensearch", "fly.io")."""
    w = word.lower()
    if (
        (len(w) < 3 and not any(c.isdigit() for c in w))
        or w in STOP
        or not _NAME_SHAPE.match(w)
        or w in _KIND_OF
        or w in SLOT_NOUNS
    ):
        return False
    forms = {w, stem(w)}
    for suffix, endings in _SUFFIXES:
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            forms.update(w[: -len(suffix)] + e for e in endings)
    if "." in w or "+" in w:  # a domain or a product's spelling ("fly.io", "notepad++"), never a word of prose
        return True
    head = re.split(r"[.+-]", w)
    return not (forms & COMMON) and not all(h in COMMON or h.isdigit() for h in head)


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
    head, dash, last = w.rpartition("-")
    if dash and head and last.isalpha() and w not in _OPPOSITE_WORDS:
        return f"{head}-{root(last)}"  # force-pushing -> force-push
    if w in _OPPOSITE_WORDS or not w.isalpha():
        return w
    w = _IRREGULAR.get(w, w)
    if len(w) > 5 and w.endswith("ied"):  # applied -> apply
        w = w[:-3] + "y"
    if w.startswith("re") and w[2:] in _IRREGULAR:  # rebuilt, rewritten, reran: the verb again
        w = "re" + _IRREGULAR[w[2:]]
    # a verb's noun is the verb ("TLS termination" is what "terminates tls" does, "compression" "compresses")
    if len(w) > 7 and w.endswith("ation"):
        w = w[:-5] + "ate"
    elif len(w) > 6 and w.endswith(("ssion", "ction")):
        w = w[:-3]
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
    if roots and " " in text:  # a number word needs the word after it
        text = numerals(rewrite(text))
    if roots and "/" in text:  # "dashboards/" is a folder, a path like "pipelines/dags/", not the word "dashboards"
        text = _FOLDER.sub(r"\1/_", text)
    for w in normalized(text.replace("`", " ")).split():
        w = w.strip(":,;'\"()")
        key, eq, value = w.partition("=")
        if eq and key and value:  # TZ=UTC, --workers=1: the setting is the topic, its value a value of that setting
            out += [key.strip("-"), f"{key.strip('-')}={value}"]
            continue
        if (len(w) < 2 and not w.isdigit()) or w in STOP:
            continue
        # values are names: "postgres" is no plural
        if (n := _COUNTED.match(w)) and roots:  # "4-space" is 4 spaces
            out += [n.group(1), n.group(2) if n.group(2) in _KIND_OF else root(n.group(2))]
            continue
        if roots:
            w = SYNONYMS.get(w, SYNONYMS.get(stem(w), w))  # "environments" are "envs"
        head, dash, _ = w.partition("-")
        if roots and dash and head in _KIND_OF and w not in _KIND_OF:  # "squash-merge" is a squash
            out.append(head)
            continue
        if w.endswith("-based") and w[:-6] in _KIND_OF:  # "cursor-based" pagination is "cursor" pagination
            w = w[:-6]
        s = w if w in _KIND_OF else root(w) if roots else stem(w)
        s = _ROOT_KIND.get(s, s) if roots else s  # "merging" is the value "merge"
        if s not in STOP and (not roots or s not in _LIGHT):
            out.append(s)
    return out


_KINDS = frozenset(_KIND_OF.values())
# the verbs that say a change, not a subject, by their roots
_CHANGE_VERBS = frozenset(
    root(f"{verb}{ending}")
    for verb in ("upgrad", "downgrad", "switch", "mov", "migrat", "chang", "bump", "rais", "lower", "increas", "reduc")
    for ending in ("e", "ed", "ing", "es", "s", "")
) | frozenset(root(w) for w in ("replaced", "replace", "swapped", "ditched", "dropped", "phased", "gone"))
_ROOT_KIND = {root(v): v for v in _KIND_OF if root(v) != v}
_LIGHT = frozenset(root(w) for w in LIGHT_VERBS) | LIGHT_VERBS


@lru_cache(maxsize=65536)  # clause_of reads every sentence word by word; words repeat across messages
def _word_terms(word: str) -> tuple[str, ...]:
    return tuple(terms(word))


def numerals(text: str) -> str:
    """``text`` with the numbers said in words written as digits ("two approvals" -> "2 approvals")."""

    def digits(m: re.Match[str]) -> str:
        if _NOT_A_NUMBER_AFTER.search(text, max(0, m.start() - 8), m.start()):
            return m.group(0)
        before = text[: m.start()].split()[-1:]
        if before and before[0].lower() in _NUMBER_WORDS:  # "two hundred", "twenty five": left as words
            return m.group(0)
        return _NUMBER_WORDS[m.group(1).lower()]

    return _NUMBER_WORD.sub(digits, text)


def value_kind(term: str) -> str | None:
    if term in _KIND_OF:
        return _KIND_OF[term]
    if term.startswith(FREQUENCY):
        return "frequency"
    key, eq, _ = term.partition("=")
    if eq:
        return f"setting:{key}"
    if _HOSTPORT.match(term) or _NUMBER.match(term) or _VERSION.match(term):
        return "number"
    if _PATH.match(term):
        return "path"
    return None


@dataclass(frozen=True)
class Clause:
    text: str
    polarity: dict[str, int]  # term -> +1 / -1
    context: frozenset[str] = frozenset()  # terms of where or when it applies ("in the plugin API"), not of what
    names: dict[str, str] = field(default_factory=dict)  # name term (capitalised, no known kind) -> the word before
    units: dict[str, str] = field(default_factory=dict)  # number term -> the term after it ("2" -> "approval")
    slots: dict[str, str] = field(default_factory=dict)  # number term -> what it is the value of ("42" -> "seed")
    marks: dict[str, int] = field(default_factory=dict)  # every word as written, stop words too -> its polarity
    heads: frozenset[str] = frozenset()  # the first term of each negated span: the predicate a negation denies
    # the subject before "must never": forbidden ("API keys must never end up ...") or only where the rule holds
    # ("Unit tests must never make ..."); either way its polarity says nothing
    loose: frozenset[str] = frozenset()
    before: dict[str, str] = field(default_factory=dict)  # term -> the content term right before it in its phrase
    # an identifier next to the noun it names: "media-prod" -> "bucket" ("the media-prod bucket")
    idents: dict[str, str] = field(default_factory=dict)
    # the old side of a replacement or a retirement ("switched from X", "X is gone", "phasing out X"): said to be out
    # by a construction of change, not by a negation whose reach may be wider
    gone: frozenset[str] = frozenset()
    # a noun -> the name before it that says which one ("cluster" -> "kafka" in "the kafka cluster")
    owners: dict[str, str] = field(default_factory=dict)

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(self.polarity)

    def kind(self, term: str) -> str | None:
        return value_kind(term) or ("name" if term in self.names else None)

    def values(self) -> dict[str, str]:
        """value term -> its kind."""
        return {t: k for t in self.polarity if (k := self.kind(t)) is not None}


def clause_of(text: str) -> Clause:
    """Terms of ``text`` with their polarity: -1 for a term after a negator in its phrase, up to the context that
    follows ("over inheritance | in the plugin API": the plugin API is where, not what is negated)."""
    polarity: dict[str, int] = {}
    context: set[str] = set()
    names: dict[str, str] = {}
    units: dict[str, str] = {}
    slots: dict[str, str] = {}
    marks: dict[str, int] = {}
    heads: set[str] = set()
    gone: set[str] = set()
    loose: set[str] = set()
    number = ""  # the last number seen in this phrase, waiting for its unit
    previous = ""
    last = ""  # the last content term that is no number: what a number after it is the value of
    before = ""  # the word before the current one, articles skipped: the place a name stands in
    first = True
    modifiers: dict[str, str] = {}
    idents: dict[str, str] = {}
    owners: dict[str, str] = {}
    continuity = _CONTINUITY.search(text) is not None  # "anymore" is left out with the time phrases
    for p_index, phrase in enumerate(_PHRASE_SPLIT.split(numerals(rewrite(strip_time(text))))):
        first_phrase = p_index == 0
        prior = ""
        negated = (0, 0)
        head_pending = False
        ending = False
        subject_end = 0
        # "X aren't in Y anymore": a copula denied only with its continuity (else "that email isn't formal" is a
        # correction's description, read by the rules of corrections)
        if m := _NEGATOR.search(phrase) or (_NEGATED_BE.search(phrase) if continuity else None):
            # "don't put X in Y": where a thing is put is what the rule denies; "not in crontab": the place is
            scope = _PLACE_SCOPE_END if _PLACING.match(phrase, m.end()) else _SCOPE_END
            end = scope.search(phrase, m.end())
            if end and not phrase[m.end() : end.start()].strip():
                end = _SCOPE_END.search(phrase, end.end() - 1)
            negated = (m.end(), end.start() if end else len(phrase))
            head_pending = True
            # what we decided to end, or said not to hold any more, is out: "we dropped X", "rate limits aren't in
            # X anymore"
            ending = continuity or _ENDING.fullmatch(m.group(0)) is not None
            if _PREDICATE_NEGATOR.search(phrase[: m.end() + 1]):
                subject_end = m.start()
        low = phrase.lower()  # the three patterns below are slow to try on every phrase: only where they can match
        old = []
        retired = (0, 0)  # "X is being retired": X is what is denied
        replaced = (0, 0)
        if any(
            w in low
            for w in (
                "from",
                "replac",
                "swap",
                "exchang",
                "substitut",
                " off",
                "phas",
                "instead",
                "place",
                "over",
                ">",
                "\u2192",
                "stopped",
                "quit",
            )
        ):
            old = [(r.start(g), r.end(g)) for r in _REPLACED.finditer(phrase) for g in "abcefghij" if r.group(g)]
            replaced = old[0] if old else (0, 0)  # "moved from X to Y": X is what is denied
        if any(w in low for w in ("is", "are", "'s", "'re", "got", "ended", "expired", "been", "was")) and (
            f := _FORBIDDEN.search(phrase)
        ):
            old.append((0, f.start()))
            retired = (0, f.start())
        old += [(g.start("d"), g.end("d")) for g in _GONE.finditer(phrase)]
        # "circleci isn't used anymore": a use denied with its continuity retires its subject
        if continuity and (u := _UNUSED.search(phrase)):
            old.append((0, u.start()))
            retired = (0, u.start())
        new = (
            {r.end() for r in _NEW_VALUE.finditer(phrase)}
            if any(w in low for w in ("to", "replac", "favo", "we", "i'm", ">", "\u2192"))
            else set()
        )
        where = _SCOPE_END.search(phrase)
        number = ""
        prev_raw = ""
        n = _NEGATOR.search(phrase)
        words = list(re.finditer(r"\S+", phrase))
        for i, m in enumerate(words):
            raw = m.group(0).strip("`'\"()[]:;.!")
            # the word after, when it is a content word of the same noun phrase: "the kafka cluster"
            follower = ""
            if i + 1 < len(words) and m.group(0)[-1:].isalnum():
                follower = next(iter(_word_terms(words[i + 1].group(0))), "")
            # the owner of what is replaced stays: "replaced knex's query builder with raw SQL" keeps knex
            # (but "pingdom's gone": the 's there is the verb that ends the old side; "algolia's contract ended":
            # the contract is what ties us to its owner)
            owner = (
                m.group(0).lower().endswith(("'s", "\u2019s"))
                and any(a <= m.start() and m.end() < b for a, b in old)
                and not _TIE.match(phrase, m.end())
            )
            in_old = any(a <= m.start() < b for a, b in old) and not owner
            in_negation = negated[0] <= m.start() < negated[1] and negated[1] > negated[0]
            raw_sign = -1 if in_negation or in_old else 1
            if raw:
                marks.setdefault(raw.lower(), raw_sign)
                if prev_raw:
                    marks.setdefault(f"{prev_raw} {raw.lower()}", raw_sign)
                prev_raw = raw.lower()
            for t in _word_terms(m.group(0)):
                sign = raw_sign
                if m.start() < subject_end and t not in polarity:
                    loose.add(t)
                polarity.setdefault(t, sign)
                if in_old:
                    gone.add(t)
                if prior and value_kind(t) is None and value_kind(prior) is None:
                    modifiers.setdefault(t, prior)
                if prior and t in SLOT_NOUNS and _IDENT.match(prior):
                    idents.setdefault(prior, t)
                elif prior in SLOT_NOUNS and _IDENT.match(t):
                    idents.setdefault(t, prior)
                prior = t
                if retired[0] <= m.start() < retired[1]:
                    heads.add(t)
                    retired = (0, 0)
                if replaced[0] <= m.start() < replaced[1] and not owner:
                    heads.add(t)
                    replaced = (0, 0)
                if head_pending and in_negation and m.start() >= negated[0] and m.start() >= (n.end() if n else 0):
                    heads.add(t)
                    head_pending = False
                    if ending:
                        gone.add(t)
                if number and number != t:
                    units.setdefault(number, t)
                if value_kind(t) == "number":
                    # a number after an address is its port; else it is the value of the word before it
                    slots.setdefault(t, "port" if previous.count(".") == 3 and _NUMBER.match(previous) else last)
                    number = t
                else:
                    number = ""
                    last = t
                previous = t
                if where is not None and m.start() >= where.end() and value_kind(t) is None:
                    context.add(t)
                unit = _NUMBER.match(before) is not None  # "200 KB": a unit, not a name
                capital = raw[:1].isupper() and raw.lower() not in _GENERIC_CAPS and not first
                # a word outside the language is a name whatever its case, unless it qualifies the noun after it
                # ("the e2e suite") or is one of a kind ("a legend")
                article = words[i - 1].group(0).lower() if i else ""
                # an abbreviation is a name when what it stands for is one ("tf" for terraform)
                abbreviation = raw.lower() in SYNONYMS and uncommon(SYNONYMS[raw.lower()])
                lower_name = (
                    not capital and (uncommon(raw) or abbreviation or t in _KIND_OF) and article not in ("a", "an")
                )
                # ... or names a product of two words right after the predicate's place word ("runs on cloudflare
                # pages", "signed with fastlane match")
                product = i > 0 and words[i - 1].group(0).lower() in _PLACES
                product = product or (i > 1 and article in _ARTICLE and words[i - 2].group(0).lower() in _PLACES)
                # ... or is the subject of the verb after it ("grype scans our images": an article follows the verb)
                product = product or (i + 2 < len(words) and words[i + 2].group(0).lower() in _ARTICLE)
                lower_name = lower_name and (not follower or value_kind(follower) is not None or product)
                named = (capital or lower_name) and not unit and value_kind(t) in (None, *_KINDS)
                if named:
                    names.setdefault(t, "*" if m.start() in new else _PREDICATE if before in _PLACES else before)
                # the name that says which one of the subject: "the kafka cluster has ...", "The ClickHouse cluster
                # has ..." (in the object it is the value: "use the REPORTER role now")
                subject = first_phrase and all(w.group(0).lower() in _ARTICLE for w in words[:i])
                nameish = named or capital or uncommon(raw) or t in _KIND_OF
                # ... or any word that qualifies the subject's noun ("the sdk docs" are not "The API docs")
                head = words[i + 1].group(0).lower() if follower else ""
                qualifier = nameish or (
                    t not in _GENERIC_MODIFIERS and value_kind(t) is None and not head.endswith("ing")
                )
                if subject and follower and value_kind(follower) is None and qualifier and follower != t:
                    owners.setdefault(follower, t)
            # a capitalised name that is also a common short word ("The Go services", "The Make targets") says
            # which one of the subject's noun although it is no term
            capital_stop = raw[:1].isupper() and not _word_terms(m.group(0)) and not first and follower
            if capital_stop and p_index == 0 and all(w.group(0).lower() in _ARTICLE for w in words[:i]):
                owners.setdefault(follower, raw.lower())
            first = first and not raw
            if raw.lower() not in _ARTICLE:
                before = raw.lower()
    context -= set(names)
    return Clause(
        text,
        polarity,
        frozenset(context - {t for t in polarity if t not in context}),
        names,
        units,
        slots,
        marks,
        frozenset(heads),
        frozenset(loose),
        modifiers,
        idents,
        frozenset(gone),
        owners,
    )


def statement_of(bullet: str) -> str:
    """What a memory bullet says: the user's quoted words when it quotes them, else its text without tags."""
    if m := _QUOTE.search(bullet):
        return m.group(1)
    body = bullet.strip().lstrip("-* ").strip()
    return _TAIL.sub("", body).strip()


def clauses(statement: str) -> list[Clause]:
    return list(_clauses(statement))


@lru_cache(maxsize=4096)
def _clauses(statement: str) -> tuple[Clause, ...]:
    parts = [p for s in sentences(statement) for p in _CLAUSE_SPLIT.split(s) if p and p.strip()]
    out = [c for p in parts if (c := clause_of(p)).polarity]
    return tuple(out or [clause_of(statement)])


_rule_like = lru_cache(maxsize=8192)(is_rule_like)


def _substituted(block: Clause, said: Clause, changed: bool) -> str | None:
    """A value of the block has, in the later sentence, another value of its kind in its place (and is not
    restated there positively), or is itself negated there. Names of no known kind stand in for each other only
    in the same place ("with Cypress" for "with Playwright") of a sentence that says things changed.

    "value" for a value of a known kind replaced or negated, "name" for a name standing in for another, else None.
    """
    mine = block.values()
    theirs = said.values()
    for term, sign in block.polarity.items():
        if any(said.polarity.get(o) == sign for o in _OPPOSITES.get(term, ())) and term not in said.polarity:
            return "value"
    for word, sign in block.marks.items():  # antonyms as written, particles too ("in" after "out of the repo")
        opposite = _OPPOSITES.get(word, ())
        if word not in said.marks and any(said.marks.get(o) == sign and o not in block.marks for o in opposite):
            return "value"
    for ident, noun in block.idents.items():  # "the media-v2 bucket" after "the bucket media-prod"
        if ident not in said.polarity and any(n == noun and i not in block.polarity for i, n in said.idents.items()):
            return "value"
    by_name = False
    for value, kind in mine.items():
        # a value said to be out, when the negation is about it: "never npm", "Jenkins is off", not "never
        # force-push to main" after "merge commits on main" (main is where, force-pushing what is denied)
        if said.polarity.get(value) == -block.polarity[value] and _denied_value(value, block, said):
            if not _agree(block, said):  # else only how far each negation reaches ("on anything in legacy/")
                return "value"
            continue
        if value in said.polarity:
            continue
        for v, k in theirs.items():
            if v == value or said.polarity[v] != block.polarity[value] or v in block.polarity:
                continue
            units = (block.units.get(value), said.units.get(v))
            if k == kind == "number" and None not in units and units[0] != units[1]:
                continue  # "1 working day" is no number of approvals
            slots = (block.slots.get(value), said.slots.get(v))
            # the same slot said with another of the sentence's words: "raise the connection pool to 50" after
            # "a pool size of 20", "rotate secrets every 30 days" after "secrets are rotated every 90 days"
            same_slot = slots[0] == slots[1] or slots[1] in block.polarity or slots[0] in said.polarity
            # "upgraded to 1.29": a number a thing is upgraded to is its version, whatever the block called it
            same_slot = same_slot or slots[1] in _UPGRADE
            if k == kind == "number" and None in units and all(slots) and not same_slot:
                continue  # a batch size of 64 says nothing of a seed of 42
            if (k == kind != "name") or {k, kind} <= _WHEN:
                return "value"
            place = said.names.get(v, v)
            if changed and "name" in (k, kind) and place in ("*", block.names.get(value, value)):
                by_name = True
    return "name" if by_name else None


def _joined(block: Clause, said: Clause) -> Clause:
    """``said`` with a compound of the block written its other ways taken as the block's word: "ad hoc", "adhoc" for
    "ad-hoc", "type check" for "type-checked", "followup" for "follow-up"."""
    polarity = dict(said.polarity)
    for t in block.polarity:
        if "-" not in t or t in polarity:
            continue
        parts = [root(p) for p in t.split("-")]
        whole = next((w for w in (t.replace("-", ""), root(t.replace("-", ""))) if w in polarity), "")
        if all(polarity.get(p) is not None for p in parts):
            polarity[t] = polarity[parts[0]]
            for p in parts:
                if p not in block.polarity:
                    polarity.pop(p, None)
        elif whole:
            polarity[t] = polarity.pop(whole)
    return said if polarity == said.polarity else replace(said, polarity=polarity)


def _other_kind(block: Clause, said: Clause) -> bool:
    """A shared word said of another thing: "the idle timeout" is not "the request timeout" (each word before it
    is a content word the other sentence lacks)."""
    for t in block.terms & said.terms:
        if block.kind(t):
            continue  # the word before a name is its place ("with WireMock", "from WireMock"), not its kind
        mine, theirs = block.before.get(t), said.before.get(t)
        if mine in _GENERIC_MODIFIERS or theirs in _GENERIC_MODIFIERS or {mine, theirs} & (_CHANGE_VERBS | _LIGHT):
            # ... nor is a verb ("we moved the embeddings" are still the embeddings)
            continue  # "new transformations" are still the transformations
        other = mine and theirs and not _same_qualifier(mine, theirs)
        if other and mine not in said.polarity and theirs not in block.polarity:
            return True
    return False


def _same_qualifier(mine: str, theirs: str) -> bool:
    """One qualifier said shorter: "service traffic" is the "service-to-service traffic"."""
    return mine == theirs or theirs in _parts(mine) or mine in _parts(theirs)


def _parts(word: str) -> set[str]:
    return {root(p) for p in word.split("-") if p} if "-" in word else set()


def _other_owner(block: Clause, said: Clause) -> bool:
    """The same noun of another named thing: "the kafka cluster has 12 nodes" is not about "The ClickHouse
    cluster"."""
    for noun in said.owners.keys() & block.terms:
        mine, theirs = block.owners.get(noun) or block.before.get(noun), said.owners[noun]
        if mine and not _same_qualifier(mine, theirs) and mine not in said.polarity and theirs not in block.polarity:
            return True
    return False


def _denied_value(term: str, block: Clause, said: Clause) -> bool:
    """A value whose polarity flips is denied itself, unless it is a branch the denied act happens on ("never
    force-push to main" says nothing against "merge commits on main")."""
    kind = value_kind(term)
    return kind is not None and (kind != "branch" or term in block.heads or term in said.heads)


def _agree(block: Clause, said: Clause) -> bool:
    """Both deny the same predicate ("Never write raw SQL in the views" after "Avoid raw SQL in the views")."""
    shared = block.terms & said.terms
    return any(block.polarity[t] == said.polarity[t] == -1 for t in (shared & block.heads) - block.loose - said.loose)


def _flipped(block: Clause, said: Clause) -> list[str]:
    # a word of where the later sentence holds ("in full in the logs") flips nothing, nor a subject of unknown role
    loose = block.loose | said.loose | said.context
    shared = block.terms & said.terms
    # both deny the same thing ("Never write raw SQL in the views" after "Avoid raw SQL in the views"): the rest
    # of a negation's reach is how it is said, not a change
    if _agree(block, said):
        return []
    return [t for t in shared if block.polarity[t] != said.polarity[t] and t not in loose]


@dataclass(frozen=True)
class _Reading:
    """What the rules read in one sentence of the user, whatever block it is compared with (read once per
    sentence, not per clause; not cached, since it is the user's words)."""

    text: str
    question: bool
    said: Clause
    durable: bool
    correction: bool
    changed: bool
    unrequired: bool  # "X is no longer required"
    hypothetical: bool  # "if we upgrade to X, ...": supposes a change, says none
    going_for: tuple[str, ...] = ()  # the terms of another use a going is said of ("too expensive for the backend")
    # a plain present statement that adds nothing to what already holds: another value in the block's place then
    # changes it with no word of change ("feature flags are managed in flagsmith" after "... in LaunchDarkly")
    plain: bool = False


def _read(sentence: str) -> _Reading | None:
    s = sentence.strip()
    question = s.endswith("?")
    if not s or (question and not _REPROACH.search(s)):
        return None
    said = rewrite(s)
    event = _EVENT.search(strip_time(s)) is not None and not _CHANGE_DONE.search(s)
    return _Reading(
        s,
        question,
        clause_of(s),
        (is_rule_like(s) or _RESTRICTIVE.search(s) is not None) and not event,
        _CORRECTION.search(s) is not None or _AGENT_DID.search(s) is not None,
        (_CHANGE.search(said) is not None or _CHANGE_DONE.search(s) is not None)
        and not _HYPOTHETICAL.search(s)
        and not event,
        _NOT_REQUIRED.search(said) is not None,
        _HYPOTHETICAL.search(s) is not None,
        tuple(terms(g.group("w"))) if (g := _GOING_FOR.search(s)) else (),
        not event and not _HYPOTHETICAL.search(s) and not _PAST.search(s) and not _ADDITIVE.search(s),
    )


def relate_clause(block: Clause, sentence: str | _Reading | None) -> Relation | None:
    """How one sentence of the user relates to one clause of a block (see the module docstring)."""
    reading = _read(sentence) if isinstance(sentence, str) else sentence
    if reading is None:
        return None
    s, question, said = reading.text, reading.question, _joined(block, reading.said)
    durable, correction, changed = reading.durable, reading.correction, reading.changed
    shared = block.terms & said.terms
    if not shared or _other_owner(block, said):
        return None
    topic = block.terms - set(block.values()) - set(block.units.values())  # "30 seconds": the unit is no topic
    if not topic:  # a block of names alone ("Keep the Unity project on .NET Standard 2.1."): they are its subject too
        topic = frozenset(block.names) - said.gone
    shared_topic = shared & topic
    coverage = len(shared) / max(1, len(block.terms))
    flips = _flipped(block, said)
    substituted = _substituted(block, said, changed)
    # no word of change: another value in the block's place, in a plain statement of the block's subject that says
    # nothing of its own besides, is a change all the same, when it puts a value of the same kind (or a name for
    # any named thing; a region is no profile) where the block's value of that kind is not said again ("we use
    # launchdarkly, and unleash for the self-hosted build" adds)
    if reading.plain and not changed and not correction and not flips and block.values():
        own = said.terms - block.terms - set(said.values()) - _CHANGE_VERBS - _LIGHT
        # ... nor names which one of its nouns it means ("stripe webhooks" are not all webhooks)
        # (a name that opens the sentence before its verb and an article is the doer, not a qualifier: "grype
        # scans our images")
        doers = {v for v, p in said.names.items() if p == ""}
        owned = any(n in block.terms and o not in block.terms | doers for n, o in said.owners.items())
        keys = {v.partition("=")[0] for v in said.values() if "=" in v}
        new = {k for v, k in said.values().items() if v not in block.terms | keys}
        dropped = {k for v, k in block.values().items() if said.polarity.get(v) != block.polarity[v]}
        # ... where the block's value of that kind is not said again outside its subject ("we prefer pnpm over npm"
        # agrees with "never npm"; "ruby 3.3" keeps ruby and changes its version); a setting's key is no new value
        subject = {next(iter(block.polarity), "")} | set(block.owners) | set(block.owners.values())
        kept = {k for v, k in block.values().items() if v not in subject and said.polarity.get(v) == block.polarity[v]}
        kept.discard("number")  # "01:00 utc" for "03:00 UTC": a time keeps its zeros
        fits = (
            (new & dropped) - kept
            or ("name" in new and "name" not in kept and (dropped - {"number"} - _WHEN))
            or (new & _WHEN and dropped & _WHEN and not kept & _WHEN)
        )
        if fits and not own and not owned and not _REPORTED.search(reading.text):
            substituted = substituted or _substituted(block, said, True)
            # the same act said actively, its doer first: "lefthook manages the git hooks" after "... by Husky"
            agent = bool(doers - block.terms)
            if not substituted and agent and any(block.names.get(v) == _PREDICATE for v in block.values()):
                substituted = "name"
            changed = substituted is not None
    # the topic is what the block is about, values aside: "The X job runs on Tuesdays" and "The Y job runs on
    # Thursdays" share a day's kind and a verb, not a topic
    topic_coverage = len(shared_topic) / max(1, len(topic))
    # a name both keep is the subject a new value is said of ("sms go through vonage now"), in a sentence that names
    # no subject of its own ("the frontend moved to node 22" is about the frontend)
    if substituted and not (said.terms - block.terms - set(said.values()) - _CHANGE_VERBS):
        kept_names = {t for t in shared if t in block.names and said.polarity[t] == block.polarity[t]}
        shared_topic = shared_topic | kept_names
        topic_coverage = len(shared_topic) / max(1, len(topic | kept_names))
    other = _other_kind(block, said)
    on_topic = len(shared_topic) >= 2 or (
        len(shared_topic - _GENERIC_NOUNS) >= 1 and topic_coverage >= 0.5 and not other
    )
    kept_values = [v for v in block.values() if said.polarity.get(v) == block.polarity[v] or v in said.loose]
    # a sentence that says nothing but the block's words and a new name ("We're on Vonage for SMS now")
    # (the verb that puts a name in its place, "runs on sonic", is no word of a subject)
    verbs = {root(stem(v.lower())) for v in _PLACING_VERB.findall(s)} if said.names else set()
    bare = not (said.terms - set(said.names) - block.terms - _CHANGE_VERBS - _LIGHT - verbs)
    if substituted == "name" and topic_coverage < 2 / 3 and not (bare and changed):
        substituted = None  # a name in the same place of a sentence on another subject ("the backend", "the build")
    agreed = sum(1 for t in shared_topic if said.polarity[t] == block.polarity[t] == -1)
    # "you ran X on legacy/ again": what the agent did, against the block, is the correction's subject
    at_agent = _AT_AGENT.match(s) is not None
    if question or (correction and not changed and (not substituted or kept_values or agreed >= 2 or at_agent)):
        # the user is putting the agent right; a negation in a correction ("not npm, I told you") repeats the rule
        if (coverage >= 0.4 and len(shared) >= 2) or (len(shared) >= 1 and any(block.kind(t) for t in shared)):
            return Relation.CORRECTED
        return None
    # "don't helm install by hand, flux deploys it": a prohibition of what the agent did that says the block's value
    # again puts the agent right, it changes nothing
    prohibition = _PROHIBITION_START.match(s) and not changed and not substituted and kept_values and on_topic
    if prohibition and flips and not any(t in kept_values for t in flips):
        return Relation.CORRECTED
    if changed and reading.unrequired and on_topic and not question and -1 not in block.polarity.values():
        return Relation.CONTRADICTED  # a requirement dropped: "the security review is no longer required"
    if (durable or changed or correction) and (substituted or flips):
        if reading.hypothetical or (reading.going_for and not set(reading.going_for) & block.terms):
            return None
        value_flip = any(_denied_value(t, block, said) for t in flips)
        # the same named thing with another value: "The Python code uses tabs now" after "a 4-space indent in the
        # Python code"
        named = any(block.kind(v) == "name" for v in kept_values)
        # ... and nothing that names another subject ("the dev laptops were upgraded to ubuntu 22.04" after "The
        # CI runners use Ubuntu 20.04")
        named = named and not (said.terms - block.terms - set(said.values()) - _CHANGE_VERBS)
        # with few words shared, a shared word said of another thing ("marketing emails" after "customer emails")
        # is another subject
        weak = changed and not _other_kind(block, said) and (shared_topic or (named and substituted == "value"))
        weak = weak and len(said.terms - block.terms - set(said.values()) - _CHANGE_VERBS) <= 1
        if substituted and (on_topic or weak):
            return Relation.CONTRADICTED
        # a negation denies its predicate: "Database migrations must be reviewed" does not flip "Don't run
        # database migrations": the flipped terms must hold the negated predicate of one side
        denied = any(t in block.heads or t in said.heads for t in flips)
        # ... and shares its what, not only where ("in the payments service" is where "don't log request bodies" holds)
        if flips and (value_flip or (denied and len(shared - block.context - said.context) >= 2)) and on_topic:
            return Relation.CONTRADICTED
        # every value of the block said to be out: "we dropped python 3.9" after "We support Python 3.9 and later"
        values = block.values()
        # ... of this subject: a sentence with a subject of its own ("map tiles moved from mapbox to maptiler" after
        # "Geocoding requests go through Mapbox") moved another thing off the same product
        own = said.terms - block.terms - set(said.values()) - _CHANGE_VERBS - said.gone
        # its subject is what it opens with before any of the block's words or values
        lead = []
        for t in said.polarity:
            if t in block.terms or said.kind(t) or t in said.gone:
                break
            lead.append(t)
        aligned = not _other_kind(block, said) and (on_topic or not own & set(lead))
        out = all(said.polarity.get(v) == -1 == -block.polarity[v] for v in values)
        if changed and values and out and aligned:
            return Relation.CONTRADICTED
        if value_flip and len(block.terms) <= 3 and aligned:
            return Relation.CONTRADICTED
        # what the block names is said to be out by a construction of change ("switched from WireMock to
        # MockServer", "Okta is gone", "phasing out dbt"), of this subject: another value needs no known kind
        gone = [t for t in flips if t in said.gone and block.polarity[t] > 0]
        named_gone = any(block.kind(t) for t in gone)
        enough = len(shared) >= 2 or (named_gone and bare)
        if changed and gone and enough and (on_topic or named_gone) and not _other_kind(block, said):
            return Relation.CONTRADICTED
        # nothing but the block's words, the change and the new name: "imgproxy has been swapped out for Thumbor"
        if changed and gone and bare and set(said.names) - block.terms:
            return Relation.CONTRADICTED
        return None
    what = shared - block.context  # a restatement says the what again, not only the where
    # half the block's words can be its subject alone ("API responses ... should include a request id"): a sentence
    # holding only half of them restates the block when it says little else (half of both sentences' words shared)
    # the subject said by its head noun alone: "embeddings" are the block's "vector embeddings" when the sentence
    # names no other kind of them
    first = next(iter(block.polarity), "")
    implied = {
        m
        for noun, m in block.before.items()
        if m == first
        and noun in said.polarity
        and m not in said.polarity
        and noun not in said.owners
        and not block.kind(m)
        and next(iter(said.polarity), "") == noun
    }
    coverage = (len(shared) + len(implied)) / max(1, len(block.terms))
    overlap = (len(shared) + len(implied)) / max(1, len(block.terms | said.terms))
    close = coverage >= 0.75 or (coverage >= 0.5 and overlap >= 0.5)
    if len(block.terms) <= 2 and overlap < 0.5:
        close = False  # two words ("emails", "Postmark") are a topic, not a rule, in a sentence that says more
    if durable and close and len(shared) >= 2 and what and (kept_values or not block.values()):
        return Relation.RESTATED  # a block that names values is restated only with one of them
    # a fact ("The cache TTL is 300 seconds.") is restated by the same fact said plainly, with all its values and
    # next to nothing else: a plain sentence that adds a word or two is news about the subject ("... is down")
    # and a rule naming a value is restated by the plain fact of it said with another verb ("Background jobs go
    # through Celery." after "Use Celery for background jobs.")
    plain = not question and not changed and not correction and _PAST.search(s) is None
    # a plain sentence of the block's words alone, most of them: "Background jobs are handled by Sidekiq."
    # what the sentence rules out besides ("secrets are kept in Vault, not in env files") is no news about it
    news = {t for t in said.terms - block.terms if said.polarity[t] > 0}
    subset = not news and coverage >= 0.75
    fact = (overlap >= 0.8 or subset) and not _rule_like(block.text)
    rule_as_fact = bool(block.values()) and coverage >= 0.75 and overlap >= 0.6 and _rule_like(block.text)
    if plain and (fact or rule_as_fact) and len(shared) >= 2 and len(kept_values) == len(block.values()):
        return Relation.RESTATED
    return None


_ORDER = {Relation.CONTRADICTED: 0, Relation.CORRECTED: 1, Relation.RESTATED: 2}


def relate(block_statement: str | list[Clause], sentence: str) -> Relation | None:
    """The strongest relation of ``sentence`` to any clause of a block: contradicted > corrected > restated."""
    parts = clauses(block_statement) if isinstance(block_statement, str) else block_statement
    reading = _read(sentence)
    found = [r for c in parts if (r := relate_clause(c, reading)) is not None]
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
