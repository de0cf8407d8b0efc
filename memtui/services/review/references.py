"""References between parts of the memory, checked on the tree a partial approve is about to commit.

A run renumbers tasks, adds task groups and new rollout summaries in separate hunks; leaving one hunk out can leave
a ``[Task n]`` pointing at a task that is gone or at another group's task, or a link to a rollout summary file that
was never added. ``dangling`` lists such references in a planned tree; ``approve`` refuses a partial approval that
would add any (the reviewed tree itself is the baseline of comparison, so a full approve is never refused) and names a
fix: the left-out hunk to take back, or the taken hunk to leave out too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY
from memtui.domain.scope import parse_memory
from memtui.domain.tasks import TASK_HEADING, TASK_REF

_TASK_HEADING = TASK_HEADING
_TASK_REF = TASK_REF
_SUMMARY_LINK = re.compile(r"rollout_summaries/[\w.\-]+\.md")


@dataclass(frozen=True)
class Dangling:
    """A reference the planned tree cannot resolve. ``key`` ignores line numbers (they shift between trees)."""

    file: str
    line: int
    ref: str
    why: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.file, self.ref, self.why)

    def describe(self) -> str:
        return f"{self.file}:{self.line}: {self.ref} {self.why}"


def _task_refs(text: str) -> list[Dangling]:
    out: list[Dangling] = []
    lines = text.splitlines()
    headings: dict[str, list[int]] = {}
    for number, line in enumerate(lines, 1):
        if m := _TASK_HEADING.match(line):
            headings.setdefault(m.group(1), []).append(number)
    for task, where in sorted(headings.items()):
        for number in where[1:]:
            out.append(Dangling(MEMORY_MD, number, f"## Task {task}", "is a second heading with this task number"))
    groups = parse_memory(text)
    for g in groups:
        own = set(g.tasks) if not g.is_global else set(headings)
        for offset, line in enumerate(g.lines):
            if _TASK_HEADING.match(line):
                continue
            for n in _TASK_REF.findall(line):
                if n not in own:
                    why = "names no task of this file" if n not in headings else f"names no task of {g.title!r}"
                    out.append(Dangling(MEMORY_MD, g.line_start + offset, f"[Task {n}]", why))
    return out


def _summary_links(rel: str, text: str, exists: Callable[[str], bool]) -> list[Dangling]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for link in _SUMMARY_LINK.findall(line):
            if not exists(link):
                out.append(Dangling(rel, number, link, "links a rollout summary file that is not in the memory"))
    return out


def dangling(read: Callable[[str], str | None], exists: Callable[[str], bool]) -> list[Dangling]:
    """Every unresolved reference of a tree: ``read(rel)`` gives a file's text, ``exists(rel)`` whether it is there."""
    out: list[Dangling] = []
    memory = read(MEMORY_MD)
    if memory is not None:
        out += _task_refs(memory)
        out += _summary_links(MEMORY_MD, memory, exists)
    summary = read(MEMORY_SUMMARY)
    if summary is not None:
        out += _summary_links(MEMORY_SUMMARY, summary, exists)
    return out


def introduced(before: list[Dangling], after: list[Dangling]) -> list[Dangling]:
    """The references ``after`` leaves dangling that ``before`` (the reviewed tree) did not."""
    known = {d.key for d in before}
    return [d for d in after if d.key not in known]


@dataclass
class PlanCheck:
    """What a partial approval would leave dangling, and the hunk choices that resolve it."""

    dangling: list[Dangling]
    take_back: list[str]  # left-out hunks whose return resolves some of it
    leave_out: list[str]  # taken hunks whose leaving out resolves some of it
    invalid: str | None = None  # the planned tree fails the artifact validation of a full run

    @property
    def ok(self) -> bool:
        return not self.dangling and self.invalid is None

    def describe(self) -> str:
        lines = [d.describe() for d in self.dangling[:12]]
        if len(self.dangling) > 12:
            lines.append(f"... and {len(self.dangling) - 12} more")
        if self.invalid:
            lines.insert(0, self.invalid)
        fixes = []
        if self.take_back:
            fixes.append(f"take back hunk(s) {', '.join(self.take_back)}")
        if self.leave_out:
            fixes.append(f"also leave out hunk(s) {', '.join(self.leave_out)}")
        fix = f"Fix: {' or '.join(fixes)}, or amend the hunk that holds the reference." if fixes else (
            "Fix: amend the hunk that holds the reference, or approve the whole file."
        )  # fmt: skip
        return "\n".join(["the partial approval would leave references dangling:", *lines, fix])


MAX_FIX_CANDIDATES = 24  # hunks tried as a fix, each a re-plan of the decided files


def check_plan(
    plan_with: Callable[[set[str]], dict[str, str | None]],
    reviewed: Callable[[str], str | None],
    reviewed_paths: set[str],
    rejected: set[str],
    taken: list[tuple[str, str]],
    validate: Callable[[str | None, str | None], str | None],
) -> PlanCheck:
    """Check the tree that leaving out ``rejected`` would commit.

    ``plan_with(ids)`` gives the decided files' contents for a set of left-out hunk ids; ``reviewed`` reads the run's
    tree; ``taken`` lists (hunk id, file) of the hunks going in; ``validate(memory, summary)`` is the full run's
    artifact validation."""
    before = dangling(reviewed, reviewed_paths.__contains__)

    def problems(ids: set[str]) -> tuple[list[Dangling], str | None]:
        files = plan_with(ids)
        paths = {p for p in reviewed_paths if files.get(p, "") is not None} | {
            p for p, t in files.items() if t is not None
        }

        def read(rel: str) -> str | None:
            return files[rel] if rel in files else reviewed(rel)

        return introduced(before, dangling(read, paths.__contains__)), validate(read(MEMORY_MD), read(MEMORY_SUMMARY))

    found, invalid = problems(rejected)
    check = PlanCheck(found, [], [], invalid)
    if check.ok:
        return check
    keys = {d.key for d in found}

    def helps(ids: set[str]) -> bool:
        """Resolves some of the problems and adds none."""
        after, bad = problems(ids)
        now = {d.key for d in after}
        return now <= keys and (bad is None or bad == invalid) and (now < keys or (invalid is not None and bad is None))

    check.take_back = [hid for hid in sorted(rejected)[:MAX_FIX_CANDIDATES] if helps(rejected - {hid})]
    files = {d.file for d in found}
    check.leave_out = [hid for hid, rel in taken[:MAX_FIX_CANDIDATES] if rel in files and helps(rejected | {hid})]
    return check
