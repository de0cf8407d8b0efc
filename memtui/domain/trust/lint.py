"""``memtui lint`` on trust: statements agents should not take at face value.

Over the memory files agents load: a tool-only statement no person approved, a statement flagged as possible
injection (approved or not: it stays worth a look), a statement that speaks for the user with a class other than
``user``, and hidden characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memtui.core.hidden import has_hidden, reveal
from memtui.domain.trust import markers
from memtui.domain.trust.classes import Trust

FILES = ("MEMORY.md", "memory_summary.md")


@dataclass(frozen=True)
class TrustFinding:
    file: str
    line: int
    rule: str  # untrusted | injection | claims_user | hidden_text
    message: str


def lint_text(rel: str, text: str) -> list[TrustFinding]:
    out: list[TrustFinding] = []
    lines = text.split("\n")
    statements = set(markers.statement_lines(text))
    for i, line in enumerate(lines):
        if has_hidden(line):
            out.append(TrustFinding(rel, i + 1, "hidden_text", f"hidden characters: {reveal(line).strip()[:100]}"))
        if i not in statements:
            continue
        m = markers.parse(line)
        body = markers.strip(line).strip()[:100]
        if m is not None and m.flag:
            where = f" from item {m.item}" if m.item else ""
            where += f" of rollout {m.thread}" if m.thread else ""
            out.append(TrustFinding(rel, i + 1, "injection", f"possible injection ({m.flag}){where}: {body}"))
        elif m is not None and m.untrusted:
            out.append(TrustFinding(rel, i + 1, "untrusted", f"only tool output supports it, not approved: {body}"))
        if m is not None and m.trust != Trust.USER and markers.presents_as_user(markers.strip(line)):
            out.append(TrustFinding(rel, i + 1, "claims_user", f"speaks for the user, class {m.trust}: {body}"))
    return out


def lint_trust(memory_root: Path) -> list[TrustFinding]:
    out: list[TrustFinding] = []
    for rel in FILES:
        path = memory_root / rel
        if path.is_file():
            out += lint_text(rel, path.read_text(encoding="utf-8", errors="replace"))
    return out
