"""Secret redaction, run before a rollout leaves the machine and before any model output is stored.

Why this shape: 22 patterns applied one after another with `re` ran at 1.7 MB/s (perf-baselines §8). Here every rule
is one alternative of a single RE2 program run over the UTF-8 bytes once: RE2 is a linear-time DFA, so the scan costs
the same whatever the number of rules. The rare candidates it reports are validated in Python on a small window
(value heuristics, placeholders, key names), and the text is rebuilt once (as bytes, then decoded).

Replacements keep the readable prefix of Codex's rules (`Bearer `, `password=`, `"password": "`, `https://user:`), and a
span never contains a quote or a lone backslash, so redacting inside a JSON-encoded string keeps it valid JSON.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import re2

PLACEHOLDER = "[REDACTED_SECRET]"
_PLACEHOLDER_B = PLACEHOLDER.encode()

# Keywords that make `key = value` / `"key": "value"` / `--key value` a candidate (matched case-insensitively).
_KEYWORDS = rb"pass|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth|credential|accountkey"


def _ci(pattern: bytes) -> bytes:
    """ASCII-only case-insensitivity: RE2's (?i) also folds U+017F (ſ) and U+212A (K) into s and k."""
    return b"".join(b"[%c%c]" % (c, c ^ 0x20) if chr(c).isascii() and chr(c).isalpha() else bytes([c]) for c in pattern)


# How the key of an assignment ends (case-insensitively); the rest of the key name is read backwards in Python.
_KEY_END = (
    rb"pass(?:word|wd|phrase)?|secret|token|auth(?:orization)?|credentials?"
    rb"|(?:api|access|private|secret|account|auth|signing|encryption|master|client)[_\-]?key"
)

_SEPARATOR = rb"(?:\\*[\"'])?\]?[ \t]*(?::=|=>|[:=])"

