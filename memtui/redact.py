"""Secret redaction, run before a rollout leaves the machine and before any model output is stored.

Why this shape: 22 patterns applied one after another with `re` ran at 1.7 MB/s (perf-baselines §8). Here every rule
is one alternative of a single RE2 program with no capture group, run once over the UTF-8 bytes: RE2 answers it with
its DFA alone (no submatch pass), whatever the number of rules. The rare candidates it reports are identified and
validated in Python on a small window (which rule, key name, value shape, placeholders, code), and the text is
rebuilt once. `redact_bytes` keeps the whole path in bytes for callers that hold bytes (serialized rollouts);
`redact` wraps it for str.

Replacements keep the readable prefix of Codex's rules (`Bearer `, `password=`, `"password": "`, `https://user:`), and a
span never contains a quote or a lone backslash, so redacting inside a JSON-encoded string keeps it valid JSON.

The rules were tuned on `tests/fixtures/secrets.py` only. `tests/fixtures/redaction_eval_r*.py` are held-out
rounds, each written after the rules were frozen at a recorded commit and measured once; the README's figures come
from the current round.
"""

from __future__ import annotations

import base64
import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import re2

PLACEHOLDER = "[REDACTED_SECRET]"
_PLACEHOLDER_B = PLACEHOLDER.encode()


def _ci(pattern: bytes) -> bytes:
    """ASCII-only case-insensitivity: RE2's (?i) also folds U+017F (ſ) and U+212A (K) into s and k."""
    return b"".join(b"[%c%c]" % (c, c ^ 0x20) if chr(c).isascii() and chr(c).isalpha() else bytes([c]) for c in pattern)


# Words a key name can end on (before an allowed suffix such as `_base` or `2`); `key` only with a qualifier.
_KEY_QUALIFIERS = (
    rb"api|access|private|secret|account|signing|encryption|master|client|app|license|service|storage|subscription"
    rb"|webhook|session|consumer|admin|deploy|auth|hmac|jwt|sign|crypt|shared|sas|ingest|license|write|read|sdk"
    rb"|integration|routing"
)
_KEY_WORDS = (
    rb"pass(?:word|wd|phrase|code)?|pwd|psk|secret|token|auth(?:orization)?|credentials?|(?:"
    + _KEY_QUALIFIERS
    + rb")[_\-]?key|key"
)
_KEY_SUFFIX_WORDS = (
    b"base value val str string plain plaintext raw b64 base64 hex confirm confirmation repeat again data"
)
# What may follow the key word in the DFA: only the suffixes that keep a key a secret, so `token_count: int`,
# `password_hash: str` and `max_tokens=...` never become candidates.
_KEY_TAIL = rb"(?:[_\-.]?(?:" + _ci(_KEY_SUFFIX_WORDS.replace(b" ", b"|")) + rb"))?[0-9]*"
_SEPARATOR = rb"(?:\\*[\"'])?\]?[ \t]*(?::=|=>|[:=])"
_VALUE4 = rb"[^\s\"'\\&;]{4}"
_EQ_VALUE = rb"(?:\\*[\"'])?\]?[ \t]*(?::=|=>|=)[ \t]*(?:\\*[\"'])?" + _VALUE4
# After a colon, a bare word followed by more words is prose (`Token: Expired soon`), never a candidate: most
# `key: value` hits in ordinary text are such sentences, and each candidate costs a Python validation.
_COLON_VALUE = (
    rb"(?:\\*[\"'])?\]?[ \t]*:[ \t]*(?:\\*[\"']" + _VALUE4 + rb"|[^\s\"'\\&;A-Za-z][^\s\"'\\&;]{3}"
    rb"|[A-Za-z]+[^A-Za-z\s\"'\\&;]|[A-Za-z]{4,}(?:[\r\n\"'\\&;]|[ \t]+[^A-Za-z\s]|[ \t]*$)|[A-Za-z]{16}"
    rb"|(?:" + _ci(b"basic|bearer|token|digest|bot|apikey") + rb")[ \t]+[A-Za-z0-9])"
)
# `("API_KEY", "value")`: setenv, setProperty, PHP define, header tuples.
_CALL_VALUE = rb"\([ \t]*\\*[\"']" + _VALUE4
# HAR and Postman exports: `{"name": "X-Api-Key", "value": "..."}`, `{"key": "apiKey", "value": "..."}`.
_PAIR_VALUE = rb"\\*[\"'][ \t]*,[ \t]*\\*[\"']" + _ci(b"value") + rb"\\*[\"'][ \t]*:[ \t]*\\*[\"']" + _VALUE4
_COMMA_VALUE = rb"\\*[\"'][ \t]*,[ \t]*\\*[\"']" + _VALUE4
# `the password is Xk29fjQ8`, `token was abc123...`: a secret stated in a sentence.
_PROSE_USE = (
    rb"\b(?:"
    + _ci(b"use|using|with|try")
    + rb")[ \t]+(?:"
    + _ci(b"the")
    + rb"[ \t]+)?(?:"
    + _ci(b"password|passwd|passphrase|token|api key|apikey|key|secret")
    + rb")[ \t]+[`'\"]?[A-Za-z]*(?:[0-9#$%&*+/=@^_~\-]|\.[A-Za-z0-9])"
)
_PROSE_WORDS = (
    rb"(?:[ \t]+(?:"
    + _ci(b"for|of|on|in|the|my|our|your|this|that|new|staging|prod|production|dev|admin|root|db|database|server")
    + _ci(b"|box|account|user|api|vpn|wifi|use")
    + rb"))"
)
_PROSE_VALUE = (
    rb"\b(?:"
    + _ci(b"password|passwd|passphrase|pass|pwd|token|secret|api key|apikey|access key|secret key|key")
    + rb")"
    # A few words may stand between the key word and the verb (`the password for the new box is ...`): a small
    # vocabulary, since a run of any words after every key word costs RE2's DFA a fifth of its speed.
    rb"(?:" + _PROSE_WORDS + rb"{0,4}[ \t]+(?:" + _ci(b"is|was|=|to|set to|should be|will be|is now") + rb")"
    rb"|" + _PROSE_WORDS + rb"{1,4}[ \t]*:)"  # `password for the vpn: ...`; a bare `key: ...` is an assignment's
    rb"[ \t]+[`'\"]?[A-Za-z]*(?:[0-9#$%&*+/=@^_~\-]|\.[A-Za-z0-9])"
)
_B64 = rb"[A-Za-z0-9+/]"

