"""``memtui lint``: find memory that would leak across projects once exported.

Three checks on MEMORY.md's task groups: a group that mentions another project's path or name, a preference marked
user-level (global) whose evidence comes from a single project, and a group with no ``applies_to`` (export cannot
tell which project it belongs to, so a scoped export leaves it out).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel

from memtui.domain.scope import GLOBAL_TAG, TaskGroup, evidence_projects, inside, read_groups
from memtui.state import threads

Rule = Literal[
    "cross_project", "global_single_project", "no_applies_to", "untrusted", "injection", "claims_user", "hidden_text"
]
GENERIC_NAMES = frozenset(
    {"src", "app", "apps", "code", "work", "home", "tmp", "repo", "repos", "project", "projects", "dev", "main", "docs"}
)


class LintFinding(BaseModel):
    rule: Rule
    file: str = "MEMORY.md"
    line: int
    group: str
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message}"


def known_projects(groups: list[TaskGroup], conn: sqlite3.Connection | None = None) -> list[str]:
    """Every project memtui knows: the groups' cwds and, with a state connection, the indexed threads' cwds."""
    found = {g.cwd.rstrip("/") for g in groups if g.cwd}
    if conn is not None:
        found |= {cwd.rstrip("/") for cwd in threads.projects(conn)}
    return sorted(p for p in found if p and p != "/")


def _name(project: str) -> str | None:
    name = PurePosixPath(project).name
    return name if len(name) >= 3 and name.lower() not in GENERIC_NAMES else None


def _mentions(text: str, project: str) -> str | None:
    """What in ``text`` names ``project``: its path, or its folder name as a word of its own."""
    if re.search(re.escape(project) + r"(?=/|\b|$)", text):
        return project
    name = _name(project)
    if name and re.search(r"(?<![\w/.-])" + re.escape(name) + r"(?![\w-])", text, re.I):
        return name
    return None


def lint_groups(
    groups: list[TaskGroup], projects: list[str], memory_root: Path | None = None, file: str = "MEMORY.md"
) -> list[LintFinding]:
    out: list[LintFinding] = []
    resolve = functools.cache(Path.resolve)  # groups x projects pairs, each path resolved once
    for g in groups:
        if g.applies_to is None:
            out.append(
                LintFinding(
                    rule="no_applies_to",
                    file=file,
                    line=g.line_start,
                    group=g.title,
                    message=f"task group {g.title!r} has no applies_to line; a project-scoped export leaves it out",
                )
            )
        if g.cwd:
            own = Path(g.cwd)
            own_name = _name(g.cwd)
            for other in projects:
                if inside(other, own, resolve) or inside(g.cwd, Path(other), resolve):
                    continue  # the same project, or one nested in the other
                hit = _mentions(g.text, other)
                if hit is None or (hit == _name(other) and hit == own_name):
                    continue
                line = next((g.line_start + i for i, text in enumerate(g.lines) if hit.lower() in text.lower()), 0)
                out.append(
                    LintFinding(
                        rule="cross_project",
                        file=file,
                        line=line or g.line_start,
                        group=g.title,
                        message=f"task group for {g.cwd} mentions another project ({hit!r} of {other})",
                    )
                )
        for line, bullet in g.preference_bullets():
            if not (g.is_global or GLOBAL_TAG in bullet):
                continue
            backing = evidence_projects(groups, bullet, memory_root)
            if len(backing) <= 1:
                where = f"only {next(iter(backing))}" if backing else "no project's evidence"
                out.append(
                    LintFinding(
                        rule="global_single_project",
                        file=file,
                        line=line,
                        group=g.title,
                        message=f"preference marked global is backed by {where}: {bullet[:100]}",
                    )
                )
    return sorted(out, key=lambda f: (f.line, f.rule))


def lint_memory(memory_root: Path, conn: sqlite3.Connection | None = None) -> list[LintFinding]:
    from memtui.domain.trust.lint import lint_trust

    groups = read_groups(memory_root)
    found = lint_groups(groups, known_projects(groups, conn), memory_root)
    trust = [
        LintFinding(rule=f.rule, file=f.file, line=f.line, group="", message=f.message) for f in lint_trust(memory_root)
    ]
    return found + trust


def lint_summary_line(findings: list[LintFinding]) -> str:
    """One line for a status area: how many findings of which kind."""
    if not findings:
        return "lint: no cross-project findings"
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    labels = {
        "cross_project": "mention other projects",
        "global_single_project": "global preference from one project",
        "no_applies_to": "without applies_to",
        "untrusted": "tool-only, not approved",
        "injection": "possible injection",
        "claims_user": "speaking for the user without the user's words",
        "hidden_text": "with hidden characters",
    }
    return "lint: " + ", ".join(f"{n} {labels[r]}" for r, n in sorted(counts.items())) + " (memtui lint)"
