"""One handler per rule: given where RE2 found a candidate, the spans to redact and where the scan resumes.

A handler reads the small window around the candidate (the key before it, the value after it, the head of a token
found at its literal middle) and asks ``judge`` whether the value is a secret.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable

from memtui.adapters.redact.commands import _command
from memtui.adapters.redact.data import (
    _DEFAULT_PASSWORDS,
    _FLAG_PROSE_WORDS,
    _HEAD,
    _NEEDS_DIGIT,
    _PLACEHOLDER_B,
    _SCHEME_WORDS,
    _SEPARATOR,
)
from memtui.adapters.redact.judge import (
    _CODE_START,
    _DIGEST_OF,
    _DOTTED_NAME,
    _FILLER,
    _MIN_SECRET,
    _PATHLIKE,
    _STRONG,
    _classify,
    _describes_format,
    _family,
    _is_expression,
    _is_placeholder,
    _is_sentence,
    _judge,
    _key_family,
    _looks_like_code,
    _looks_random,
    _specific_kind,
)
from memtui.adapters.redact.patterns import _DIGIT, _FULL_RE, _RULE_RE, Found, Span, _at_boundary

_PEM_END = re.compile(rb"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(rb"(?:[A-Za-z0-9+/=\s]|\\+[nrt])*")  # fallback for a block cut before its END line
_PUTTY_END = re.compile(rb"Private-MAC: [0-9a-f]+")
_PEM_MAX = 20_000

_PAIR_SEP = rb"\\*[\"'][ \t]*,[ \t]*\\*[\"'](?i:value)\\*[\"'][ \t]*:"
_SEP = re.compile(_SEPARATOR + rb"|" + _PAIR_SEP + rb"|\\*[\"'][ \t]*,|\(")
_QUOTE = re.compile(rb"[ \t]*(\\*[\"'])?")
# A single-quoted value stops at a double quote too: in JSON-encoded text a raw `"` ends the JSON string, so a
# quote left open (`pass='...`) must not swallow it (the span never contains a quote).
_QUOTED_VALUE = {ord('"'): re.compile(rb'[^"\\\r\n]{1,1024}'), ord("'"): re.compile(rb"[^'\"\\\r\n]{1,1024}")}
_UNQUOTED_VALUE = re.compile(rb"[^\s\"'\\&;]{1,1024}")
# `password: ab&cd` (YAML, .env) keeps its `&`; `?password=x&user=y` and `cmd password=x && next` do not.
_QUERY_NEXT = re.compile(rb"&(?:&|[ \t]|$|[A-Za-z0-9_.\-\[\]]+=|amp;)")
_AMP_VALUE = re.compile(rb"(?:[^\s\"'\\&;]|&(?!&|[ \t]|$|[A-Za-z0-9_.\-\[\]]+=|amp;)){1,1024}")
_AUTH_SCHEME = re.compile(rb"(?i)(bearer|basic|token|digest|bot|apikey)[ \t]+")
_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_TRAILING = b".,;:)]}>"
# A call whose argument names a secret rather than holding it: `get_password("service")`, `check_token("x")`.
_GETTER = re.compile(rb"(?i)(?:get|read|load|fetch|find|has|is|check|verify|validate|hash|compare|delete|remove|reset)")
_SECRET_PARENT = re.compile(
    rb"(?i)(?:jwt|secret|signing|encrypt|hmac|api|token|auth|credential)[A-Za-z_]*\\*[\"']?[ \t]*[:=][ \t]*[{\[]"
)


def _matched(match: re.Match[bytes] | None) -> re.Match[bytes]:
    """The match of a pattern known to match at that place (it matches the empty string, or the scanner's own match
    already covered it): no match there is a bug in the rules, said as such."""
    if match is None:
        raise AssertionError("a redaction rule's pattern did not match where its scanner matched")
    return match


def _after_blanks(data: bytes, pos: int) -> int:
    while pos < len(data) and data[pos] in b" \t":
        pos += 1
    return pos


def _boundary(data: bytes, end: int) -> int:
    """Move a cut made by a length limit back to a code point boundary."""
    while end < len(data) and 0x80 <= data[end] < 0xC0:
        end -= 1
    return end


_AWS_PAIR = re.compile(rb"[\"'\\]*[ \t]*[,;|:= \t][ \t]*[\"'\\]*([A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])")


def _specific(data: bytes, start: int, end: int, kind: str) -> Found:
    if (kind in _NEEDS_DIGIT and not _DIGIT.search(data, start, end)) or _FILLER.search(data, start, end):
        return [], start + 1
    if kind == "aws_access_key_id":  # `("AKIA...", "<secret>")`, credentials.csv: the secret key right after the id
        pair = _AWS_PAIR.match(data, end)
        if pair is not None and _STRONG.match(pair.group(1)) and not _is_placeholder(pair.group(1)):
            return [(start, end, kind), (pair.start(1), pair.end(1), "aws_secret_access_key")], pair.end(1)
    return [(start, end, kind)], end


def _private_key(data: bytes, start: int, end: int, kind: str) -> Found:
    """The whole block, BEGIN to END; a block cut short still loses its base64 body."""
    limit = min(len(data), end + _PEM_MAX)
    close = (_PUTTY_END if data.startswith(b"PuTTY", start) else _PEM_END).search(data, end, limit)
    if close is not None and data.find(b'"', end, close.start()) < 0 and data.find(b"'", end, close.start()) < 0:
        return [(start, close.end(), kind)], close.end()
    body_end = _matched(_PEM_BODY.match(data, end, limit)).end()
    if body_end == end and data[end : end + 2].lstrip(b"\\")[:1] in (b'"', b"'", b"`"):
        return [], end  # the header alone as a string literal (`_SK_START = b"-----BEGIN ... KEY-----"`): no key
    return [(start, body_end, kind)], body_end


def _after_path(data: bytes, start: int, end: int, kind: str) -> Found:
    """Webhook URLs and SAS signatures: the secret is the last path segment / the query value."""
    if kind == "azure_sas":
        return [(start + len(b"?sig="), end, kind)], end
    marker = b"/services/" if kind == "slack_webhook" else b"/webhooks/"
    secret_start = data.find(marker, start, end)
    if secret_start < 0:
        secret_start = data.index(b"/", data.index(b".com/", start, end) + 5, end)
    return [(secret_start + len(marker), end, kind)], end


def _bearer(data: bytes, start: int, end: int, kind: str) -> Found:
    token_start = start + len(b"bearer")
    while data[token_start] in b" \t":
        token_start += 1
    token = data[token_start:end]
    found = _classify(token, kind)
    if found is None or (found == kind and _is_placeholder(token)):
        return [], token_start
    return [(token_start, end, found)], end


_URL_HOST = re.compile(rb"[A-Za-z0-9.\-]+(?::[0-9]+)?(?:[/?#\"'\\\s,;)]|\Z)")


def _url_host_at(data: bytes, secret_start: int, first_at: int) -> int:
    """The `@` that ends a URL password: the last one before a host name (a password may hold `@` itself)."""
    stop = first_at
    limit = min(len(data), secret_start + 256)
    while stop < limit and data[stop] not in b" \t\r\n\"'\\/":
        stop += 1
    best = first_at - 1
    at = data.find(b"@", first_at, stop)
    while at >= 0:
        if _URL_HOST.match(data, at + 1):
            best = at
        at = data.find(b"@", at + 1, stop)
    return best


def _url_password(data: bytes, start: int, end: int, kind: str) -> Found:
    user_start = data.index(b"://", start, end) + 3
    secret_start = data.index(b":", user_start, end) + 1
    end = _url_host_at(data, secret_start, end) + 1
    secret = data[secret_start : end - 1]
    port, slash, _ = secret.partition(b"/")
    if _is_placeholder(secret) or (secret.isdigit() and len(secret) <= 5) or (slash and port.isdigit()):
        return [], end
    if secret.lower() in _DEFAULT_PASSWORDS or secret.lower() == data[user_start : secret_start - 1].lower():
        return [], end  # `guest:guest@`, `postgres:postgres@localhost`: a default login, the same in every tutorial
    found = _classify(secret, kind)
    if found is None:
        return [], end
    return [(secret_start, end - 1, found)], end


def _url_token(data: bytes, start: int, end: int, kind: str) -> Found:
    """`https://<token>@host`: a user part that is a token (Sentry DSN keys, tokens in git remotes)."""
    secret_start = data.index(b"://", start, end) + 3
    secret = data[secret_start : end - 1]
    found = _specific_kind(secret)
    if found is None and (_is_placeholder(secret) or not _looks_random(secret) or _DIGIT.search(secret) is None):
        return [], end
    return [(secret_start, end - 1, found or "url_password")], end


def _value(data: bytes, key: bytes, kind: str, value_start: int, env_style: bool) -> Found:
    """Validate the value of `key` starting at `value_start` (after the separator, before spaces and any quote)."""
    quote = _matched(_QUOTE.match(data, value_start))
    pos = quote.end()
    opening = quote.group(1)
    if b"auth" in key.lower():  # Authorization: Bearer xyz / Basic xyz: keep the scheme word
        scheme = _AUTH_SCHEME.match(data, pos)
        if scheme is not None:
            pos = scheme.end()
            kind = "bearer_token" if scheme.group(1).lower() == b"bearer" else "auth_header"
    if opening is not None:
        value = _QUOTED_VALUE[opening[-1]].match(data, pos)
        if value is not None and not data.startswith(opening[-1:], value.end()):
            if data.startswith(b"\\", value.end()) and opening[-1:] == b'"':
                pass  # an escaped closing quote (JSON inside JSON)
            elif value.end() - pos < 1024 and value.end() < len(data) and data[value.end()] not in b"\r\n":
                return [], pos  # the quote does not close on this line: not a string literal we understand
    elif data.startswith(b"=", pos):  # `password == x` is a comparison
        return [], pos
    else:
        value = _UNQUOTED_VALUE.match(data, pos)
        if value is not None and data.startswith(b"&", value.end()) and not _QUERY_NEXT.match(data, value.end()):
            value = _AMP_VALUE.match(data, pos)
    if value is None or data.startswith(b"-----BEGIN", pos):  # a PEM block is the private_key rule's to take
        return [], pos
    secret = data[pos : _boundary(data, value.end())]
    if opening is None:
        secret = secret.rstrip(_TRAILING)
        if secret.startswith(b"pass:"):  # openssl -passin pass:xyz
            pos += 5
            secret = secret[5:]
    if not secret:
        return [], pos
    if (
        opening is None
        and secret.lower() in _SCHEME_WORDS
        and data.startswith(_PLACEHOLDER_B, _after_blanks(data, pos + len(secret)))
    ):
        return [], pos  # the scheme word of a token already redacted (`pass=Bearer [REDACTED_SECRET]`)
    specific = _specific_kind(secret)
    if specific is not None:
        return [(pos, pos + len(secret), specific)], pos + len(secret)
    if _describes_format(data, pos, secret):
        return [], pos
    if opening is None and _is_expression(data, secret, pos + len(secret)):
        return _code_literal(data, pos, kind), pos  # a name in a fallback chain; a literal fallback may follow
    if (
        opening is None
        and kind not in ("bearer_token", "auth_header")
        and _looks_like_code(data, key, secret, pos, env_style)
    ):
        return _code_literal(data, pos, kind), pos
    if kind in ("bearer_token", "auth_header"):
        if (
            _is_placeholder(secret)
            or len(secret) < _MIN_SECRET
            or (kind == "bearer_token" and not _DIGIT.search(secret))
        ):
            return [], pos
    elif not _judge(secret, _family(kind), opening is not None, env_style):
        return [], pos
    return [(pos, pos + len(secret), "secret_assignment" if kind == "weak_key" else kind)], pos + len(secret)


_FALLBACK = re.compile(rb"(?:\bor\b|\?\?|\|\|)[ \t]*\\*(['\"])([^'\"\\\r\n]{6,256})\\*\1")
_WRAPPED = re.compile(rb"[A-Za-z_.\[\]]*\([ \t]*\\*(['\"])([^'\"\\\r\n]{6,256})\\*\1[ \t]*\)")
_CODE_END = re.compile(rb"[\r\n;]|\\n")


def _code_literal(data: bytes, pos: int, kind: str) -> list[Span]:
    """A literal inside code given as a key's value: a fallback (`getenv("K") or "..."`, `env.K ?? '...'`) or a
    wrapped literal (`[]byte("...")`, `SecretStr("...")`). `getenv("API_KEY")` holds a name, which no rule takes."""
    stop = _CODE_END.search(data, pos, min(len(data), pos + 300))
    limit = stop.start() if stop else min(len(data), pos + 300)
    literal = _WRAPPED.match(data, pos, limit) or _FALLBACK.search(data, pos, limit)
    if literal is None:
        return []
    secret = literal.group(2)
    specific = _specific_kind(secret)
    if specific is None and not (_judge(secret, _family(kind), True, False) and _looks_random(secret)):
        return []
    return [(literal.start(2), literal.end(2), specific or ("secret_assignment" if kind == "weak_key" else kind))]


def _read_key(data: bytes, start: int) -> tuple[int, int]:
    """Bounds of the key around a key word found at `start`."""
    key_end = start
    while key_end < len(data) and data[key_end] in _KEY_CHARS:
        key_end += 1
    key_start = start
    while key_start > 0 and data[key_start - 1] in _KEY_CHARS and start - key_start < 128:
        key_start -= 1
    return key_start, key_end


def _env_style(key: bytes) -> bool:
    return key.upper() == key and any(c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ" for c in key)


# An Amazon Resource Name up to its resource type (`...:secret:`, `...:parameter/`): what follows names a resource.
_ARN_HEAD = re.compile(rb"arn:aws[\w-]*:[\w-]+:[\w-]*:[0-9]*:\Z")


# A block whose values are ciphertext made to be committed (SealedSecret `encryptedData:`, Renovate `encrypted:`) or
# digests (Podfile.lock `SPEC CHECKSUMS:`, Pipfile `hashes:`): what its keys hold is no secret, whatever they are named.
_ENCRYPTED_PARENT = re.compile(
    rb"(?i)[ \t-]*(?:\\?[\"'])?(?:encrypted(?:_?data)?|(?:spec[ _])?checksums?|digests?|hashes|shasums?)(?:\\?[\"'])?"
    rb"[ \t]*:[ \t]*(?:\\r)?"
)
_ENCRYPTED_INLINE = re.compile(
    rb"(?i)(?:encrypted(?:_?data)?|checksums?|digests?|hashes)(?:\\?[\"'])?[ \t]*:[ \t]*\{[^{}\n]*\Z"
)


def _parent_line(data: bytes, key_start: int) -> bytes:
    """The nearest line above `key_start`'s line indented less (its YAML parent), or b"" (looks back 2 KB; a
    JSON-encoded transcript's `\\n` counts as a line break)."""
    lines = data[max(0, key_start - 2048) : key_start].replace(b"\\n", b"\n").split(b"\n")
    own = lines.pop()
    indent = len(own) - len(own.lstrip(b" \t-"))
    for line in reversed(lines if indent else []):
        stripped = line.lstrip(b" \t")
        if stripped and len(line) - len(stripped) < indent:
            return line
    return b""


