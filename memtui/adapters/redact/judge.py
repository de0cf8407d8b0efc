"""Is this value a secret? The detectors behind every rule's handler: vendor formats, placeholders, code and prose,
how random a value looks (entropy, case changes), and what a key name says the value is.
"""

from __future__ import annotations

import itertools
import math
import re

from memtui.adapters.redact.data import (
    _DEFAULT_PASSWORDS,
    _KEY_QUALIFIERS,
    _KEY_SUFFIXES,
    _NEEDS_DIGIT,
    _PASSWORD_WORDS,
    _PLACEHOLDER_B,
    _SENTENCE_WORDS,
    _SHELL_WORDS,
    _TYPE_WORDS,
)
from memtui.adapters.redact.patterns import _DIGIT, _SPECIFIC

# A key name: the rightmost key word and what follows it; only a few suffixes keep it a secret (`SECRET_KEY_BASE`,
# `password2`), so `password_hash`, `token_count`, `max_tokens`, `author`, `tokenizer` and `private_key_id` are not.
_KEY_NAME = re.compile(
    rb"(?i)^(.*)((?:" + _KEY_QUALIFIERS + rb")[_\-.]?key|password|passwd|passphrase|passcode|pass|pwd|psk|secret|token"
    rb"|authorization|auth|credentials?|key)([a-z0-9_.\-]*)$"
)
# A digest named after what it hashes: `checksum/secret`, `sha256_of_token`, detect-secrets' `hashed_secret`, `hash_of_key`
# (not `unhashed_password`, which is the plain one).
_DIGEST_OF = re.compile(
    rb"(?i)(?:checksum|digest|fingerprint|sha(?:1|256|512)|md5|(?<!un)(?<!non)(?<!non[_\-])hashed|hash(?=[_\-.]of))[_\-./]*(?:of[_\-.]?)?$"
)
_QUALIFIED = re.compile(rb"(?i)(?:" + _KEY_QUALIFIERS + rb")[_\-.]?\Z")
_MASK = re.compile(rb"[*xX.\-_#]+|(?:\xe2\x80\xa2)+|(?:\xe2\x80\xa6)+")  # ****, xxxx, ..., ••••, …
_PLACEHOLDER_PARTS = re.compile(
    rb"(?i)xxx|\*\*\*|\.\.\.|\xe2\x80\xa6|\xe2\x80\xa2|^(?:your|my|insert|enter|replace|put|paste|add|some|the)[-_ ]"
    rb"|^(?:your|my)[A-Z]|[-_ ](?:here|goes[-_ ]here)$|placeholder|redacted"
    rb"|^\[.*\]$|^(?:env|file|fd|stdin)(?::|$)|\$\{|\$\(|\.\*"
    # a reference to a secret store, not its value: 1Password `op://vault/item/field`, vals `ref+vault://...`,
    # `vault:secret/data/app#token`, an AWS Secrets Manager ARN, a GCP `projects/p/secrets/s/versions/3`
    rb"|^(?:op|ref\+[a-z0-9]+|vault|sops|awssm|gcpsm|azkv|keyvault|secretref|bws)://?|^arn:aws[\w-]*:secretsmanager:"
    rb"|^projects/[\w.\-]+/secrets/"
    # a prompt (`getpass("Password: ")`, `"Enter your API key:"`) and a reStructuredText role (`pass :data:`x``)
    rb"|^[A-Za-z ]{0,40}(?:password|passphrase|passcode|pin|token|secret|key)[ ]?[:?][ ]*$|^[a-z]+:`"
)
# Words that mark a made-up value (`example-key`, `test-token-1`), but not inside a long machine-made token: AWS's
# documented example keys (`...EXAMPLEKEY`) are redacted like real ones, since they are pasted like real ones.
# A parameter of a config language, not its value: `%DB_PASS%` (batch), `%env(APP_SECRET)%`, `%kernel.secret%`
# (Symfony). Case-sensitive: a mixed-case name with digits between percent signs (`%Xk29fjQ8%`) is a password.
_CONFIG_PARAM = re.compile(rb"%(?:env\([a-z:]*[A-Z_][A-Z0-9_]*\)|[A-Za-z_][A-Za-z_.]*|[A-Z_][A-Z0-9_]*)%")
_PLACEHOLDER_WORDS = re.compile(rb"(?i)example|^(?:test|fake|dummy|mock|sample)")
_PLACEHOLDER_STARTS = (b"$", b"<", b"{", b"%(", b"%s", b"#{", b"@", b"[REDACTED", _PLACEHOLDER_B)

