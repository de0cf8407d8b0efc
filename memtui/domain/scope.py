"""Which memory belongs to which project: MEMORY.md's task groups and their ``applies_to: cwd=``.

One project's notes must not end up in another project's repository (an AGENTS.md gets committed and pushed).
``parse_memory`` splits MEMORY.md into task groups; ``scoped_text`` keeps the groups whose cwd lies inside a
project plus the preferences the memory marks as user-level (a group with ``applies_to: global``, or a bullet tagged
``[global]``); ``scrub_home`` turns absolute paths under the user's home into ``~/...``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memtui.domain.home_paths import tilde_homes
from memtui.domain.tasks import TASK_HEADING, TASK_REF

GROUP_PREFIX = "# Task Group:"
GLOBAL_TAG = "[global]"
_APPLIES = re.compile(r"^applies_to:\s*(?P<rest>.*)$", re.I)
_CWD = re.compile(r"(?:^|[;\s])cwd=(?P<cwd>[^;]+)")
_RECORDED_CWD = re.compile(r"\bcwd=(/[^,;)\s]*)")  # where a rollout ran: ``(cwd=/home/ana/src/x, ...)``
_TASK = TASK_HEADING
_TASK_REF = TASK_REF
_SUMMARY_REF = re.compile(r"rollout_summaries/[\w.\-]+\.md")


@dataclass
class TaskGroup:
    """One ``# Task Group:`` block of MEMORY.md; lines are 1-based and inclusive."""

    title: str
    line_start: int
    line_end: int
    lines: list[str]
    applies_to: str | None = None
    cwd: str | None = None
    is_global: bool = False
    tasks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def preference_bullets(self) -> list[tuple[int, str]]:
        """(line number, bullet) of the group's ``## User preferences`` section."""
        out: list[tuple[int, str]] = []
        inside = False
        for i, line in enumerate(self.lines):
            if line.startswith("#"):
                inside = line.lstrip("#").strip().lower().startswith("user preferences")
                continue
            if inside and line.lstrip().startswith("- "):
                out.append((self.line_start + i, line.strip()))
        return out


def parse_memory(text: str) -> list[TaskGroup]:
    """The task groups of a MEMORY.md, in file order. A group ends at the next level-1 heading or HTML comment line."""
    groups: list[TaskGroup] = []
    current: TaskGroup | None = None
    for number, line in enumerate(text.splitlines(), 1):
        starts_group = line.startswith(GROUP_PREFIX)
        ends_group = (line.startswith("# ") and not starts_group) or line.startswith("<!--")
        if current is not None and (starts_group or ends_group):
            while current.lines and not current.lines[-1].strip():
                current.lines.pop()
            current.line_end = current.line_start + len(current.lines) - 1
            groups.append(current)
            current = None
        if starts_group:
            current = TaskGroup(line[len(GROUP_PREFIX) :].strip(), number, number, [])
        if current is None:
            continue
        current.lines.append(line)
        if (m := _APPLIES.match(line.strip())) and current.applies_to is None:
            rest = m.group("rest").strip()
            current.applies_to = rest
            current.is_global = rest.lower().split(";")[0].strip() in ("global", "cwd=*", "cwd=~", "user")
            if not current.is_global and (c := _CWD.search(rest)):
                current.cwd = c.group("cwd").strip()
        if t := _TASK.match(line):
            current.tasks.append(t.group(1))
    if current is not None:
        while current.lines and not current.lines[-1].strip():
            current.lines.pop()
        current.line_end = current.line_start + len(current.lines) - 1
        groups.append(current)
    for g in groups:
        if g.cwd and not os.path.isabs(os.path.expanduser(g.cwd)):
            g.cwd = _anchor(g)
    return groups


def _anchor(g: TaskGroup) -> str | None:
    """A relative ``applies_to: cwd=`` (``.``, ``src``) means the project the group was recorded in (its title, its
    rollouts' ``cwd=``), never the directory an export happens to run in. With no single such project the group
    belongs to none: leaving it out of every project beats handing it to the wrong one."""
    recorded = {c.rstrip("/") for c in _RECORDED_CWD.findall("\n".join(g.lines[1:]))}
    if os.path.isabs(g.title):
        recorded.add(g.title.rstrip("/"))
    if len(recorded) != 1 or g.cwd is None:
        return None
    return os.path.normpath(os.path.join(recorded.pop() or "/", g.cwd))