# A port right after a name and its colon (`http://auth:5807/verify`, `upstream auth:5807;`, `"secret:8200"`): the
# name is a host, not a key. A URL password is never a bare port (`_url_password` says the same).
_PORT_AFTER = re.compile(rb":[0-9]{1,5}(?=[/?#\s\"'\\,;)\]}>|]|\Z)")
# A single `/` between path characters before the key (`https://vault.local/v1/secret:rotate`, `/api/token:refresh`):
# the key word is a path segment. Not `//` (a URL's user part, the URL rules' to judge) and not a space before the
# `/` (a Windows flag, `cmdkey /pass:...`).
_PATH_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~}%")


def _is_url_part(data: bytes, key_start: int, key_end: int) -> bool:
    """The key word names a host (followed by a port) or a path segment, so the text is no assignment."""
    if _PORT_AFTER.match(data, key_end):
        return True
    return key_start >= 2 and data[key_start - 1] == 47 and data[key_start - 2] in _PATH_CHARS  # 47: "/"


def _assignment(data: bytes, start: int, end: int, kind: str) -> Found:
    key_start, key_end = _read_key(data, start)
    key = data[key_start:key_end]
    family = _key_family(key)
    value_start = _matched(_SEP.match(data, key_end)).end()
    if _is_url_part(data, key_start, key_end):
        return [], value_start  # `http://auth:5807/verify`, `.../v1/secret:rotate`: a host or a path, not a key
    if _DIGEST_OF.search(data[max(0, key_start - 24) : key_start]):
        return [], value_start  # `checksum/secret: <sha256>` (a Helm annotation): a digest of the secret
    if _ENCRYPTED_PARENT.fullmatch(_parent_line(data, key_start)) or _ENCRYPTED_INLINE.search(
        data, max(0, key_start - 200), key_start
    ):
        return [], value_start  # `encryptedData:`, `"encrypted": {"token": ...}`, `SPEC CHECKSUMS:`: no secret
    if _ARN_HEAD.search(data, max(0, key_start - 80), key_start):
        return [], value_start  # `arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbC123`: a resource type
    if data[key_end : key_end + 2] == b"::":
        return [], value_start  # `Password::PASSWORD_RESET`, `Token::new(...)`: a scope, not an assignment
    if (
        family is not None
        and family[0] == "weak_key"
        and _SECRET_PARENT.search(data, max(0, key_start - 40), key_start)
    ):
        family = ("secret_assignment", family[1])  # `"Jwt": {"Key": "..."}`: the parent names what the key is
    if family is None or data.startswith(_PLACEHOLDER_B, key_start - 1):  # `[REDACTED_SECRET]: x` is ours
        return [], value_start
    if key_start >= 2 and data[key_start - 2 : key_start] == b"${":  # ${DB_PASSWORD:-default}, ${api.key:default}
        if data[value_start - 1] != 58:  # `:`
            return [], value_start
        default_start = value_start + (data[value_start : value_start + 1] == b"-")
        close = data.find(b"}", default_start, default_start + 256)
        secret = data[default_start:close] if close > 0 else b""
        if not secret or not _looks_random(secret) or (_specific_kind(secret) is None and _is_placeholder(secret)):
            return [], value_start
        return [(default_start, close, _specific_kind(secret) or family[0] if family else "secret_assignment")], close
    if data[value_start - 1] == 40:  # `(`: `.password("x")`, `setApiKey("x")`, never a getter or a check
        if _GETTER.match(key.rpartition(b".")[2].lstrip(b"_")):
            return [], value_start
        only = _CALL_ARG.match(data, value_start)  # the one argument: `set_password("service", user, pw)` is not
        if only is None or only.group(2) is None or only.group(4) != b")":
            return [], value_start
    elif data[value_start - 1] == 58 and data[key_end : key_end + 12].count(b",") == 1:  # a name/value pair
        pass
    elif data[value_start - 1] == 44:  # `,`: only as the arguments of a call, `f("API_KEY", "value")`, not a list
        before = key_start - 1
        while before > 0 and data[before] in b"#\\\"' \t":
            before -= 1
        if data[before] != 40:  # `(`
            return [], value_start
    return _value(data, key, family[0], value_start, _env_style(key))