# Ordered RE2 alternatives: (kind, pattern). Order matters only between alternatives starting at the same byte.
RULES: tuple[tuple[str, bytes], ...] = (
    ("private_key", rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    ("aws_access_key_id", rb"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("github_token", rb"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ("anthropic_key", rb"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", rb"\bsk-[A-Za-z0-9_\-]{20,}"),
    ("stripe_key", rb"\b[sr]k_live_[A-Za-z0-9]{16,}"),
    ("slack_token", rb"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})"),
    ("slack_webhook", rb"hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("google_api_key", rb"\bAIza[A-Za-z0-9_\-]{35}"),
    ("gitlab_token", rb"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("huggingface_token", rb"\bhf_[A-Za-z0-9]{30,}"),
    ("npm_token", rb"\bnpm_[A-Za-z0-9]{36}"),
    ("pypi_token", rb"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{40,}"),
    ("sendgrid_key", rb"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("jwt", rb"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    ("bearer_token", rb"\b" + _ci(b"bearer") + rb"[ \t]+[A-Za-z0-9._~+/\-]{16,}=*"),
    ("url_password", rb"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@\"'\\]*:[^\s/@\"'\\]+@"),
    ("cli_flag", rb"--[A-Za-z0-9_\-]*(?:" + _ci(_KEYWORDS) + rb")[A-Za-z0-9_\-]*[ \t]+[^\s\\\-]"),
    # Starts at the key's last word (`DB_PASSWORD` matches at PASSWORD): a leading `[a-z_]*` would cost 3x in the DFA,
    # and ending the key on a known word keeps max_tokens / token_count / password_hash from being candidates at all.
    # The 4 value bytes keep `token: str`, `password=""` and `'Authorization': f'...'` out of the Python validation.
    ("assignment", rb"(?:" + _ci(_KEY_END) + rb")" + _SEPARATOR + rb"[ \t]*(?:\\*[\"'])?[^\s\"'\\&;]{4}"),
)

# Kinds a redaction can be counted under (assignments are refined by key name, tokens in values by their format).
KINDS: tuple[str, ...] = (
    *(kind for kind, _ in RULES if kind not in ("cli_flag", "assignment")),
    "aws_secret_access_key",
    "password_assignment",
    "secret_assignment",
    "auth_header",
)

# Literal substrings (lowercase) at least one of which every match contains: text without any is returned unchanged.
ANCHORS: tuple[str, ...] = (
    "-----begin", "akia", "asia", "gh", "sk-", "k_live_", "xox", "xapp-", "hooks.slack.com", "aiza", "glpat-", "hf_",
    "npm_", "pypi-", "sg.", "eyj", "bearer", "://", "pass", "secret", "token", "auth", "credential", "key",
)  # fmt: skip


def _compile() -> re2._Regexp:
    options = re2.Options()
    options.max_mem = 64 << 20  # room for the DFA cache: a bail-out to the NFA would cost an order of magnitude
    return re2.compile(b"|".join(b"(" + pattern + b")" for _, pattern in RULES), options)


_SCANNER = _compile()
_GROUP_KIND = {index: kind for index, (kind, _) in enumerate(RULES, start=1)}

# Token formats recognised inside a value (assignment, URL password, bearer) to count it under its real kind.
_SPECIFIC = re.compile(
    b"|".join(
        b"(?P<" + kind.encode() + b">" + pattern.removeprefix(rb"\b") + b")"
        for kind, pattern in RULES
        if kind not in ("private_key", "slack_webhook", "bearer_token", "url_password", "cli_flag", "assignment")
    )
)
_NEEDS_DIGIT = frozenset({"openai_key", "anthropic_key", "bearer_token"})
_DIGIT = re.compile(rb"[0-9]")

_PEM_END = re.compile(rb"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(rb"(?:[A-Za-z0-9+/=\s]|\\+[nrt])*")  # fallback for a block cut before its END line
_PEM_MAX = 20_000

_SEP = re.compile(_SEPARATOR)
_QUOTE = re.compile(rb"[ \t]*(\\*[\"'])?")
# A single-quoted value stops at a double quote too: in JSON-encoded text a raw `"` ends the JSON string, so a
# quote left open (`pass='...`) must not swallow it (the span never contains a quote).
_QUOTED_VALUE = {ord('"'): re.compile(rb'[^"\\\r\n]{1,1024}'), ord("'"): re.compile(rb"[^'\"\\\r\n]{1,1024}")}
_UNQUOTED_VALUE = re.compile(rb"[^\s\"'\\&;]{1,1024}")
_SCHEME_WORDS = frozenset((b"bearer", b"basic", b"token", b"digest"))
_AUTH_SCHEME = re.compile(rb"(?i)(bearer|basic|token|digest)[ \t]+")
_CODE_START = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]*[(\[]|[{(\[]")  # a call, a subscript, a literal
_DOTTED_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_SNAKE_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
_KEYWORD_IN = re.compile(rb"(?i)" + _KEYWORDS)
_ALPHA_WORD = re.compile(rb"[A-Za-z]+")
_PROSE_NEXT = re.compile(rb" +[A-Za-z]")
_MASK = re.compile(rb"[*xX.\-_#]+|(?:\xe2\x80\xa2)+")  # ****, xxxx, ..., ••••
_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_KEY_STOP = frozenset(b"\\\"']:= \t")
_TRAILING = b".,;:)]}>"
_TYPE_WORDS = frozenset(
    b"str string bytes int integer bool boolean none null nil true false undefined optional any object "
    b"required optional secret password token redacted hidden empty example placeholder".split()
)
_PASSWORD_ENDINGS = (b"password", b"passwd", b"passphrase", b"pass")
_MIN_LENGTH = {False: {False: 8, True: 8}, True: {False: 6, True: 4}}  # [is password][is quoted]
_KEY_ENDINGS = (
    *_PASSWORD_ENDINGS,
    b"secret",
    b"token",
    b"key",
    b"auth",
    b"authorization",
    b"credential",
    b"credentials",
)


@dataclass
class Redaction:
    """Redacted text plus how many secrets of each kind were replaced (never the secrets themselves)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str) -> Redaction:
    """Replace every secret in `text` with PLACEHOLDER, in one RE2 pass and one rebuild of the string."""
    if not text:
        return Redaction(text, {})
    data = text.encode("utf-8", "surrogatepass")
    spans = _scan(data)
    if not spans:
        return Redaction(text, {})
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    counts: dict[str, int] = {}
    last = 0
    for start, end, kind in spans:
        pieces.append(view[last:start])
        pieces.append(_PLACEHOLDER_B)
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    pieces.append(view[last:])
    # Rebuilding bytes and decoding once beats mapping offsets back to the str and slicing it (UCS-4 copies).
    return Redaction(b"".join(pieces).decode("utf-8", "surrogatepass"), counts)


def redact_text(text: str) -> str:
    return redact(text).text


def merge_counts(*counts: Mapping[str, int]) -> dict[str, int]:
    """Sum per-kind counts, e.g. over every redaction of one job (the `redactions` column)."""
    total: dict[str, int] = {}
    for one in counts:
        for kind, n in one.items():
            total[kind] = total.get(kind, 0) + n
    return total


def has_anchor(text: str) -> bool:
    """True when `text` contains a literal every rule needs; without one, redact() is the identity."""
    lowered = text.lower()
    return any(anchor in lowered for anchor in ANCHORS)


# --- scanning ----------------------------------------------------------------------------------------------------

Span = tuple[int, int, str]


def _scan(data: bytes) -> list[Span]:
    """Byte spans (sorted, disjoint) of the secrets in `data`."""
    spans: list[Span] = []
    pos = 0
    end_of_data = len(data)
    search = _SCANNER.search
    while pos < end_of_data:
        match = search(data, pos)
        if match is None:
            break
        start, end = match.span()
        kind = _GROUP_KIND[match.lastindex]
        span, resume = _HANDLERS.get(kind, _specific)(data, start, end, kind)
        if span is not None:
            spans.append(span)
        pos = max(resume, start + 1)
    return spans


def _after_blanks(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in b" \t":
        pos += 1
    return pos


def _boundary(data: bytes, end: int) -> int:
    """Move a cut made by a length limit back to a code point boundary."""
    while end < len(data) and 0x80 <= data[end] < 0xC0:
        end -= 1
    return end


def _classify(value: bytes, default: str) -> str | None:
    """Kind of a token found in a value: its own format when recognised, else `default`; None if not a secret."""
    match = _SPECIFIC.match(value)
    kind = match.lastgroup if match else None
    if kind is None or (kind in _NEEDS_DIGIT and not _DIGIT.search(match.group())):
        kind = default
    if kind in _NEEDS_DIGIT and not _DIGIT.search(value):
        return None
    return kind


def _is_placeholder(value: bytes) -> bool:
    """Values that stand for a secret rather than being one: ${VAR}, <token>, {{x}}, ****, our own placeholder."""
    return (
        value.startswith((_PLACEHOLDER_B, b"$", b"<", b"{{", b"%(", b"%s", b"[REDACTED"))
        or _MASK.fullmatch(value) is not None
        or value.lower() in _TYPE_WORDS
    )


def _specific(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    if kind in _NEEDS_DIGIT and not _DIGIT.search(data, start, end):
        return None, start + 1
    return (start, end, kind), end


def _private_key(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    """The whole block, BEGIN to END; a block cut short still loses its base64 body."""
    limit = min(len(data), end + _PEM_MAX)
    close = _PEM_END.search(data, end, limit)
    if close is not None and data.find(b'"', end, close.start()) < 0 and data.find(b"'", end, close.start()) < 0:
        return (start, close.end(), kind), close.end()
    body_end = _PEM_BODY.match(data, end, limit).end()
    return (start, body_end, kind), body_end


def _slack_webhook(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    secret_start = data.index(b"/services/", start, end) + len(b"/services/")
    return (secret_start, end, kind), end


def _bearer(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    token_start = start + len(b"bearer")
    while data[token_start] in b" \t":
        token_start += 1
    found = _classify(data[token_start:end], kind)
    if found is None:
        return None, token_start
    return (token_start, end, found), end


def _url_password(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    secret_start = data.index(b":", data.index(b"://", start, end) + 3, end) + 1
    secret = data[secret_start : end - 1]
    if _is_placeholder(secret) or (secret.isdigit() and len(secret) <= 5):
        return None, end
    found = _classify(secret, kind)
    if found is None:
        return None, end
    return (secret_start, end - 1, found), end


def _key_kind(key: bytes) -> str | None:
    """Kind for a key name, or None when the key only mentions a keyword (max_tokens, password_hash, author)."""
    norm = key.lower().translate(None, b"-_.")
    if not norm.endswith(_KEY_ENDINGS) or norm == b"bypass":
        return None
    if b"secretaccesskey" in norm:
        return "aws_secret_access_key"
    if norm.endswith(_PASSWORD_ENDINGS):
        return "password_assignment"
    return "secret_assignment"


def _value(data: bytes, key: bytes, kind: str, value_start: int) -> tuple[Span | None, int]:
    """Validate the value of `key` starting at `value_start` (after the separator, before spaces and any quote)."""
    quote = _QUOTE.match(data, value_start)
    pos = quote.end()
    opening = quote.group(1)
    if b"auth" in key.lower():  # Authorization: Bearer xyz / Basic xyz: keep the scheme word
        scheme = _AUTH_SCHEME.match(data, pos)
        if scheme is not None:
            pos = scheme.end()
            kind = "bearer_token" if scheme.group(1).lower() == b"bearer" else "auth_header"
    if opening is not None:
        value = _QUOTED_VALUE[opening[-1]].match(data, pos)
    elif data.startswith(b"=", pos):  # `password == x` is a comparison
        return None, pos
    else:
        value = _UNQUOTED_VALUE.match(data, pos)
    if value is None or data.startswith(b"-----BEGIN", pos):  # a PEM block is the private_key rule's to take
        return None, pos
    secret = data[pos : _boundary(data, value.end())]
    if opening is None:
        secret = secret.rstrip(_TRAILING)
    if not secret or _is_placeholder(secret) or (_SNAKE_NAME.fullmatch(secret) and _KEYWORD_IN.search(secret)):
        return None, pos
    if opening is None and _looks_like_code_or_prose(data, key, secret, pos):
        return None, pos
    if (
        opening is None
        and secret.lower() in _SCHEME_WORDS
        and data.startswith(_PLACEHOLDER_B, _after_blanks(data, pos + len(secret)))
    ):
        return None, pos  # the scheme word of a token already redacted (`pass=Bearer [REDACTED_SECRET]`)
    found = _classify(secret, kind)
    if found is None:
        return None, pos
    if found == kind and len(secret) < _MIN_LENGTH[kind == "password_assignment"][opening is not None]:
        return None, pos
    return (pos, pos + len(secret), found), pos + len(secret)


def _looks_like_code_or_prose(data: bytes, key: bytes, secret: bytes, value_start: int) -> bool:
    """Unquoted values that are code (self.token, api_key, get_token()) or a sentence (Token: expired soon)."""
    if _CODE_START.match(secret):
        return True
    if _DOTTED_NAME.fullmatch(secret) and not _DIGIT.search(secret):
        return True
    if secret.lower().translate(None, b"-_.") == key.lower().lstrip(b"-").translate(None, b"-_."):
        return True
    return _ALPHA_WORD.fullmatch(secret) is not None and _PROSE_NEXT.match(data, value_start + len(secret)) is not None


def _assignment(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    key_end = start
    while data[key_end] not in _KEY_STOP:
        key_end += 1
    key_start = start
    while key_start > 0 and data[key_start - 1] in _KEY_CHARS and start - key_start < 128:
        key_start -= 1
    key = data[key_start:key_end]
    key_kind = _key_kind(key)
    value_start = _SEP.match(data, key_end).end()
    if key_kind is None or data.startswith(_PLACEHOLDER_B, key_start - 1):  # `[REDACTED_SECRET]: x` is ours
        return None, value_start
    return _value(data, key, key_kind, value_start)


def _cli_flag(data: bytes, start: int, end: int, kind: str) -> tuple[Span | None, int]:
    key_end = start + 2
    while data[key_end] not in b" \t":
        key_end += 1
    value_start = key_end
    while data[value_start] in b" \t":
        value_start += 1
    key_kind = _key_kind(data[start:key_end])
    if key_kind is None:
        return None, value_start
    return _value(data, data[start:key_end], key_kind, value_start)


_HANDLERS = {
    "private_key": _private_key,
    "slack_webhook": _slack_webhook,
    "bearer_token": _bearer,
    "url_password": _url_password,
    "assignment": _assignment,
    "cli_flag": _cli_flag,
}