def read_groups(memory_root: Path) -> list[TaskGroup]:
    try:
        return parse_memory((memory_root / "MEMORY.md").read_text(encoding="utf-8", errors="replace"))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []


def inside(path: str, project: Path, resolve: Callable[[Path], Path] = Path.resolve) -> bool:
    """True when ``path`` (a recorded cwd) is ``project`` or lies below it; both taken as given and resolved.
    ``resolve``: a caller asking about many pairs passes a cached one (each resolve is a walk of the file system)."""
    try:
        p = Path(os.path.expanduser(path))
        return p == project or p.is_relative_to(project) or resolve(p).is_relative_to(resolve(project))
    except (OSError, ValueError):
        return False


def home_dirs() -> list[str]:
    """The user's home as written and as resolved (they differ behind a symlinked /home), longest first."""
    home = Path.home()
    forms = {str(home).rstrip("/"), str(home.resolve()).rstrip("/")}
    return sorted((h for h in forms if h and h != "/"), key=len, reverse=True)


def scrub_home(text: str) -> str:
    """Absolute paths under the user's home become ``~/...``: an exported file must not carry them, nor any other
    home folder's user name, Claude Code's encoded project folders included (``home_paths.tilde_homes``)."""
    for home in home_dirs():
        text = re.sub(re.escape(home) + r"(?=/|\b|$)", "~", text)
    return tilde_homes(text)


def tilde(path: Path) -> str:
    return scrub_home(str(path))


@dataclass
class ScopedMemory:
    """The memory one project may see: its task groups and the user-level preferences."""

    project: Path
    groups: list[TaskGroup]
    preferences: list[str]

    @property
    def empty(self) -> bool:
        return not self.groups and not self.preferences


def select_for_project(groups: list[TaskGroup], project: Path) -> ScopedMemory:
    own = [g for g in groups if g.cwd and inside(g.cwd, project)]
    prefs: list[str] = []
    for g in groups:
        for _, bullet in g.preference_bullets():
            if (g.is_global or GLOBAL_TAG in bullet) and bullet not in prefs:
                prefs.append(bullet)
    return ScopedMemory(project=project, groups=own, preferences=prefs)


def _mask_other_projects(text: str, others: list[str]) -> str:
    for other in sorted(others, key=len, reverse=True):
        text = re.sub(re.escape(other.rstrip("/")) + r"(?=/|\b|$)", "[another project]", text)
    return text


def scoped_text(groups: list[TaskGroup], project: Path) -> str | None:
    """The project's part of the memory as Markdown for an agent, with home paths scrubbed and other projects'
    paths masked; None when the memory holds nothing for this project."""
    scoped = select_for_project(groups, project)
    if scoped.empty:
        return None
    others = [g.cwd for g in groups if g.cwd and not inside(g.cwd, project) and not inside(str(project), Path(g.cwd))]
    parts = [f"Memory scoped to the project {tilde(project)}: its task groups and your user-level preferences."]
    if scoped.preferences:
        prefs = [
            _TASK_REF.sub("", p).rstrip() for p in scoped.preferences
        ]  # task numbers of other groups mean nothing here
        parts.append("## User-level preferences\n" + "\n".join(prefs))
    for g in scoped.groups:
        parts.append(f"<!-- MEMORY.md lines {g.line_start}-{g.line_end} -->\n{g.text}")
    return scrub_home(_mask_other_projects("\n\n".join(parts), [o for o in others if o])) + "\n"


def evidence_projects(groups: list[TaskGroup], bullet: str, memory_root: Path | None = None) -> set[str]:
    """The projects a bullet's evidence comes from: its ``[Task n]`` references (resolved to their group's cwd) and
    the cwd of any rollout summary file it names."""
    by_task = {t: g.cwd for g in groups for t in g.tasks if g.cwd}
    found = {by_task[n] for n in _TASK_REF.findall(bullet) if n in by_task}
    if memory_root is not None:
        for ref in _SUMMARY_REF.findall(bullet):
            try:
                head = (memory_root / ref).read_text(encoding="utf-8", errors="replace").splitlines()[:8]
            except OSError:
                continue
            found |= {line[4:].strip() for line in head if line.startswith("cwd: ")}
    return {f for f in found if f}