def _cli_flag(data: bytes, start: int, end: int, kind: str) -> Found:
    if start > 0 and data[start - 1] not in b" \t\n\r\"'(=[{":
        return [], start + 1  # a dash inside a word (`my-secret-token value`)
    key_end = start + 1
    while data[key_end] not in b" \t":
        key_end += 1
    value_start = key_end
    while data[value_start] in b" \t":
        value_start += 1
    family = _key_family(data[start:key_end])
    if family is None:
        return [], value_start
    word_end = value_start
    while word_end < len(data) and 97 <= data[word_end] <= 122:
        word_end += 1
    if data[value_start:word_end] in _FLAG_PROSE_WORDS and data[word_end : word_end + 1] in b" \t\r\n.,;:)`'\"":
        return [], word_end  # prose about the flag: `the --username and --password options`
    return _value(data, data[start:key_end], family[0], value_start, env_style=True)


def _aws_secret_named(data: bytes, start: int, end: int, kind: str) -> Found:
    """A 40-character AWS secret access key right after its name (`aws configure set ... KEY`, tables, prose)."""
    secret_start = end - 40
    secret_end = end
    secret = data[secret_start:secret_end]
    if (
        len(secret) < 40
        or any(c not in _B64_CHARS or c == 61 for c in secret)  # 61: "="
        or (secret_end < len(data) and data[secret_end] in _B64_CHARS)
        or _is_placeholder(secret)
        or not (_DIGIT.search(secret) and secret.lower() != secret and secret.upper() != secret)
    ):
        # Not a bare AWS secret: the same text may still be an ordinary assignment (`secret_key: <value>`).
        if _RULE_RE["assignment"].match(data, start):
            return _assignment(data, start, end, "assignment")
        return [], start + 1
    return [(secret_start, secret_end, "aws_secret_access_key")], secret_end


