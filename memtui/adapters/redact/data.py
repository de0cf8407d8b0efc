"""The redaction rules and word lists, read once from ``rules.toml`` (package data) into the bytes the scanner, the
judges and the handlers use.

The rules are data so they can be read, reviewed and extended in one place; a pattern there is exactly what a
Python ``rb"..."`` literal would hold, with ``{=name}`` / ``{ci=name}`` / ``{ci:text}`` standing for a shared
fragment, that fragment made ASCII-case-insensitive, or text made so.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from typing import Any

PLACEHOLDER = "[REDACTED_SECRET]"
_PLACEHOLDER_B = PLACEHOLDER.encode()


def _ci(pattern: bytes) -> bytes:
    """ASCII-only case-insensitivity: RE2's (?i) also folds U+017F (ſ) and U+212A (K) into s and k."""
    return b"".join(b"[%c%c]" % (c, c ^ 0x20) if chr(c).isascii() and chr(c).isalpha() else bytes([c]) for c in pattern)


def _load() -> dict[str, Any]:
    return tomllib.loads(resources.files(__package__).joinpath("rules.toml").read_text(encoding="utf-8"))


_DATA = _load()
_WORDS: dict[str, list[str]] = _DATA["words"]
_TEMPLATE = re.compile(r"\{(ci)?([=:])([^{}]*)\}")


def _bytes(words: list[str]) -> frozenset[bytes]:
    return frozenset(w.encode() for w in words)


def _expand(template: str | list[str], fragments: dict[str, bytes]) -> bytes:
    """A pattern of rules.toml as bytes, its fragment references replaced."""
    text = "".join(template) if isinstance(template, list) else template

    def one(m: re.Match[str]) -> str:
        ci, op, arg = m.groups()
        value = fragments[arg] if op == "=" else arg.encode()
        return (_ci(value) if ci else value).decode("latin-1")

    return _TEMPLATE.sub(one, text).encode("latin-1")


_KEY_QUALIFIERS = "|".join(_WORDS["key_qualifiers"]).encode()
_KEY_SUFFIXES = _bytes(_WORDS["key_suffix_words"])
# Commands whose short flags carry a password; the RE2 alternation of their names (some with a subcommand).
_COMMANDS = "|".join([*_WORDS["commands"], *_WORDS["commands_with_context"]]).encode()

_FRAGMENTS: dict[str, bytes] = {
    "key_qualifiers": _KEY_QUALIFIERS,
    "key_suffixes": "|".join(_WORDS["key_suffix_words"]).encode(),
    "commands": _COMMANDS,
}
for _name, _template in _DATA["fragments"].items():  # in file order: a fragment may use the ones before it
    _FRAGMENTS[_name] = _expand(_template, _FRAGMENTS)

_KEY_WORDS = _FRAGMENTS["key_words"]
_SEPARATOR = _FRAGMENTS["separator"]
_B64 = _FRAGMENTS["b64"]

# Ordered RE2 alternatives: (kind, pattern). Order matters only between alternatives starting at the same byte.
RULES: tuple[tuple[str, bytes], ...] = tuple((r["kind"], _expand(r["pattern"], _FRAGMENTS)) for r in _DATA["rules"])
# Rules the DFA starts at their literal: the whole token, head included, for the handler and for values.
_FULL: dict[str, bytes] = {kind: _expand(p, _FRAGMENTS) for kind, p in _DATA["full"].items()}
_HEAD: dict[str, tuple[int, ...]] = {kind: tuple(n) for kind, n in _DATA["head"].items()}
_CONTEXT_RULES = frozenset(_DATA["kinds"]["context"])
_NEEDS_DIGIT = frozenset(_DATA["kinds"]["needs_digit"])

# Kinds a redaction can be counted under (assignments are refined by key name, tokens in values by their format).
KINDS: tuple[str, ...] = tuple(
    dict.fromkeys((*(kind for kind, _ in RULES if kind not in _CONTEXT_RULES), *_DATA["kinds"]["counted"]))
)
# Literal substrings (lowercase) at least one of which every match contains: text without any is returned unchanged.
ANCHORS: tuple[str, ...] = (*_DATA["anchors"]["literals"], *(c.decode() for c in _COMMANDS.split(b"|")))

_TYPE_WORDS = _bytes(_WORDS["type_words"])
_SENTENCE_WORDS = _bytes(_WORDS["sentence_words"])
_PASSWORD_WORDS = _bytes(_WORDS["password_words"])
_SCHEME_WORDS = _bytes(_WORDS["scheme_words"])
_SHELL_WORDS = _bytes(_WORDS["shell_words"])
_DEFAULT_PASSWORDS = _bytes(_WORDS["default_passwords"])
_FLAG_PROSE_WORDS = _bytes(_WORDS["flag_prose_words"])

_COMMAND_TABLES: dict[str, dict[str, Any]] = _DATA["commands"]
# Per command: short flags followed by a password as the next argument, and flags that take it attached (-pPASS).
_SEPARATE: dict[bytes, frozenset[bytes]] = {k.encode(): _bytes(v) for k, v in _COMMAND_TABLES["separate"].items()}
_ALIASES: dict[bytes, bytes] = {k.encode(): v.encode() for k, v in _COMMAND_TABLES["aliases"].items()}
_ATTACHED: dict[bytes, bytes] = {k.encode(): v.encode() for k, v in _COMMAND_TABLES["attached"].items()}
