"""The redaction rules and word lists are package data (memtui/redact/rules.toml), read once by memtui.adapters.redact.data:
what the scanner runs is exactly what the file says, and a bad edit of the file fails here, not in a user's run."""

from __future__ import annotations

import re
import tomllib
from importlib import resources

import re2

from memtui.adapters import redact
from memtui.adapters.redact import data


def _file() -> dict:
    return tomllib.loads(resources.files("memtui.adapters.redact").joinpath("rules.toml").read_text(encoding="utf-8"))


def test_the_scanner_runs_the_rules_of_the_data_file_in_its_order():
    rules = _file()["rules"]
    assert [kind for kind, _ in redact.RULES] == [r["kind"] for r in rules] and len(rules) == 76
    plain = [i for i, r in enumerate(rules) if re.search(r"\{(ci)?[=:]", r["pattern"]) is None]
    assert len(plain) > 50 and all(redact.RULES[i][1] == rules[i]["pattern"].encode() for i in plain)
    aws = next(i for i, r in enumerate(rules) if r["kind"] == "aws_access_key_id")
    assert redact.RULES[aws][1] == rb"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"


def test_every_fragment_reference_is_resolved_and_every_rule_compiles_for_re_and_re2():
    for kind, pattern in redact.RULES:
        assert re.search(rb"\{(ci)?[=:]", pattern) is None, kind
        re.compile(pattern)
        re2.compile(pattern)
    assert data._expand("{ci:key}-{=b64}", data._FRAGMENTS) == b"[kK][eE][yY]-[A-Za-z0-9+/]"


def test_the_word_lists_are_lowercase_where_values_are_lowered_before_the_lookup():
    words = _file()["words"]
    for name in ("type_words", "sentence_words", "password_words", "scheme_words", "shell_words"):
        assert all(w == w.lower() and w.strip() == w for w in words[name]), name
    assert frozenset(w.encode() for w in words["type_words"]) == data._TYPE_WORDS
    assert b"changeme" in data._TYPE_WORDS and b"hunter2" not in data._TYPE_WORDS


def test_a_rule_from_the_file_redacts_and_its_anchor_lets_the_text_through_the_fast_path():
    token = "AKIA" + "Q" * 16
    assert redact.redact_text(f"id {token} end") == f"id {redact.PLACEHOLDER} end"
    assert redact.has_anchor(f"id {token}") and not redact.has_anchor("plain words only")