def _with_head(data: bytes, start: int, end: int, kind: str) -> Found:
    """A token found at its literal middle (`-us6`, `.atlasv1.`, `:AA`, `Q~`): check the head before it."""
    for head in _HEAD[kind]:
        if start - head < 0:
            continue
        match = _FULL_RE[kind].match(data, start - head)
        if match is not None and match.end() >= end:
            span: Span = (start - head, match.end(), kind)
            return _specific(data, *span)
    return [], start + 1


_XML_VALUE = re.compile(rb"[^<\"'\\\r\n]{1,1024}")


def _xml_element(data: bytes, start: int, end: int, kind: str) -> Found:
    """`<password>value</password>` (Maven settings.xml, .NET configs)."""
    key_end = data.index(b">", start, end)
    key = data[start + 1 : key_end].rpartition(b":")[2]
    family = _key_family(key)
    value = _XML_VALUE.match(data, key_end + 1)
    if family is None or value is None or not data.startswith(b"</", value.end()):
        return [], key_end + 1
    secret = data[key_end + 1 : value.end()]
    specific = _specific_kind(secret)
    if specific is None and not _judge(secret, _family(family[0]), True, False):
        return [], key_end + 1
    return [(key_end + 1, value.end(), specific or family[0])], value.end()


_PROSE_QUOTED = re.compile(rb"[^`'\"\\\s]*")


