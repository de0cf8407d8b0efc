"""Secret redaction (interim: Codex's four rules; the full fast scanner replaces this module)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PLACEHOLDER = "[REDACTED_SECRET]"

_RULES = [
    ("openai_key", re.compile(r"sk-[A-Za-z0-9]{20,}"), PLACEHOLDER),
    ("aws_access_key_id", re.compile(r"\bAKIA[0-9A-Z]{16}\b"), PLACEHOLDER),
    ("bearer", re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._\-]{16,}\b"), f"Bearer {PLACEHOLDER}"),
    (
        "assignment",
        re.compile(r"(?i)\b(api[_-]?key|token|secret|password)\b(\s*[:=]\s*)([\"']?)[^\s\"']{8,}"),
        rf"\1\2\3{PLACEHOLDER}",
    ),
]


@dataclass
class Redaction:
    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def redact(text: str) -> Redaction:
    counts: dict[str, int] = {}
    for kind, pattern, repl in _RULES:
        text, n = pattern.subn(repl, text)
        if n:
            counts[kind] = counts.get(kind, 0) + n
    return Redaction(text, counts)


def redact_text(text: str) -> str:
    return redact(text).text
