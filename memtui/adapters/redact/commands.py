"""Command lines whose flags carry a password (`mysql -pPASS`, `sshpass -p PASS`, `curl -u user:pass`, ...): the
per-command flag tables live in rules.toml; the long `--password x` forms are the cli_flag rule's.
"""

from __future__ import annotations

import re

from memtui.adapters.redact.data import _ALIASES, _ATTACHED, _SEPARATE
from memtui.adapters.redact.judge import _judge, _looks_random, _specific_kind
from memtui.adapters.redact.patterns import Found, Span

_SEGMENT_END = re.compile(rb"\n|\r|\\n|\\r|\|\||&&|[|;`]")
_ARG = re.compile(rb"(?:\\*\"(?:[^\"\\]|\\[^\"])*\\*\"|'[^'\n]*'|[^\s'\"]|\\\")+")


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