def _prose_secret(data: bytes, start: int, end: int, kind: str) -> Found:
    """`the password is Xk29fjQ8`: only values that cannot be words (a digit or a symbol, and long enough)."""
    value_start = end - 1
    while data[value_start - 1] not in b" \t`'\"":
        value_start -= 1
    if data[value_start - 1 : value_start] in (b"`", b"'", b'"'):
        value_end = _matched(_PROSE_QUOTED.match(data, value_start)).end()
    else:
        value_end = _matched(_UNQUOTED_VALUE.match(data, value_start)).end()
    secret = data[value_start:value_end].rstrip(_TRAILING)
    word = data[start : data.index(b" ", start, end) if b" " in data[start:end] else end].lower()
    family = "password" if word.startswith((b"pass", b"pwd")) else "secret"
    specific = _specific_kind(secret)
    if specific is None:
        if secret.isalpha() or not _judge(secret, family, True, False) or not _DIGIT.search(secret):
            return [], start + 1
        if _describes_format(data, value_start, secret) or _is_expression(data, secret, value_start + len(secret)):
            return [], start + 1
        dotted_code = _DOTTED_NAME.fullmatch(secret) is not None and secret.lower() == secret
        if _CODE_START.match(secret) or dotted_code or _PATHLIKE.match(secret):
            return [], start + 1
    kind = specific or ("password_assignment" if family == "password" else "secret_assignment")
    return [(value_start, value_start + len(secret), kind)], value_start + len(secret)