_CODE_START = re.compile(
    rb"[A-Za-z_][A-Za-z0-9_.]*(?:::[A-Za-z_][A-Za-z0-9_]*)*(?:!|::)?[(\[<]|[{(\[!&*]|(?:new|await|typeof|function|lambda|async)\b"
    rb"|:[a-z_]+\.[a-z_]+\("  # an Erlang module called from Elixir: `:crypto.strong_rand_bytes(32)`
    rb"|[A-Za-z_$][A-Za-z0-9_$.]*`"  # a tagged template: pulumi.interpolate`...`, sql`...`
)
_CMDLET = re.compile(rb"[A-Z][a-z]+-[A-Z][A-Za-z]+")  # PowerShell: `$securePassword = Read-Host -AsSecureString`
_DOTTED_NAME = re.compile(rb"[A-Za-z_$][A-Za-z_$]*[0-9]{0,2}(?:(?:\.|\?\.|->|::)[A-Za-z_$][A-Za-z_$]*[0-9]{0,2})+[)!]?")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_WORDS_ONLY = re.compile(rb"[A-Za-z]+(?:[-_ .:/][A-Za-z]+)*")
_CAMEL_WORDS = re.compile(
    rb"[a-z]+(?:[A-Z][a-z]+)+[0-9]?|[A-Z][a-z]+(?:[A-Z][a-z]+)*|[A-Z]+(?:_[A-Z]+)+|[a-z]+(?:_[a-z]+)+"
)
_KEYWORD_IN = re.compile(rb"(?i)pass|pwd|secret|token|key|auth|cred")
# The weak passwords of test fixtures and tutorials: a famous word, a few digits, maybe a `!` (`password123`, `Passw0rd!`).
_FIXTURE_PASSWORD = re.compile(
    rb"(?i)(?:password|passw0rd|p@ssw0rd|p@ssword|secret|letmein|qwerty|changeme|admin|welcome)[0-9]{0,4}!?"
)
_SELF_NAMED = re.compile(rb"[a-z]+(?:-[a-z]+)+")  # lower-case words joined by hyphens, no digit
_SELF_NAMED_WORD = re.compile(rb"(?:^|-)(?:password|passwd|passphrase|token|secret|key|credentials?)(?:-|$)")
_PROSE_NEXT = re.compile(rb" +[A-Za-z]")
_PATHLIKE = re.compile(rb"(?:/|\./|\.\./|~/|[A-Za-z]:\\|https?:|file:)(?![^+=]*[+=])")

_MIN_SECRET = 8  # shortest value taken as a token, key or secret
_MIN_PASSWORD = {True: 6, False: 6}  # [quoted]
_STRONG = re.compile(rb"(?=[^A-Z]*[A-Z])(?=[^a-z]*[a-z])(?=[^0-9]*[0-9])")


def _classify(value: bytes, default: str) -> str | None:
    """Kind of a token found in a value: its own format when recognised, else `default`; None if not a secret."""
    match = _SPECIFIC.match(value)
    kind = match.lastgroup if match else None
    if match is None or kind is None or (kind in _NEEDS_DIGIT and not _DIGIT.search(match.group())):
        kind = default
    if kind in _NEEDS_DIGIT and not _DIGIT.search(value):
        return None
    return kind


def _specific_kind(value: bytes) -> str | None:
    """The vendor format `value` starts with, if any."""
    match = _SPECIFIC.match(value)
    if match is None or (match.lastgroup in _NEEDS_DIGIT and not _DIGIT.search(match.group())):
        return None
    return None if _FILLER.search(value) else match.lastgroup