# Commands whose short flags carry a password (`mysql -pPASS`, `sshpass -p PASS`, `docker login -p PASS`, ...).
_COMMANDS = (
    rb"mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlsh|mariadb|mariadb-dump|mariadb-admin"
    rb"|sshpass|docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|redis-cli|curl|zip|unzip|7z|7za|7zz|sqlcmd|bcp"
    rb"|mongosh|mongo|mongodump|mongorestore|mongoexport|mongoimport|ldapsearch|ldapadd|ldapmodify|ldapdelete"
    rb"|ldapwhoami|smbclient|htpasswd|keytool|openssl|lftp|rabbitmqctl|ssh-keygen|influx|psql|jarsigner|rclone"
    # Short names that are also words: only with the subcommand or flag that can carry a secret.
    rb"|az[ \t]+(?:login|storage|devops|ad)|gh[ \t]+(?:secret|auth)|net[ \t]+user?|https?[ \t]+-{1,2}a(?:uth)?"
)

# Ordered RE2 alternatives: (kind, pattern). Order matters only between alternatives starting at the same byte.
# Every pattern is valid for both RE2 and `re`: RE2 finds where a candidate starts, `re` tells which rule it is.
RULES: tuple[tuple[str, bytes], ...] = (
    ("private_key", rb"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    ("private_key", rb"PuTTY-User-Key-File-[0-9]: "),
    ("age_secret_key", rb"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("aws_access_key_id", rb"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("github_token", rb"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    (
        "gitlab_token",
        rb"\b(?:gl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat|ffct|agent)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,})",
    ),
    ("anthropic_key", rb"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", rb"\bsk-[A-Za-z0-9_\-]{20,}"),
    ("stripe_key", rb"\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})"),
    ("slack_token", rb"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})"),
    ("slack_webhook", rb"hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Za-z0-9_]+/[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
    ("discord_webhook", rb"discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{20,}"),
    ("google_api_key", rb"\bAIza[A-Za-z0-9_\-]{35}"),
    ("google_oauth", rb"\b(?:GOCSPX-[A-Za-z0-9_\-]{24,}|ya29\.[A-Za-z0-9_\-]{20,}|1//0[A-Za-z0-9_\-]{40,})"),
    ("huggingface_token", rb"\b(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})"),
    ("npm_token", rb"\bnpm_[A-Za-z0-9]{36}"),
    ("pypi_token", rb"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("sendgrid_key", rb"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("twilio_key", rb"\bSK[0-9a-f]{32}\b"),
    ("mailgun_key", rb"\bkey-[0-9a-f]{32}\b"),
    # The next four start at their literal, not at a character class: a class at the start of a rule makes RE2's
    # DFA track every word of ordinary text through it (-25 % throughput). The handler reads the head backwards.
    ("mailchimp_key", rb"-us[0-9]{1,2}\b"),
    ("shopify_token", rb"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("digitalocean_token", rb"\bdo[por]_v1_[a-f0-9]{64}"),
    ("databricks_token", rb"\bdapi[a-f0-9]{32}"),
    ("atlassian_token", rb"\bATATT3[A-Za-z0-9_\-=]{100,}"),
    ("linear_key", rb"\blin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", rb"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})"),
    ("postman_key", rb"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("doppler_token", rb"\bdp\.(?:st|pt|ct|sa|scim|audit)\.[A-Za-z0-9_\-.]{40,}"),
    ("vault_token", rb"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("terraform_token", rb"\.atlasv1\.[A-Za-z0-9_\-=]{60,}"),
    ("telegram_bot_token", rb":AA[A-Za-z0-9_\-]{33}"),
    ("llm_api_key", rb"\b(?:gsk_[A-Za-z0-9]{48,}|xai-[A-Za-z0-9]{60,}|r8_[A-Za-z0-9]{37}|pplx-[A-Za-z0-9]{40,})"),
    ("sentry_token", rb"\bsntry[su]_[A-Za-z0-9+/=_\-]{40,}"),
    ("grafana_token", rb"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/=]{32,})"),
    ("newrelic_key", rb"\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,}"),
    ("square_token", rb"\b(?:sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}|EAAA[A-Za-z0-9_\-+=]{60,})"),
    ("planetscale_token", rb"\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.]{32,}"),
    ("supabase_key", rb"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,})"),
    ("flyio_token", rb"\b(?:fo1_[A-Za-z0-9_\-]{40,}|fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,})"),
    ("netlify_token", rb"\bnfp_[A-Za-z0-9]{36,}"),
    ("heroku_key", rb"\bHRKU-[A-Za-z0-9_\-]{30,}"),
    ("mapbox_token", rb"\bsk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    ("firebase_fcm_key", rb"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}"),
    ("dropbox_token", rb"\bsl\.[A-Za-z0-9_\-=]{100,}"),
    (
        "saas_token",
        rb"\b(?:CFPAT-[A-Za-z0-9_\-]{40,}|pul-[a-f0-9]{40}|bkua_[a-f0-9]{40}|CCIPAT_[A-Za-z0-9_]{30,}"
        rb"|ATBB[A-Za-z0-9_=.\-]{28,}|dckr_pat_[A-Za-z0-9_\-]{27,}|figd_[A-Za-z0-9_\-]{40,}|ops_eyJ[A-Za-z0-9_\-.]{50,}"
        rb"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|tskey-[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}"
        rb"|access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32})",
    ),
    ("discord_bot_token", rb"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}\b"),
    ("azure_ad_secret", rb"[0-9]Q~[A-Za-z0-9_~.\-]{31,34}"),
    ("azure_sas", rb"[?&]sig=[A-Za-z0-9%+/=]{30,}"),
    ("jwt", rb"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    ("bearer_token", rb"\b" + _ci(b"bearer") + rb"[ \t]+[A-Za-z0-9._~+/\-]{16,}=*"),
    ("url_password", rb"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@\"'\\]*:[^\s@\"'\\]+@"),
    ("url_token", rb"\b[A-Za-z][A-Za-z0-9+.\-]*://[A-Za-z0-9_\-]{20,}@"),
    ("twilio_pair", rb"\bAC[0-9a-f]{32}[\"'\\]*[ \t]*[,:][ \t]*[\"'\\]*[0-9a-f]{32}\b"),
    ("mysql_dsn", rb"@(?:tcp|unix)\("),  # starts at its literal; the handler reads `user:password` backwards
    ("pgpass", rb":(?:5432|6432|\*):[A-Za-z0-9_\-*]+:[A-Za-z0-9_\-*]+:[^\s\\]"),
    ("prose_secret", _PROSE_VALUE),
    ("prose_secret", _PROSE_USE),
    (
        "cookie",
        rb"\b"
        + _ci(b"cookie")
        + rb"(?::|\\*[\"'][ \t]*,[ \t]*\\*[\"']"
        + _ci(b"value")
        + rb"\\*[\"'][ \t]*:)[ \t]*\\*[\"']?[^\s]",
    ),
    (
        "space_separated",
        rb"\b(?:requirepass|masterauth|config(?:ure)?[ \t]+set[ \t]+(?:-{1,2}[A-Za-z\-]+[ \t]+)*"
        rb"[^\s=\\]*(?:" + _ci(_KEY_WORDS) + rb")[^\s=\\]*)[ \t]+[^\s\\]",
    ),
    ("netrc", rb"\blogin[ \t]+[^\s\\]+(?:[ \t\r\n]|\\+[nrt])+[ \t]*" + _ci(b"password") + rb"[ \t]+[^\s\\]"),
    ("fish_set", rb"\bset[ \t]+(?:-{1,2}[A-Za-z]+[ \t]+)+[A-Za-z_][A-Za-z0-9_]*[ \t]+[^\s]"),
    ("command", rb"\b(?:" + _COMMANDS + rb")(?:\.exe)?[ \t]"),
    ("xml_element", rb"<[A-Za-z0-9_:.\-]*(?:" + _ci(_KEY_WORDS) + rb")[A-Za-z0-9_.\-]*>[^<\s\"'\\]{4}"),
    (
        "aws_secret_named",
        _ci(b"secret")
        + rb"[_\- ]?(?:"
        + _ci(b"access")
        + rb"[_\- ]?)?"
        + _ci(b"key")
        + rb"(?:[ \t]*\[[^\]\n]{0,24}\])?"  # `aws configure` prompts: `AWS Secret Access Key [None]: `
        + rb"[ \t\"':=|,]{1,8}"
        + _B64
        + b"{40}",
    ),
    ("basic_credentials", rb"\b[Bb]asic[ \t]+[A-Za-z0-9+/]{8,}={0,2}"),
    ("powershell_secure", _ci(b"convertto-securestring") + rb"[ \t]+(?:-[A-Za-z]+[ \t]+)?\\*[\"']"),
    (
        "positional_call",
        rb"\b(?:PlainAuth|mysqli|mysqli_connect|mysql_connect|pymysql\.connect|MySQLdb\.connect)[ \t]*\(",
    ),
    (
        "login_call",
        rb"\b(?:login|authenticate|getConnection|HTTPBasicAuth|HttpBasicAuth|BasicAuth|basic_auth|setBasicAuth"
        rb"|with_basic_auth|auth|NetworkCredential|PasswordAuthentication|UsernamePasswordCredentials|algoliasearch|OAuth2Client)[ \t]*=?[ \t]*\(",
    ),
    (
        "xml_key_value",
        rb"\b[kK]ey=\\*\"[A-Za-z0-9_.:\-]*(?:" + _ci(_KEY_WORDS) + rb")[A-Za-z0-9_.:\-]*\\*\"[ \t]+[vV]alue=\\*\"",
    ),
    (
        "sql_password",
        rb"\b(?:"
        + _ci(b"identified")
        + rb"[ \t]+"
        + _ci(b"by")
        + rb"|"
        + _ci(b"password")
        + rb")(?:[ \t]+|[ \t]*=[ \t]*)'[^'\s]",
    ),
    ("redis_auth", rb">[ \t]*AUTH[ \t]+[^\s]"),
    ("stdin_password", rb"\|[ \t]*(?:sudo[ \t]+)?(?:chpasswd|sudo[ \t]+-S|sudo[ \t]+--stdin|passwd[ \t]+--stdin)"),
    ("here_string", rb"\blogin\b[^\n\\\"<]*<<<[ \t]*['\"]?[A-Za-z0-9_\-]"),  # stays on its line, even in JSON
    ("cli_flag", rb"-{1,2}[A-Za-z0-9_\-]*(?:" + _ci(_KEY_WORDS) + rb")[A-Za-z0-9_\-]*[ \t]+[^\s\\\-]"),
    # Starts at a key word (`DB_PASSWORD` matches at PASSWORD); the rest of the key is read backwards in Python.
    # The 4 value bytes keep `token: str`, `password=""` and `'Authorization': f'...'` out of the Python validation.
    (
        "assignment",
        rb"(?:"
        + _ci(_KEY_WORDS)
        + rb")"
        + _KEY_TAIL
        + rb"(?:"
        + _EQ_VALUE
        + rb"|"
        + _COLON_VALUE
        + rb"|"
        + _COMMA_VALUE
        + rb"|"
        + _PAIR_VALUE
        + rb"|"
        + _CALL_VALUE
        + rb")",
    ),
)

# Rules the DFA starts at their literal: the whole token, head included, for the handler and for values.
_FULL = {
    "discord_bot_token": rb"\b[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}\b",
    "mailchimp_key": rb"\b[0-9a-f]{32}-us[0-9]{1,2}\b",
    "terraform_token": rb"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}",
    "telegram_bot_token": rb"(?:\b|(?<=/bot))[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}",
    "azure_ad_secret": rb"\b[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
}
_HEAD_DISCORD = (24, 25, 26)
_HEAD = {
    "discord_bot_token": _HEAD_DISCORD,
    "mailchimp_key": (32,),
    "terraform_token": (14,),
    "telegram_bot_token": (8, 9, 10),
    "azure_ad_secret": (3,),
}
_FULL_RE = {kind: re.compile(pattern) for kind, pattern in _FULL.items()}


_CONTEXT_RULES = frozenset(
    (
        "private_key", "slack_webhook", "discord_webhook", "azure_sas", "bearer_token", "url_password", "url_token",
        "netrc", "twilio_pair", "mysql_dsn", "pgpass", "prose_secret", "cookie", "space_separated", "fish_set", "command", "xml_element", "basic_credentials", "powershell_secure", "login_call", "positional_call", "xml_key_value", "sql_password", "redis_auth", "stdin_password", "here_string", "aws_secret_named", "cli_flag", "assignment",
    )
)  # fmt: skip

# Kinds a redaction can be counted under (assignments are refined by key name, tokens in values by their format).
KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *(kind for kind, _ in RULES if kind not in _CONTEXT_RULES),
            *("private_key", "slack_webhook", "discord_webhook", "azure_sas", "bearer_token", "url_password"),
            *("aws_secret_access_key", "password_assignment", "secret_assignment", "auth_header", "cookie"),
        )
    )
)

# Literal substrings (lowercase) at least one of which every match contains: text without any is returned unchanged.
ANCHORS: tuple[str, ...] = (
    "-----begin", "putty-user-key", "age-secret-key", "akia", "asia", "abia", "acca", "gh", "gl", "gr1348941", "sk-",
    "k_live_", "k_test_", "whsec_", "xox", "xapp-", "hooks.slack.com", "discord", "aiza", "gocspx-", "ya29.", "1//0",
    "hf_", "api_org_", "npm_", "pypi-", "sg.", "sk", "key-", "-us", "shp", "_v1_", "dapi", "atatt3", "lin_", "secret_",
    "ntn_", "pmak-", "dp.", "hv", ".atlasv1.", ":aa", "gsk_", "xai-", "r8_", "pplx-", "sntry", "glsa_", "glc_", "nr",
    "sq0", "eaaa", "sk.eyj", "aaaa", "sl.", "cfpat-", "pul-", "bkua_", "ccipat_", "atbb", "dckr_pat_", "figd_",
    "ops_eyj", "lsv2_", "tskey-", "access_token$", "pscale_", "sbp_", "sb_secret_", "fo1_", "fm1", "fm2", "nfp_", "hrku-", "q~", "sig=", "eyj",
    "bearer", "basic", "convertto-securestring", "authenticate", "getconnection", "networkcredential", "passwordauthentication", "usernamepasswordcredentials", "plainauth", "mysqli", "mysql_connect", "connect(", "identified", "auth ",
    "chpasswd", "sudo", "passwd", "<<<", "algoliasearch", "oauth2client", "key=", "http", "net", "://", "login", "use", "with", "try", "tcp(", "unix(", ":5432:", ":6432:", ":*:", "set", "pass", "pwd", "secret", "token", "auth", "credential", "key",
    *(c.decode() for c in _COMMANDS.split(b"|")),
)  # fmt: skip


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


def _matched(match: re.Match[bytes] | None) -> re.Match[bytes]:
    """The match of a pattern known to match at that place (it matches the empty string, or the scanner's own match
    already covered it): no match there is a bug in the rules, said as such."""
    if match is None:
        raise AssertionError("a redaction rule's pattern did not match where its scanner matched")
    return match


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
_NEEDS_DIGIT = frozenset({"openai_key", "anthropic_key", "bearer_token", "azure_ad_secret", "slack_token"})
_DIGIT = re.compile(rb"[0-9]")

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
_SCHEME_WORDS = frozenset((b"bearer", b"basic", b"token", b"digest", b"bot", b"apikey"))
_AUTH_SCHEME = re.compile(rb"(?i)(bearer|basic|token|digest|bot|apikey)[ \t]+")
_KEY_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_B64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_TRAILING = b".,;:)]}>"

# A key name: the rightmost key word and what follows it; only a few suffixes keep it a secret (`SECRET_KEY_BASE`,
# `password2`), so `password_hash`, `token_count`, `max_tokens`, `author`, `tokenizer` and `private_key_id` are not.
_KEY_NAME = re.compile(
    rb"(?i)^(.*)((?:" + _KEY_QUALIFIERS + rb")[_\-.]?key|password|passwd|passphrase|passcode|pass|pwd|psk|secret|token"
    rb"|authorization|auth|credentials?|key)([a-z0-9_.\-]*)$"
)
# A call whose argument names a secret rather than holding it: `get_password("service")`, `check_token("x")`.
_GETTER = re.compile(rb"(?i)(?:get|read|load|fetch|find|has|is|check|verify|validate|hash|compare|delete|remove|reset)")
_SECRET_PARENT = re.compile(
    rb"(?i)(?:jwt|secret|signing|encrypt|hmac|api|token|auth|credential)[A-Za-z_]*\\*[\"']?[ \t]*[:=][ \t]*[{\[]"
)
_QUALIFIED = re.compile(rb"(?i)(?:" + _KEY_QUALIFIERS + rb")[_\-.]?\Z")
_KEY_SUFFIXES = frozenset(_KEY_SUFFIX_WORDS.split())
_PASSWORD_WORDS = frozenset((b"password", b"passwd", b"passphrase", b"passcode", b"pass", b"pwd", b"psk"))

# Values that stand for a secret rather than being one.
_TYPE_WORDS = frozenset(
    b"str string bytes int integer number bool boolean none null nil true false undefined optional any object unknown "
    b"void never required secret password passwd token redacted hidden empty example placeholder changeme change_me "
    b"change-me replaceme replace_me replace-me todo tbd fixme dummy fake test testing sample default notset not_set "
    b"unset missing invalid expired revoked include omit same-origin off on yes no disabled enabled ask prompt "
    b"apikey api_key api-key secretkey secret_key masked xxx wrong incorrect invalid bad badpass wrongpass "
    b"wrongpassword badpassword invalidpassword".split()
)
_MASK = re.compile(rb"[*xX.\-_#]+|(?:\xe2\x80\xa2)+|(?:\xe2\x80\xa6)+")  # ****, xxxx, ..., ••••, …
_PLACEHOLDER_PARTS = re.compile(
    rb"(?i)xxx|\*\*\*|\.\.\.|\xe2\x80\xa6|\xe2\x80\xa2|^(?:your|my|insert|enter|replace|put|paste|add|some|the)[-_ ]"
    rb"|^(?:your|my)[A-Z]|[-_ ](?:here|goes[-_ ]here)$|placeholder|redacted"
    rb"|^\[.*\]$|^(?:env|file|fd|stdin)(?::|$)|\$\{|\$\(|\.\*|^%[A-Za-z_]+%$"
)
# Words that mark a made-up value (`example-key`, `test-token-1`), but not inside a long machine-made token: AWS's
# documented example keys (`...EXAMPLEKEY`) are redacted like real ones, since they are pasted like real ones.
_PLACEHOLDER_WORDS = re.compile(rb"(?i)example|^(?:test|fake|dummy|mock|sample)")
_PLACEHOLDER_STARTS = (b"$", b"<", b"{", b"%(", b"%s", b"#{", b"@", b"[REDACTED", _PLACEHOLDER_B)

_CODE_START = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]*[(\[<]|[{(\[!&*]|(?:new|await|typeof|function|lambda|async)\b")
_DOTTED_NAME = re.compile(rb"[A-Za-z_$][A-Za-z_$]*[0-9]{0,2}(?:(?:\.|\?\.|->|::)[A-Za-z_$][A-Za-z_$]*[0-9]{0,2})+[)!]?")
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_WORDS_ONLY = re.compile(rb"[A-Za-z]+(?:[-_ .][A-Za-z]+)*")
_CAMEL_WORDS = re.compile(
    rb"[a-z]+(?:[A-Z][a-z]+)+[0-9]?|[A-Z][a-z]+(?:[A-Z][a-z]+)*|[A-Z]+(?:_[A-Z]+)+|[a-z]+(?:_[a-z]+)+"
)
_KEYWORD_IN = re.compile(rb"(?i)pass|pwd|secret|token|key|auth|cred")
_PROSE_NEXT = re.compile(rb" +[A-Za-z]")
_PATHLIKE = re.compile(rb"(?:/|\./|\.\./|~/|[A-Za-z]:\\|https?:|file:)(?![^+=]*[+=])")
_SENTENCE_WORDS = frozenset(
    b"is are be the a an your must required invalid enter please not to of for at least characters too short match "
    b"do does field password token key secret should cannot can't incorrect wrong here".split()
)

_MIN_SECRET = 8  # shortest value taken as a token, key or secret
_MIN_PASSWORD = {True: 6, False: 6}  # [quoted]
_STRONG = re.compile(rb"(?=[^A-Z]*[A-Z])(?=[^a-z]*[a-z])(?=[^0-9]*[0-9])")


@dataclass
class Redaction:
    """Redacted text plus how many secrets of each kind were replaced (never the secrets themselves)."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class BytesRedaction:
    """`Redaction` for UTF-8 bytes: the redacted bytes and the per-kind counts."""

    data: bytes
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact_bytes(data: bytes) -> BytesRedaction:
    """Replace every secret in UTF-8 `data` with PLACEHOLDER: one RE2 pass, one rebuild, no decoding."""
    spans = _scan(data) if data else []
    if not spans:
        return BytesRedaction(data, {})
    return BytesRedaction(*_rebuild(data, spans))


def redact(text: str) -> Redaction:
    """Replace every secret in `text` with PLACEHOLDER (encode once, redact the bytes, decode once)."""
    if not text:
        return Redaction(text, {})
    data = text.encode("utf-8", "surrogatepass")
    spans = _scan(data)
    if not spans:
        return Redaction(text, {})
    # Rebuilding bytes and decoding once beats mapping offsets back to the str and slicing it (UCS-4 copies).
    rebuilt, counts = _rebuild(data, spans)
    return Redaction(rebuilt.decode("utf-8", "surrogatepass"), counts)


def _rebuild(data: bytes, spans: list[Span]) -> tuple[bytes, dict[str, int]]:
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
    return b"".join(pieces), counts


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
Found = tuple[list[Span], int]  # spans found at a candidate, and where the scan resumes


def _scan(data: bytes) -> list[Span]:
    """Byte spans (sorted, disjoint) of the secrets in `data`."""
    spans: list[Span] = []
    pos = 0
    end_of_data = len(data)
    match_at = _MATCH
    unordered = False
    while pos < end_of_data:
        start = match_at(data, pos, end_of_data)
        if start < 0:
            break
        for rule, rx, bounded in _BY_FIRST_BYTE[data[start]]:
            if bounded and not _at_boundary(data, start):
                continue
            which = rx.match(data, start)
            if which is not None:
                kind = rule
                break
        else:  # a rule that needs a word boundary before it, inside a word
            pos = start + 1
            continue
        found, resume = _HANDLERS.get(kind, _specific)(data, start, which.end(), kind)
        for span in found:
            if spans and span[0] < spans[-1][1]:
                unordered = True
            spans.append(span)
        pos = max(resume, start + 1)
    if unordered:
        spans = _disjoint(spans)
    return spans


def _disjoint(spans: list[Span]) -> list[Span]:
    """Sorted spans without overlaps (a command handler can report spans ahead of the scan)."""
    out: list[Span] = []
    for span in sorted(spans):
        if out and span[0] < out[-1][1]:
            if span[1] > out[-1][1]:
                out[-1] = (out[-1][0], span[1], out[-1][2])
            continue
        out.append(span)
    return out


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
        or _PLACEHOLDER_PARTS.search(value) is not None
        or (_PLACEHOLDER_WORDS.search(value) is not None and not (len(value) >= 20 and _STRONG.match(value)))
    )


def _entropy(value: bytes) -> float:
    counts: dict[int, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def _case_changes(value: bytes) -> int:
    return sum(1 for a, b in itertools.pairwise(value) if (65 <= a <= 90) != (65 <= b <= 90))


def _looks_random(value: bytes) -> bool:
    """A machine-made token (keys, tokens, secrets) rather than a word, a name or a number."""
    if len(value) < _MIN_SECRET or any(c in b" \t" for c in value) or value.isdigit():
        return False
    if b"@" in value and b"." in value.rpartition(b"@")[2]:  # an e-mail address
        return False
    if _PATHLIKE.match(value):
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
    if _CODE_START.match(secret) or _DOTTED_NAME.fullmatch(secret):
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
_SHELL_WORDS = frozenset((b"true", b"false", b"exit", b"echo", b"return", b"die", b"printf", b"break", b"continue"))


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
    if family == "weak_key":
        return len(value) >= 32 and _STRONG.match(value) is not None and _looks_random(value)
    if family == "password":
        if len(value) < _MIN_PASSWORD[quoted] or _PATHLIKE.match(value):
            return False
        if quoted:
            return not _is_sentence(value)
        if value.isalpha() and not env_style:
            return False  # `password: hunter` in prose or YAML with a lowercase key: too ambiguous
        return not value.isdigit() or len(value) >= 6
    return _looks_random(value)


def _family(kind: str) -> str:
    return {"password_assignment": "password", "weak_key": "weak_key"}.get(kind, "secret")


# ghp_xxxxxxxx..., AKIA0000000000000000, xoxb-your-token: documentation, not tokens
_FILLER = re.compile(rb"(?i)x{4}|\*{3}|\.{3}|0{12}|your|[-_]here\b|placeholder|redacted|change[-_]?me")


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
    secret_start = data.index(b":", data.index(b"://", start, end) + 3, end) + 1
    end = _url_host_at(data, secret_start, end) + 1
    secret = data[secret_start : end - 1]
    port, slash, _ = secret.partition(b"/")
    if _is_placeholder(secret) or (secret.isdigit() and len(secret) <= 5) or (slash and port.isdigit()):
        return [], end
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


def _key_family(key: bytes) -> tuple[str, bytes] | None:
    """(kind, key word) for a key name, or None when the key only mentions a key word (max_tokens, author)."""
    match = _KEY_NAME.match(key.lstrip(b"-$"))
    if match is None:
        return None
    prefix, word, suffix = match.group(1), match.group(2), match.group(3)
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


def _assignment(data: bytes, start: int, end: int, kind: str) -> Found:
    key_start, key_end = _read_key(data, start)
    key = data[key_start:key_end]
    family = _key_family(key)
    value_start = _matched(_SEP.match(data, key_end)).end()
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
    value_start = end - 1
    value = _matched(_UNQUOTED_VALUE.match(data, value_start))
    secret = data[value_start : value.end()] if value else b""
    if not _judge(secret, "password", True, True):
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
    value = _matched(_UNQUOTED_VALUE.match(data, value_start))
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
    value = _matched(_UNQUOTED_VALUE.match(data, value_start))
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
    value_start = end - 1
    value = _matched(_UNQUOTED_VALUE.match(data, value_start))
    secret = data[value_start : value.end()] if value else b""
    if not _judge(secret, "password", False, True):
        return [], end
    return [(value_start, value_start + len(secret), "password_assignment")], value_start + len(secret)


def _fish_set(data: bytes, start: int, end: int, kind: str) -> Found:
    """fish: `set -gx API_TOKEN value`."""
    words = data[start : end - 1].split()
    name = words[-1]
    family = _key_family(name)
    if family is None:
        return [], end - 1
    return _value(data, name, family[0], end - 1, _env_style(name))


# --- command lines ------------------------------------------------------------------------------------------------

_SEGMENT_END = re.compile(rb"\n|\r|\\n|\\r|\|\||&&|[|;`]")
_ARG = re.compile(rb"(?:\\*\"(?:[^\"\\]|\\[^\"])*\\*\"|'[^'\n]*'|[^\s'\"]|\\\")+")
# Per command: short flags followed by a password as the next argument, and flags that take it attached (-pPASS).
_SEPARATE: dict[bytes, frozenset[bytes]] = {
    b"sshpass": frozenset({b"-p"}),
    b"docker": frozenset({b"-p"}),
    b"redis-cli": frozenset({b"-a"}),
    b"zip": frozenset({b"-P"}),
    b"unzip": frozenset({b"-P"}),
    b"sqlcmd": frozenset({b"-P"}),
    b"bcp": frozenset({b"-P"}),
    b"mongo": frozenset({b"-p"}),
    b"ldap": frozenset({b"-w"}),
    b"smbclient": frozenset(),
    b"keytool": frozenset(
        {b"-storepass", b"-keypass", b"-srcstorepass", b"-deststorepass", b"-srckeypass", b"-destkeypass"}
    ),
    b"jarsigner": frozenset({b"-storepass", b"-keypass"}),
    b"openssl": frozenset({b"-passin", b"-passout", b"-pass", b"-k", b"-password"}),
    b"az": frozenset({b"-p"}),
    b"ssh-keygen": frozenset({b"-N", b"-P"}),
    b"influx": frozenset({b"-password", b"-p"}),
    b"htpasswd": frozenset(),
    b"lftp": frozenset(),
    b"rabbitmqctl": frozenset(),
    b"curl": frozenset(),
    b"mysql": frozenset(),
    b"7z": frozenset(),
    b"psql": frozenset(),
    b"rclone": frozenset(),
    b"gh": frozenset({b"-b", b"--body"}),  # gh secret set NAME --body VALUE
    b"http": frozenset(),
    b"net": frozenset(),
}
_ALIASES = {
    b"podman": b"docker", b"nerdctl": b"docker", b"buildah": b"docker", b"skopeo": b"docker", b"helm": b"docker",
    b"oras": b"docker", b"crane": b"docker", b"7za": b"7z", b"7zz": b"7z", b"mongosh": b"mongo",
    b"mongodump": b"mongo", b"mongorestore": b"mongo", b"mongoexport": b"mongo", b"mongoimport": b"mongo",
    b"ldapsearch": b"ldap", b"ldapadd": b"ldap", b"ldapmodify": b"ldap", b"ldapdelete": b"ldap",
    b"ldapwhoami": b"ldap",
}  # fmt: skip
_ATTACHED = {b"mysql": b"-p", b"7z": b"-p", b"sshpass": b"-p", b"docker": b"-p"}


def _unquote(data: bytes, start: int, end: int) -> tuple[int, int]:
    """Inner bounds of a shell word: after its opening quote (also JSON-escaped), up to the first quote or backslash.

    A raw `"` can also be the end of a JSON string holding the command, so a value never runs past one."""
    while start < end and data[start] in b"\\\"'":
        start += 1
    for quote in (b'"', b"'", b"\\"):
        stop = data.find(quote, start, end)
        if stop >= 0:
            end = stop
    for opener, closer in ((b"[", b"]"), (b"(", b")"), (b"{", b"}")):  # `[... --body VALUE]`: not the value's
        if end > start and data[end - 1 : end] == closer and data.find(opener, start, end) < 0:
            end -= 1
    return start, end


def _command(data: bytes, start: int, end: int, kind: str) -> Found:
    """Short flags that carry a password on a known command line (the long `--password x` forms are cli_flag's)."""
    name_end = start
    while name_end < len(data) and data[name_end] not in b" \t":
        name_end += 1
    name = data[start:name_end].removesuffix(b".exe")
    base = _ALIASES.get(name, b"mysql" if name.startswith((b"mysql", b"mariadb")) else name)
    seg = _SEGMENT_END.search(data, name_end, min(len(data), name_end + 4000))
    seg_end = seg.start() if seg else min(len(data), name_end + 4000)
    args = [(m.start(), m.end()) for m in _ARG.finditer(data, name_end, seg_end)]
    words = [data[a:b] for a, b in args]
    if name == b"https":
        base = b"http"
    if base == b"docker" and b"login" not in words:
        return [], name_end
    separate = _SEPARATE.get(base, frozenset())
    attached = _ATTACHED.get(base)
    spans: list[Span] = []

    def take(a: int, b: int, *, after_colon: bool = False, sep: bytes = b":") -> None:
        if sep == b"%" and data.find(b"%", a, b) > 0:  # DOMAIN\\user%password: the backslash is the domain's
            a = data.find(b"%", a, b)
        a, b = _unquote(data, a, b)
        if after_colon:
            cut = data.find(sep, a, b)
            if cut < 0:
                return
            user = data[a:cut]
            if cut + 1 == b:  # `curl -u sk_test_xyz:` - the key is the user part
                if _specific_kind(user) or _looks_random(user):
                    spans.append((a, cut, _specific_kind(user) or "secret_assignment"))
                return
            a = cut + 1
        value = data[a:b]
        if value.startswith(b"pass:"):
            a += 5
            value = value[5:]
        specific = _specific_kind(value)
        if specific is not None:
            spans.append((a, b, specific))
        elif _judge(value, "password", False, True) and not value.startswith(b"-"):
            spans.append((a, b, "password_assignment"))

    for i, (word, (a, b)) in enumerate(zip(words, args, strict=True)):
        nxt = args[i + 1] if i + 1 < len(args) else None
        if word in separate and nxt is not None:
            take(*nxt)
        elif attached and word.startswith(attached) and len(word) > len(attached) and word[len(attached)] not in b"-=":
            take(a + len(attached), b)
        elif base in (b"http", b"https") and word in (b"-a", b"--auth") and nxt is not None:  # httpie
            take(*nxt, after_colon=True)
        elif base == b"net" and word == b"user" and len(args) > i + 2 and words[i + 2][:1] not in (b"/", b"*"):
            take(*args[i + 2])  # net user NAME PASSWORD /add
        elif base == b"net" and word == b"use" and len(args) > i + 2 and not words[i + 2].startswith(b"/"):
            take(*args[i + 2])  # net use \\server\share PASSWORD /user:NAME
        elif base == b"curl" and word in (b"-u", b"--user", b"--proxy-user", b"-U") and nxt is not None:
            take(*nxt, after_colon=True)
        elif base == b"smbclient" and word in (b"-U", b"--user") and nxt is not None:
            take(*nxt, after_colon=True, sep=b"%")
        elif base == b"lftp" and word == b"-u" and nxt is not None:
            take(*nxt, after_colon=True, sep=b",")
        elif base == b"htpasswd" and word.startswith(b"-") and b"b" in word:
            positional = [arg for arg, w in zip(args[i + 1 :], words[i + 1 :], strict=True) if not w.startswith(b"-")]
            if len(positional) >= 3:  # htpasswd -b [-c] FILE USER PASSWORD
                take(*positional[2])
        elif base == b"rabbitmqctl" and word in (b"add_user", b"change_password") and len(args) >= i + 3:
            take(*args[i + 2])
    return sorted(spans), name_end


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