_COOKIE_PAIR = re.compile(rb"[ \t\"'\\]*([A-Za-z0-9_.\-]+)=([^;\s\"'\\]*)(;?)")


def _cookie(data: bytes, start: int, end: int, kind: str) -> Found:
    """`Cookie: a=b; sessionid=...`: every value that looks machine-made (session ids, signed cookies)."""
    pos = end - 1
    spans: list[Span] = []
    while True:
        pair = _COOKIE_PAIR.match(data, pos)  # (the first pair starts after any opening quote)
        if pair is None:
            break
        value = pair.group(2)
        if len(value) >= 16 and (_specific_kind(value) or _looks_random(value)) and not _is_placeholder(value):
            spans.append((pair.start(2), pair.end(2), _specific_kind(value) or "cookie"))
        pos = pair.end()
        if not pair.group(3):
            break
    return spans, pos if pos > end else end


def _space_separated(data: bytes, start: int, end: int, kind: str) -> Found:
    """`requirepass X` (redis.conf), `npm config set //host/:_authToken X`, `aws configure set ... X`."""
    value_start = end - 1
    words = data[start:value_start].split()
    name = words[-1].rpartition(b":")[2].rpartition(b"/")[2]
    if words[0] in (b"requirepass", b"masterauth"):
        name = b"password"
    family = _key_family(name)
    if family is None:
        return [], value_start
    return _value(data, name, family[0], value_start, True)


def _twilio_pair(data: bytes, start: int, end: int, kind: str) -> Found:
    """`Client('AC<sid>', '<auth token>')`: the 32 hex digits after an account SID are its auth token."""
    return [(end - 32, end, "twilio_key")], end