def _is_placeholder(value: bytes) -> bool:
    """Values that stand for a secret rather than being one: ${VAR}, <token>, {{x}}, ****, xxx, your-key-here."""
    return (
        value.startswith(_PLACEHOLDER_STARTS)
        or _MASK.fullmatch(value) is not None
        or value.lower() in _TYPE_WORDS
        or _is_type(value)
        or _CONFIG_PARAM.fullmatch(value) is not None
        or _PLACEHOLDER_PARTS.search(value) is not None
        or (_PLACEHOLDER_WORDS.search(value) is not None and not (len(value) >= 20 and _STRONG.match(value)))
    )


# A type with the marks of a schema or type language: GraphQL `String!`, `[ID!]!`, TypeScript `string[]`, Kotlin
# and Swift `String?`: a declared field (`password: String!`), never a value.
_TYPE_MARKS = re.compile(rb"\[?([A-Za-z]+)(?:!|\?|\[\])*\]?[!?]?")


def _is_type(value: bytes) -> bool:
    match = _TYPE_MARKS.fullmatch(value)
    return match is not None and match.group(0) != match.group(1) and match.group(1).lower() in _TYPE_WORDS


def _entropy(value: bytes) -> float:
    counts: dict[int, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def _case_changes(value: bytes) -> int:
    return sum(1 for a, b in itertools.pairwise(value) if (65 <= a <= 90) != (65 <= b <= 90))


# Pieces of a name: a capitalised or lower-case word, an upper-case run (an acronym) or a number.
_NAME_PIECE = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_DOTTED_NUMBER = re.compile(rb"v?[0-9]+(?:\.[0-9]+){2,}")  # an OID, a version, an address: 1.3.6.1.5.5.7.3.1
_DIGIT_THEN_WORD = re.compile(rb"[0-9][a-z]{3}")
_OBJECT_PATH = re.compile(rb"[\w.\-]+(?:/[\w.\-]+)+\.[A-Za-z][A-Za-z0-9]{1,4}")  # uploads/ab12/cat.png


def _is_name(value: bytes) -> bool:
    """Words and numbers joined as a name (`Ed25519PrivateKey`, `x-amz-content-sha256`, `types-auth0-python`,
    `grant-type:jwt-bearer`): its pieces average three characters or more; a machine-made token's (hex, base64,
    random alphanumerics) average under two and a half."""
    value = value.rstrip(b"`")
    if not value or not all(c in b"-_.:/%=|," or 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 for c in value):
        return False
    if _DIGIT_THEN_WORD.search(value):
        return False  # `castle-8vewtl`, `m5mwtgyvqe`: a number run into letters is how random text reads, not names
    pieces = _NAME_PIECE.findall(value)
    if any(len(p) > 14 for p in pieces):
        return False
    letters = sum(len(p) for p in pieces if not p.isdigit())
    return len(pieces) >= 3 and letters >= len(value) / 2 and sum(map(len, pieces)) / len(pieces) >= 3


def _looks_random(value: bytes) -> bool:
    """A machine-made token (keys, tokens, secrets) rather than a word, a name, a path or a number."""
    if len(value) < _MIN_SECRET or any(c in b" \t" for c in value) or value.isdigit():
        return False
    if b"@" in value and b"." in value.rpartition(b"@")[2]:  # an e-mail address
        return False
    if _PATHLIKE.match(value) or _DOTTED_NUMBER.fullmatch(value) or _OBJECT_PATH.fullmatch(value):
        return False
    if _is_name(value):
        return False
    if _DIGIT.search(value) is None:  # letters only: a random token of 20+ letters, never words (proxy-handled)
        return (
            (len(value) >= 20 or (len(value) >= 16 and _case_changes(value) >= 6))
            and _WORDS_ONLY.fullmatch(value) is not None
            and not any(c in b"-_. " for c in value)
            and _CAMEL_WORDS.fullmatch(value) is None
            and _entropy(value) >= 3.6
        ) or (_WORDS_ONLY.fullmatch(value) is None and len(value) >= 16 and _entropy(value) >= 3.5)
    return True


def _looks_like_code(data: bytes, key: bytes, secret: bytes, value_start: int, env_assign: bool) -> bool:
    """Unquoted values that are code or a type (self.token, api_key, get_token(), Record<string, string>, str).

    `env_assign`: `NAME=value` with an upper-case name (.env, shell, compose): a bare word there is a literal, and a
    word after it is the command it prefixes (`PGPASSWORD=postgres psql ...`)."""
    if _CODE_START.match(secret) or _DOTTED_NAME.fullmatch(secret) or _CMDLET.fullmatch(secret):
        return True
    norm_key = key.lower().lstrip(b"-$").translate(None, b"-_.")
    norm = secret.lower().translate(None, b"-_.")
    if norm == norm_key or (norm_key.endswith(norm) and len(norm) >= 3):
        return True
    if _IDENT.fullmatch(secret) and _DIGIT.search(secret) is None:
        plain_word = secret.isalpha() and (secret.islower() or secret.isupper())
        if not (env_assign and plain_word) and (_KEYWORD_IN.search(secret) or _CAMEL_WORDS.fullmatch(secret)):
            return True  # a variable named after a secret (apiKeyValue, access_token) or a type (SecretStr)
    end = value_start + len(secret)
    if end < len(data) and data[end] in b"(<[":  # `token: Record<string, string>`, `x = f(...)`
        return True
    if env_assign:
        return False
    prose = _WORDS_ONLY.fullmatch(secret) is not None and _PROSE_NEXT.match(data, end) is not None
    return prose and not _looks_random(secret)  # a 16-letter random token is no word, even before more words


# Prose that describes a key's shape instead of holding one: a character class, a repeat count or a length in words
# right in the value (`sk-ant-[alphanumeric]{95,}`, `sk-[A-Za-z0-9]{48}`, `sk-ant-<95 alphanumeric characters>`).
_KEY_FORMAT = re.compile(rb"\[[^\]\s]{1,40}\][{*+?]|\{[0-9]{1,4},?[0-9]{0,4}\}|<[0-9]{1,4}[ \t]|\\[dws][{*+]")
# An operand of an expression: a name, a dotted or indexed path, then a fallback or another operator.
_OPERAND = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|\?\.)[A-Za-z_$][A-Za-z0-9_$]*|\[[^\]\s]{1,40}\])*")
_FALLBACK_OP = re.compile(rb"[ \t]*(\?\?|\|\||&&|\bor\b|\band\b)[ \t]*")


