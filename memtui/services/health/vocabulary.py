"""The developer vocabulary the health rules compare values with, and the rewrites that say one thing one way.

Two members of one kind in the same place of two sentences on one topic say different things ("Dependabot" after
"Renovate", "YAML" after "JSON"); a light verb ("live in", "are managed in", "go through") says where a thing is,
not what it is, so a restatement may use another one; and a frequency or a switch has several spellings
("nightly" / "every night", "every other" / "every second", "turn X off" / "turn off X"). Words said in passing
("fyi", "pls") carry nothing, some words mean the same here ("straight" / "directly"), and a name made of parts
next to the noun it names ("the media-prod bucket") is a value of that noun.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Kinds of values: two different members of one kind in the same place say different things.
VALUE_KINDS: dict[str, frozenset[str]] = {
    "weekday": frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]),
    "package_manager": frozenset(["npm", "pnpm", "yarn", "bun", "pip", "uv", "poetry", "pipenv", "conda"]),
    "test_runner": frozenset(["jest", "vitest", "mocha", "pytest", "unittest", "nose", "jasmine", "ava", "bats"]),
    "e2e_runner": frozenset(["cypress", "playwright", "selenium", "puppeteer", "webdriverio"]),
    "linter": frozenset(["ruff", "flake8", "pylint", "black", "eslint", "biome", "prettier", "oxlint"]),
    "type_checker": frozenset(["mypy", "pyright", "pyre", "pytype"]),
    "vcs_flow": frozenset(["rebase", "merge", "squash"]),
    "branch": frozenset(["main", "master", "trunk"]),
    "indent": frozenset(["tabs", "tab", "spaces", "space"]),
    "quote": frozenset(["single", "double"]),
    "timezone": frozenset(["utc", "local", "europe/lisbon", "cet", "pst", "est"]),
    "shell": frozenset(["bash", "zsh", "fish", "sh"]),
    "db": frozenset(["postgres", "postgresql", "mysql", "sqlite", "mariadb", "mongodb", "dynamodb", "cockroachdb"]),
    "cache": frozenset(["redis", "memcached", "valkey", "keydb"]),
    "queue": frozenset(["celery", "rq", "sidekiq", "kafka", "rabbitmq", "sqs", "nats", "bullmq", "dramatiq"]),
    "container": frozenset(["docker", "podman"]),
    "cloud_region": frozenset(["us-east-1", "us-west-2", "eu-west-1", "eu-central-1"]),
    "cloud": frozenset(["aws", "gcp", "azure", "hetzner", "digitalocean"]),
    "cdn": frozenset(["cloudfront", "cloudflare", "fastly", "akamai", "bunny"]),
    "ci": frozenset(["jenkins", "circleci", "travis", "buildkite", "drone", "teamcity"]),
    "dependency_bot": frozenset(["renovate", "dependabot"]),
    "monorepo_tool": frozenset(["turborepo", "nx", "lerna", "rush", "bazel", "pants"]),
    "bundler": frozenset(["webpack", "vite", "rollup", "esbuild", "parcel", "turbopack", "rspack"]),
    "orm": frozenset(["sqlalchemy", "prisma", "drizzle", "typeorm", "sequelize", "peewee", "diesel"]),
    "http_client": frozenset(["httpx", "aiohttp", "axios", "urllib3"]),
    "feature_flags": frozenset(["launchdarkly", "unleash", "flagsmith", "growthbook", "statsig"]),
    "email": frozenset(["postmark", "sendgrid", "mailgun", "ses", "mailchimp", "resend"]),
    "error_tracking": frozenset(["sentry", "rollbar", "bugsnag", "honeybadger"]),
    "monitoring": frozenset(["datadog", "grafana", "prometheus", "newrelic", "honeycomb"]),
    "data_format": frozenset(["json", "yaml", "yml", "toml", "xml", "csv", "ini", "msgpack"]),
    "pagination": frozenset(["cursor", "cursor-based", "offset", "offset-based", "keyset", "page-based"]),
    "case_style": frozenset(["camelcase", "snake_case", "kebab-case", "pascalcase", "screaming_snake_case"]),
    # a recurrence: "every week" after "every night" ("day" is too common a word to be a value)
    "period": frozenset(["night", "week", "month", "year", "quarter", "sprint", "weekend"]),
    "api_style": frozenset(["rest", "graphql", "grpc", "soap", "trpc", "json-rpc"]),
    "docs_tool": frozenset(["sphinx", "mkdocs", "docusaurus", "jekyll", "hugo", "mdbook", "vitepress"]),
    "id_type": frozenset(["uuid", "uuidv4", "uuidv7", "ulid", "bigint", "serial", "cuid", "nanoid", "snowflake"]),
    "license": frozenset(["mit", "apache", "gpl", "bsd", "mpl", "agpl"]),
    # the register of a text and the variety of a language: "informal" after "formal", "American" after "British"
    "register": frozenset(["formal", "informal", "casual", "conversational", "colloquial"]),
    "language_variety": frozenset(["british", "american", "australian", "canadian", "brazilian", "european"]),
    "logging_library": frozenset(
        ["structlog", "loguru", "logbook", "log4j", "logback", "slf4j", "winston", "pino", "bunyan", "zap", "logrus"]
    ),
}
KIND_OF = {value: kind for kind, values in VALUE_KINDS.items() for value in values}

# Words that say the opposite of each other without a negator: "agents can write to it" after "read-only".
OPPOSITES: dict[str, frozenset[str]] = {
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
    # kept or cleared, in or out, fixed or random: "leave the outputs in" after "cleared of outputs"
    "cleared": frozenset(["kept", "keep", "leave", "left", "in"]),
    "clear": frozenset(["kept", "keep", "leave", "left"]),
    "kept": frozenset(["cleared", "clear", "removed", "stripped", "deleted"]),
    "out": frozenset(["in"]),
    "fixed": frozenset(["random", "randomly", "each time", "every time"]),
    "random": frozenset(["fixed"]),
    "randomly": frozenset(["fixed"]),
    "automatically": frozenset(["manual", "manually"]),
    "automatic": frozenset(["manual", "manually"]),
    "manual": frozenset(["automatic", "automatically", "auto"]),
    "manually": frozenset(["automatic", "automatically", "auto"]),
    "lowercase": frozenset(["uppercase"]),
    "uppercase": frozenset(["lowercase"]),
    "ascending": frozenset(["descending"]),
    "descending": frozenset(["ascending"]),
    "strict": frozenset(["lenient", "loose", "relaxed"]),
}

# Words said in passing that carry no statement: "fyi our gateway is Kong" says "our gateway is Kong".
FILLERS = frozenset(
    ["fyi", "btw", "pls", "plz", "please", "lol", "hey", "heads", "reminder", "quick", "note", "anyway"]
)

# One word for each group of words that mean the same here ("push straight to main" is "push directly to main").
SYNONYMS = {
    word: canonical
    for canonical, words in {
        "direct": "directly straight straight-to",
        "automatic": "auto automatically",
        "manual": "manually",
        "approval": "approve approves approved sign-off signoff",
        "prod": "production",
        "dev": "development",
        "repo": "repository",
        "config": "configuration",
        "docs": "documentation",
        "db": "database",
        "env": "environment",
        "postgres": "postgresql psql pg",
        # the abbreviations people type for the tools they name in full elsewhere
        "kubernetes": "k8s kube",
        "javascript": "js",
        "typescript": "ts",
        "python": "py",
        "terraform": "tf",
        "github": "gh",
        "mongodb": "mongo",
        "node": "nodejs node.js",
    }.items()
    for word in words.split()
}
# Nouns whose name follows or precedes them: "the media-prod bucket", "bucket media-prod", "branch release-2"
SLOT_NOUNS = frozenset(
    [
        "bucket",
        "branch",
        "image",
        "queue",
        "table",
        "channel",
        "namespace",
        "cluster",
        "topic",
        "index",
        "tag",
        "label",
        "environment",
        "env",
        "project",
        "account",
        "domain",
        "host",
        "region",
        "profile",
        "runner",
        "instance",
        "machine",
        "server",
        "model",
    ]
)

# Verbs that only say where a thing is or that it is used: "All feature flags live in LaunchDarkly" says what
# "Feature flags are managed in LaunchDarkly" says. Left out of a sentence's terms, so a restatement may pick
# another one (compared by their roots, see ``rules.root``).
LIGHT_VERBS = frozenset(
    [
        "use",
        "used",
        "uses",
        "using",
        "follow",
        "follows",
        "followed",
        "live",
        "lives",
        "stay",
        "stays",
        "remain",
        "remains",
        "belong",
        "belongs",
        "manage",
        "managed",
        "handle",
        "handled",
        "kept",
        "stored",
        "written",
        "define",
        "defined",
        "sit",
        "sits",
        "reside",
        "resides",
        "located",
        "happen",
        "happens",
        "come",
        "comes",
        "put",
        "turned",
        "send",
        "sent",
        "sends",
        "handled",
        "kept",
        "stored",
        "written",
        "folder",
        "directory",
        "dir",
        "via",
        "through",
        "across",
        "our",
        "all",
        "whole",
        "entire",
        # the passive said with "get": "webhooks get retried" is "webhooks are retried"
        "get",
        "gets",
        "getting",
    ]
)

_COUNTS = {
    w: str(n)
    for n, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    )
}
# the units a frequency counts in ("every morning" is a time of day, not "every day")
_UNITS = r"(?:second|minute|hour|day|night|morning|evening|afternoon|week|month|year|quarter)"
_TIMES = {"twice": "2", "thrice": "3"}
# a frequency is said in the largest whole unit: "every 24 hours" is "every day", "twice a day" "every 12 hours"
_SMALLER = {"day": ("hour", 24), "hour": ("minute", 60), "minute": ("second", 60), "week": ("day", 7)}
_LARGER = {small: (large, n) for large, (small, n) in _SMALLER.items()}


def _every(count: int, unit: str) -> str:
    while unit in _LARGER and count and count % _LARGER[unit][1] == 0:
        unit, count = _LARGER[unit][0], count // _LARGER[unit][1]
    return f"every_{count}_{unit}"


def _times(count: str, unit: str) -> str:
    """ "twice a day" as an interval when it is a whole one ("every_12_hour"), else as a count per unit."""
    unit = unit.lower()
    if unit in _SMALLER and count.isdigit() and int(count) and _SMALLER[unit][1] % int(count) == 0:
        return _every(_SMALLER[unit][1] // int(count), _SMALLER[unit][0])
    return f"every_{count}x_{unit}"


# the prefix of a frequency said as one word ("every_6_hour"), a value of the kind "frequency"
FREQUENCY = "every_"
# One spelling for things said several ways; applied to both sides before they are compared.
_REWRITES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"\bevery\s+other\b", re.I), "every second"),
    (re.compile(r"\bbi-?weekly\b", re.I), "every second week"),
    (re.compile(r"\bnightly\b", re.I), "every night"),
    (re.compile(r"\bdaily\b", re.I), "every day"),
    (re.compile(r"\bweekly\b", re.I), "every week"),
    (re.compile(r"\bmonthly\b", re.I), "every month"),
    (re.compile(r"\bhourly\b", re.I), "every hour"),
    # "once a day" is "every day", "twice a week" a frequency of its own ("every_2x_week"), "per hour" and "each
    # night" are "every hour" and "every night"
    (re.compile(r"\b(?:once|one\s+time)\s+(?:a|an|per|each|every)\s+(?=" + _UNITS + r")", re.I), "every "),
    (
        re.compile(
            r"\b(twice|thrice|(\d+|"
            + "|".join(_COUNTS)
            + r")\s+times)\s+(?:a|an|per|each|every)\s+("
            + _UNITS
            + r")s?\b",
            re.I,
        ),
        lambda m: _times(
            _TIMES.get(m.group(1).lower(), _COUNTS.get((m.group(2) or "").lower(), m.group(2))), m.group(3)
        ),
    ),
    (re.compile(r"\b(?:per|each)\s+(?=" + _UNITS + r"\b)", re.I), "every "),
    # a frequency is one value however it is said: "every 6 hours" and "hourly" are both frequencies, compared as
    # one word (see ``FREQUENCY``)
    (
        re.compile(
            r"\bevery\s+(?:(\d+|" + "|".join(_COUNTS) + r")\s+)?(" + _UNITS + r")s?\b",
            re.I,
        ),
        lambda m: _every(int(_COUNTS.get((m.group(1) or "1").lower(), m.group(1) or "1")), m.group(2).lower()),
    ),
    # a prohibition with its condition is the requirement: "Don't merge unless CI passes" is "merge only after CI
    # passes"
    (re.compile(r"^(?:don'?t|do\s+not|never)\s+(.+?)\s+unless\s+(.+)$", re.I), r"\1 only after \2"),
    # a negated stop keeps: "we never stopped using MySQL" still uses it
    (re.compile(r"\b(?:never|not|didn'?t|haven'?t|hasn'?t|won'?t)\s+(?:stop|stopped|quit|ceased)\b", re.I), "kept"),
    # a switch said after its object: "turning strict mode off" is "turning off strict mode"
    (
        re.compile(r"\b((?:turn|switch|shut)(?:ed|ing|s)?)\s+((?:(?!off\b|on\b)[\w.:/-]+\s+){1,3}?)off\b", re.I),
        r"\1 off \2",
    ),
)


def rewrite(text: str) -> str:
    """``text`` with each of the spellings above said one way."""
    low = text.lower()
    if not any(
        w in low
        for w in (
            "every",
            "weekly",
            "nightly",
            "daily",
            "monthly",
            "hourly",
            " off",
            "unless",
            "stop",
            "quit",
            "cease",
            "once",
            "twice",
            "thrice",
            "times",
            "per ",
            "each ",
        )
    ):
        return text
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


# When a statement holds, said beside it: "switched to chargebee last quarter", "done with cerbos going forward". It
# says nothing about what the statement is about, so it is left out before its words are read (the change it marks
# is read from the whole sentence).
_TIME_PHRASE = re.compile(
    r"\b(?:(?:last|this|next|past|current)\s+(?:quarter|sprint|week|month|year|release|cycle|iteration|term)"
    r"|going\s+forward|from\s+now\s+on|from\s+here\s+on(?:\s+out)?|these\s+days|nowadays|for\s+now|at\s+the\s+moment"
    r"|for\s+the\s+time\s+being|as\s+of\s+(?:today|now|this\s+\w+|last\s+\w+|\w+day|v?\d[\w.]*)|lately|recently"
    r"|since\s+(?:last\s+\w+|the\s+(?:\w+\s+)?(?:release|sprint|migration|rewrite|redesign|refactor|reorg|launch|cutover)|(?:mon|tues|wednes|thurs|fri|satur|sun)day|v?\d[\w.]*"
    r"|january|february|march|april|may|june|july|august|september|october|november|december|q[1-4])"
    r"|starting\s+(?:today|tomorrow|now|next\s+\w+|this\s+\w+|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
    r"|(?:after|from|until|in|by|since|starting)\s+(?:january|february|march|april|june|july|august|september|october"
    r"|november|december)"
    # a change that has finished says when the statement holds from: "runs on sonic after the migration finished"
    r"|(?:after|since|now\s+that)\s+the\s+(?:\w+\s+)?(?:migration|move|switch|switchover|cutover|rewrite|rollout)"
    r"(?:\s+(?:finished|completed|landed|is\s+done|was\s+done|went\s+through))?"
    r"|(?:right\s+)?now(?!\s+that\b)|anymore|any\s+more)\b",
    re.I,
)


def strip_time(text: str) -> str:
    """``text`` without the phrases that say when it holds."""
    if not _TIME_PHRASE.search(text):
        return text
    return " ".join(_TIME_PHRASE.sub(" ", text).split())