def _mysql_dsn(data: bytes, start: int, end: int, kind: str) -> Found:
    """Go's MySQL DSN, `user:password@tcp(host:3306)/db`: the password runs to the `@` before `tcp(`."""
    at = start
    begin = at
    while begin > 0 and begin > at - 512 and data[begin - 1] not in b" \t\r\n\"'\\`(=":
        begin -= 1
    colon = data.find(b":", begin, at)
    if colon < 0:
        return [], end
    secret = data[colon + 1 : at]
    if not _judge(secret, "password", True, True):
        return [], end
    return [(colon + 1, at, "password_assignment")], end


_HOST_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*")


def _pgpass(data: bytes, start: int, end: int, kind: str) -> Found:
    """A ~/.pgpass line, `host:5432:db:user:password`: the last field, when a host starts the line."""
    head = start
    while head > 0 and head > start - 256 and data[head - 1] in _HOST_CHARS:
        head -= 1
    if head == start or (head > 0 and not _at_boundary(data, head) and data[head - 1] not in b"\"' \t"):
        return [], end
    return _password_from(data, end, quoted=True)


def _password_from(data: bytes, end: int, *, quoted: bool) -> Found:
    """The unquoted password that starts at the match's last byte (a .pgpass or .netrc field), if it is judged one."""
    value_start = end - 1
    value = _UNQUOTED_VALUE.match(data, value_start)
    secret = data[value_start : value.end()] if value else b""
    if not _judge(secret, "password", quoted, True):
        return [], end
    return [(value_start, value_start + len(secret), "password_assignment")], value_start + len(secret)


def _basic_credentials(data: bytes, start: int, end: int, kind: str) -> Found:
    """`Basic <base64>` anywhere (headers without a colon, nginx, code): only when it decodes to `user:password`."""
    token_start = _after_blanks(data, start + 5)
    try:
        decoded = base64.b64decode(data[token_start:end], validate=True)
    except ValueError:
        return [], end
    if b":" not in decoded or not all(32 < c < 127 for c in decoded):
        return [], end
    return [(token_start, end, "auth_header")], end


def _powershell_secure(data: bytes, start: int, end: int, kind: str) -> Found:
    """PowerShell `ConvertTo-SecureString "password" -AsPlainText`."""
    quote = data[end - 1 : end]
    close = data.find(quote, end, end + 1024)
    if close < 0:
        return [], end
    secret = data[end:close].rstrip(b"\\")
    if not _judge(secret, "password", True, True):
        return [], end
    return [(end, end + len(secret), "password_assignment")], close


_CALL_ARG = re.compile(rb"[ \t]*(?:\\*([\"'])((?:(?!\\*\1)[^\r\n])*)\\*\1|([^,()\"'\r\n]*))[ \t]*(,|\))")


def _login_call(data: bytes, start: int, end: int, kind: str) -> Found:
    """`login("user", "password")`, `getConnection(url, "app", "password")`, `auth=("api", "key")`: the last of
    two or more arguments, when it is a string literal."""
    pos = end
    if data.startswith(b"(", pos):  # auth=((...
        pos += 1
    args: list[tuple[int, int, bool]] = []
    while len(args) < 4:
        arg = _CALL_ARG.match(data, pos)
        if arg is None:
            return [], end
        quoted = arg.group(2) is not None
        args.append((arg.start(2) if quoted else arg.start(3), arg.end(2) if quoted else arg.end(3), quoted))
        pos = arg.end()
        if arg.group(4) == b")":
            break
    if kind == "positional_call":  # the third argument: (identity|host, user, PASSWORD, ...)
        if len(args) < 3 or not args[2][2]:
            return [], end
        a, b, _ = args[2]
    elif len(args) < 2 or not args[-1][2]:
        return [], end
    else:
        a, b, _ = args[-1]
    secret = data[a:b]
    specific = _specific_kind(secret)
    if specific is None and not _judge(secret, "password", True, True):
        return [], end
    return [(a, b, specific or "password_assignment")], pos


def _sql_password(data: bytes, start: int, end: int, kind: str) -> Found:
    """SQL user management: `IDENTIFIED BY 'x'`, `PASSWORD 'x'`, `WITH PASSWORD = 'x'`."""
    value_start = end - 1
    close = data.find(b"'", value_start, value_start + 512)
    if close < 0:
        return [], end
    secret = data[value_start:close]
    if not _judge(secret, "password", True, True) or _is_sentence(secret):
        if _RULE_RE["assignment"].match(data, start):
            return _assignment(data, start, end, "assignment")
        return [], end
    return [(value_start, close, "password_assignment")], close