def _describes_format(data: bytes, start: int, secret: bytes) -> bool:
    """The value (with what follows it on the line) spells out a key format rather than being a key."""
    return _KEY_FORMAT.search(data, start, min(len(data), start + len(secret) + 48)) is not None


def _is_expression(data: bytes, secret: bytes, end: int) -> bool:
    """`apiKey = apiKeyV2 || apiKeyV1Fallback`, `token = cfg2.token ?? cfg1.token`: the value is a name in a
    fallback chain, not a literal. `??` exists only in code; after `||`, `or`, `&&` the other operand must be a name
    too and not a shell word (`TOKEN=abc123 || exit 1` is a shell literal)."""
    if _OPERAND.fullmatch(secret) is None:
        return False
    op = _FALLBACK_OP.match(data, end)
    if op is None:
        return False
    if op.group(1) == b"??" or data[op.end() : op.end() + 1] in (b'"', b"'"):
        return True  # a quoted fallback: `_code_literal` judges the literal
    other = _OPERAND.match(data, op.end())
    return other is not None and other.group(0).lower() not in _SHELL_WORDS


def _is_sentence(value: bytes) -> bool:
    words = value.lower().split()
    return len(words) >= 2 and any(w.strip(b".,!?:;") in _SENTENCE_WORDS for w in words)


