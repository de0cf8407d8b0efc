"""The unit of memory health: one bullet of a MEMORY.md task group's ``## User preferences``, ``## Reusable
knowledge`` or ``## Failures and how to do differently`` section in the approved baseline.

A bullet, not a whole task block: it states one thing, so a later sentence can restate or contradict it as a whole;
it is one line of a review hunk and the line a person confirms or removes; citations (``MEMORY.md:12-12``) reach
it. A task block mixes many statements, and the summary's entries repeat the bullets. The block id is a hash of
the normalised line (``phase2.prompt_inputs.normalize_memory_line``: no bullet, no ``[Task n]``), so renumbering
tasks or moving a bullet keeps its history.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from memtui.domain.scope import parse_memory
from memtui.domain.tasks import TASK_HEADING, TASK_REF
from memtui.services.health.rules import Clause, clauses, statement_of
from memtui.services.phase2.prompt_inputs import normalize_memory_line

SECTIONS = {
    "user preferences": "preference",
    "reusable knowledge": "knowledge",
    "failures and how to do differently": "failure",
}
_TASK = TASK_HEADING
_TASK_REF = TASK_REF
_THREAD = re.compile(r"thread_id=([0-9A-Za-z_:.-]+)")
ID_CHARS = 16


def block_id(line: str) -> str:
    return hashlib.sha256(normalize_memory_line(line).encode("utf-8")).hexdigest()[:ID_CHARS]


@dataclass
class Block:
    id: str
    file: str
    line: int  # 1-based, in the approved baseline
    section: str  # preference | knowledge | failure
    text: str  # the bullet as written
    project: str | None  # the task group's cwd; None for a user-level (global) group
    group: str
    threads: list[str] = field(default_factory=list)  # sessions its [Task n] tags point at (its evidence)

    @property
    def statement(self) -> str:
        return statement_of(self.text)

    @property
    def clauses(self) -> list[Clause]:
        return clauses(self.statement)


def parse_blocks(text: str, file: str = "MEMORY.md") -> list[Block]:
    """Every bullet of the three block-level sections of every task group, in file order."""
    out: list[Block] = []
    for group in parse_memory(text):
        task_threads: dict[str, list[str]] = {}
        task: str | None = None
        section: str | None = None
        for offset, line in enumerate(group.lines):
            if m := _TASK.match(line):
                task, section = m.group(1), None
                continue
            if line.startswith("#"):
                section = SECTIONS.get(line.lstrip("#").strip().rstrip(":").lower())
                if section is not None:
                    task = None
                continue
            if task is not None:
                task_threads.setdefault(task, []).extend(_THREAD.findall(line))
            stripped = line.strip()
            if section is None or not stripped.startswith(("- ", "* ")):
                continue
            refs = list(_TASK_REF.findall(stripped))
            threads = list(dict.fromkeys(t for n in refs for t in task_threads.get(n, [])))
            out.append(
                Block(
                    id=block_id(stripped),
                    file=file,
                    line=group.line_start + offset,
                    section=section,
                    text=stripped,
                    project=None if group.is_global else group.cwd,
                    group=group.title,
                    threads=threads,
                )
            )
    return out