def _redis_auth(data: bytes, start: int, end: int, kind: str) -> Found:
    """`127.0.0.1:6379> AUTH password` at a redis-cli prompt."""
    value_start = end - 1
    value = _UNQUOTED_VALUE.match(data, value_start)
    secret = data[value_start : value.end()] if value else b""
    if not _judge(secret, "password", False, True):
        return [], end
    return [(value_start, value_start + len(secret), "password_assignment")], value_start + len(secret)


_ECHO_BEFORE = re.compile(rb"echo[ \t]+(?:-[ne]+[ \t]+)?\\*(['\"]?)([^\s'\"\\|]+)\\*\1[ \t]*\Z")


def _stdin_password(data: bytes, start: int, end: int, kind: str) -> Found:
    """`echo 'pw' | sudo -S ...`, `echo user:pw | chpasswd`: the echoed password."""
    line_start = max(data.rfind(b"\n", 0, start), data.rfind(b"\\n", 0, start) + 1, start - 300, 0)
    echo = _ECHO_BEFORE.search(data[line_start:start])
    if echo is None:
        return [], end
    a, b = line_start + echo.start(2), line_start + echo.end(2)
    if data.startswith(b"chpasswd", end - 8) and data.find(b":", a, b) > 0:
        a = data.find(b":", a, b) + 1  # user:password
    secret = data[a:b]
    if not _judge(secret, "password", True, True):
        return [], end
    return [(a, b, "password_assignment")], end


def _here_string(data: bytes, start: int, end: int, kind: str) -> Found:
    """`az devops login <<< TOKEN`, `gh auth login --with-token <<< TOKEN`: a token fed to a login command."""
    value_start = end - 1
    value = _UNQUOTED_VALUE.match(data, value_start)
    secret = data[value_start : value.end()] if value else b""
    specific = _specific_kind(secret)
    if specific is None and not (len(secret) >= 20 and _looks_random(secret)):
        return [], start + 1
    return [(value_start, value_start + len(secret), specific or "secret_assignment")], start + 1


def _xml_key_value(data: bytes, start: int, end: int, kind: str) -> Found:
    """.NET appSettings: `<add key="DbPassword" value="..." />`."""
    name_start = data.index(b'"', start) + 1
    key = data[name_start : data.index(b'"', name_start)].rstrip(b"\\")
    family = _key_family(key)
    close = data.find(b'"', end, end + 1024)
    if family is None or close < 0:
        return [], end
    secret = data[end:close].rstrip(b"\\")
    specific = _specific_kind(secret)
    if specific is None and not _judge(secret, _family(family[0]), True, False):
        return [], end
    return [(end, end + len(secret), specific or family[0])], close


def _netrc(data: bytes, start: int, end: int, kind: str) -> Found:
    return _password_from(data, end, quoted=False)


def _fish_set(data: bytes, start: int, end: int, kind: str) -> Found:
    """fish: `set -gx API_TOKEN value`."""
    words = data[start : end - 1].split()
    name = words[-1]
    family = _key_family(name)
    if family is None:
        return [], end - 1
    return _value(data, name, family[0], end - 1, _env_style(name))


_HANDLERS: dict[str, Callable[[bytes, int, int, str], Found]] = {
    "private_key": _private_key,
    "slack_webhook": _after_path,
    "discord_webhook": _after_path,
    "azure_sas": _after_path,
    "bearer_token": _bearer,
    "url_password": _url_password,
    "url_token": _url_token,
    "netrc": _netrc,
    "twilio_pair": _twilio_pair,
    "mysql_dsn": _mysql_dsn,
    "pgpass": _pgpass,
    "prose_secret": _prose_secret,
    "cookie": _cookie,
    "space_separated": _space_separated,
    "fish_set": _fish_set,
    "command": _command,
    "aws_secret_named": _aws_secret_named,
    "basic_credentials": _basic_credentials,
    "powershell_secure": _powershell_secure,
    "login_call": _login_call,
    "positional_call": _login_call,
    "sql_password": _sql_password,
    "redis_auth": _redis_auth,
    "stdin_password": _stdin_password,
    "here_string": _here_string,
    "xml_key_value": _xml_key_value,
    "mailchimp_key": _with_head,
    "terraform_token": _with_head,
    "telegram_bot_token": _with_head,
    "azure_ad_secret": _with_head,
    "discord_bot_token": _with_head,
    "xml_element": _xml_element,
    "assignment": _assignment,
    "cli_flag": _cli_flag,
}