def _judge(value: bytes, family: str, quoted: bool, env_style: bool) -> bool:
    """Is `value` (the text after a key named `family`) a real secret?"""
    if not value or _is_placeholder(value):
        return False
    if _IDENT.fullmatch(value) and _DIGIT.search(value) is None and _KEYWORD_IN.search(value):
        return False  # the name of a variable or a secret (`:'new_password'`, `"db_password"`), not its value
    if _SELF_NAMED.fullmatch(value) and _SELF_NAMED_WORD.search(value):
        return False  # words that say what the value is (`"wrong-password"`, `"not-a-real-token"`): a test's label
    if family == "weak_key":
        return len(value) >= 32 and _STRONG.match(value) is not None and _looks_random(value)
    if family == "password":
        if len(value) < _MIN_PASSWORD[quoted] or _PATHLIKE.match(value) or value.lower() in _DEFAULT_PASSWORDS:
            return False
        if _FIXTURE_PASSWORD.fullmatch(value):
            return False  # `create(:user, password: "password123")`: the weak password every test suite uses
        if quoted:
            return not _is_sentence(value) and not (b"|" in value and _is_name(value))  # `required|min:12`
        if value.isalpha() and not env_style:
            return False  # `password: hunter` in prose or YAML with a lowercase key: too ambiguous
        return not value.isdigit() or len(value) >= 6
    return _looks_random(value)


def _family(kind: str) -> str:
    return {"password_assignment": "password", "weak_key": "weak_key"}.get(kind, "secret")


# ghp_xxxxxxxx..., AKIA0000000000000000, xoxb-your-token: documentation, not tokens
_FILLER = re.compile(rb"(?i)x{4}|\*{3}|\.{3}|0{12}|your|[-_]here\b|placeholder|redacted|change[-_]?me")


def _key_family(key: bytes) -> tuple[str, bytes] | None:
    """(kind, key word) for a key name, or None when the key only mentions a key word (max_tokens, author)."""
    match = _KEY_NAME.match(key.lstrip(b"-$"))
    if match is None:
        return None
    prefix, word, suffix = match.group(1), match.group(2), match.group(3)
    if _DIGEST_OF.search(prefix):
        return None  # `checksum/secret: <sha256>`, `sha256_of_token`: a digest of the secret, not the secret
    rest = suffix.translate(None, b"-_.").lower().rstrip(b"0123456789")
    if rest and rest not in _KEY_SUFFIXES:
        return None
    lower = word.lower()
    if lower == b"pass" and prefix:
        before = prefix[-1:]
        # `bypass`, `compass`, `first_pass`: only `db_pass`, `smtpPass`, `DBPASS`-like keys hold a password.
        if before.isalpha() and not (word[:1] == b"P" and (before.islower() or word.isupper())):
            return None
        if prefix.lower().rstrip(b"_-.").endswith((b"first", b"second", b"third", b"last", b"next", b"multi")):
            return None
    if lower == b"pwd" and prefix.lower().rstrip(b"_-.") == b"old":
        return None  # $OLDPWD is a directory (and $PWD's value is a path, which no rule takes for a password)
    norm = key.lower().translate(None, b"-_.")
    if b"secretaccesskey" in norm or (b"aws" in norm and b"secret" in norm):
        return "aws_secret_access_key", lower
    if lower in _PASSWORD_WORDS:
        return "password_assignment", lower
    if lower == b"key" and _QUALIFIED.search(prefix):
        lower = b"qualified key"  # api_key, secretKey, AccountKey: the greedy match stopped at `key`
    elif lower == b"key":
        # A bare `key` (`"key": ...`, `primaryKey`) names cache keys, ids and dictionary keys far more often than a
        # secret: only a long base64-like value (upper, lower and digits) counts, e.g. an Azure storage key.
        if prefix.lower().rstrip(b"_-.") not in (b"", b"primary", b"secondary", b"master", b"shared"):
            return None
        return "weak_key", lower
    return "secret_assignment", lower
