"""The one agent-facing view: every byte an agent can read from memtui passes through here.

Export files (the prompt block, AGENTS.md / CLAUDE.md sections), every MCP tool and resource, the search index of
memory, citation checks and the published folder agents ``rg`` are all built from ``AgentView``:

- the approved baseline only (never the working tree, a run awaiting review, or a stage-1 output);
- only the files agents read (``readable``): MEMORY.md, memory_summary.md, raw_memories.md, rollout summaries and
  Markdown skills; never tombstones.md (a person's deletions), the diff file, or anything else;
- trust applied once: a tool-only or flagged statement no person approved becomes a placeholder line (so line
  numbers, and the citations that use them, stay the file's), unless ``export_tool_statements`` lets them through;
- hidden characters removed (writing such as a Persian ZWNJ or an emoji ZWJ stays: ``core.hidden``);
- paths confined: relative to the memory root, no ``..`` or symlink out, no ``.git``; anything else is "not in the
  approved memory" without being read;
- for a project-scoped reader (``Scope``), other projects' lines of MEMORY.md read as blank lines and files that
  span every project, or belong to another, are refused.

``tests/test_agent_view_coverage.py`` enumerates every MCP tool and resource and every export path from the code and
drives them with planted pending, untrusted, hidden, out-of-scope and outside-the-root text: any byte of it reaching
an agent fails the test, naming the surface.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from memtui.adapters.memroot import approved as approved_files
from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import Approved, approved
from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY, RAW_MEMORIES, ROLLOUT_SUMMARIES
from memtui.domain.scope import TaskGroup, inside, parse_memory, scoped_text
from memtui.domain.trust.export import LEFT_OUT, trusted_text
from memtui.state import search_index

SKILLS = "skills"
ALL_PROJECTS_FILES = (RAW_MEMORIES, MEMORY_SUMMARY)  # span every project: a scoped reader is refused them


class PathRefused(ValueError):
    """A path outside the agent-readable memory (absolute, '..', a symlink out, .git)."""


class NotInView(FileNotFoundError):
    """A path of no file agents read in the approved memory."""


class OutOfScope(ValueError):
    """A file or argument this project's reader is not served."""


def readable(rel: str) -> bool:
    """Whether agents read ``rel`` (posix, relative to the memory root) at all."""
    parts = PurePosixPath(rel).parts
    if not parts or any(p.startswith(".") for p in parts) or not rel.endswith(".md"):
        return False
    if len(parts) == 1:
        return rel in (MEMORY_MD, MEMORY_SUMMARY, RAW_MEMORIES)
    return parts[0] in (ROLLOUT_SUMMARIES, SKILLS)


def confine(memory_root: Path, raw: str) -> str:
    """The posix path of ``raw`` relative to the memory root, or ``PathRefused``. Nothing is read: the path is
    resolved (symlinks and '..' followed) and checked against the resolved root, as the consolidation agent's tools
    do, so an absolute path or an escape is refused before any file outside is touched."""
    if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
        raise PathRefused("path must be a non-empty path relative to the memory root")
    text = raw.strip().replace("\\", "/")
    if text.startswith(("/", "~")) or os.path.isabs(text):
        raise PathRefused(f"{raw!r}: absolute paths are refused; give a path relative to the memory root")
    root = memory_root.resolve()
    target = (root / text).resolve()
    if not target.is_relative_to(root):
        raise PathRefused(f"{raw!r}: resolves outside the memory root")
    rel = target.relative_to(root)
    if rel.parts and rel.parts[0].lower() == ".git":
        raise PathRefused(f"{raw!r}: the .git folder is private to memtui")
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


@dataclass(frozen=True)
class Scope:
    """A reader confined to one project: the memory ``memtui export --project`` gives."""

    project: Path
    why: str  # "--project DIR" or "the client's root file:///..."

    def visible_lines(self, groups: list[TaskGroup]) -> set[int]:
        """Line numbers of MEMORY.md this project may read: its own task groups and the user-level ones."""
        lines: set[int] = set()
        for g in groups:
            if g.is_global or (g.cwd and inside(g.cwd, self.project)):
                lines.update(range(g.line_start, g.line_end + 1))
        return lines

    def check_file(self, rel: str, summary_cwd: str | None) -> None:
        """Raise ``OutOfScope`` unless the file belongs to this project's memory."""
        if rel in ALL_PROJECTS_FILES:
            raise OutOfScope(
                f"{rel} spans every project and this reader is scoped to {self.project}; read MEMORY.md or the "
                "memtui://read-path resource"
            )
        if rel == MEMORY_MD:
            return
        if rel.startswith(f"{ROLLOUT_SUMMARIES}/"):
            if summary_cwd and inside(summary_cwd, self.project):
                return
            raise OutOfScope(f"{rel} is another project's rollout summary (this reader is scoped to {self.project})")
        raise OutOfScope(f"{rel} is not part of {self.project}'s memory")

    def keeps_project(self, project: str) -> bool:
        return bool(project) and inside(project, self.project)


@dataclass(frozen=True)
class ViewFile:
    """One file as agents read it: its lines numbered as the file numbers them."""

    rel: str
    lines: list[str]
    left_out: int = 0  # untrusted statements shown as the placeholder
    hidden_removed: int = 0
    blanked_lines: frozenset[int] = frozenset()  # other projects' non-blank lines a scoped reader sees as blank

    @property
    def blanked(self) -> int:
        return len(self.blanked_lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class AgentView:
    """What agents may read of one memory root, pinned to one baseline commit."""

    memory_root: Path
    include_untrusted: bool = False
    scope: Scope | None = None
    conn: sqlite3.Connection | None = None  # when given: a forgotten or opted-out session's summary is withheld
    _files: dict[str, ViewFile] = field(default_factory=dict, repr=False)

    @cached_property
    def snapshot(self) -> Approved:
        return approved(self.memory_root)

    @property
    def commit(self) -> str | None:
        return self.snapshot.commit

    @cached_property
    def withheld(self) -> frozenset[str]:
        """Rollout summaries agents may no longer read though the baseline still holds them (their session was
        forgotten, or memory turned off for it): gone from the view at once, from the baseline with the next
        approved run."""
        if self.conn is None:
            return frozenset()
        by_thread: dict[str, str] = {}
        for rel in self.snapshot.files:
            if (
                rel.startswith(f"{ROLLOUT_SUMMARIES}/")
                and readable(rel)
                and (tid := self._summary_header(rel, "thread_id"))
            ):
                by_thread[tid] = rel
        gone = search_index.withheld_threads(self.conn, by_thread)
        return frozenset(by_thread[t] for t in gone)

    def names(self) -> list[str]:
        """Every file this reader may read, sorted."""
        out = []
        for rel in sorted(self.snapshot.files):
            if not readable(rel) or rel in self.withheld:
                continue
            if self.scope is not None:
                try:
                    self.scope.check_file(rel, self._summary_cwd(rel))
                except OutOfScope:
                    continue
            out.append(rel)
        return out

    def resolve(self, raw: str) -> str:
        """``raw`` as a path of this view, or ``PathRefused`` / ``NotInView`` / ``OutOfScope`` (nothing read)."""
        rel = confine(self.memory_root, raw)
        if not readable(rel) or not self.snapshot.is_file(rel) or rel in self.withheld:
            raise NotInView(f"{raw!r} is not a file of the approved memory agents read")
        if self.scope is not None:
            self.scope.check_file(rel, self._summary_cwd(rel))
        return rel

    def file(self, raw: str) -> ViewFile:
        """The file at ``raw`` as this reader sees it (see ``resolve`` for what is refused)."""
        rel = self.resolve(raw)
        if rel not in self._files:
            self._files[rel] = self._render(rel)
        return self._files[rel]

    def text(self, raw: str, *, placeholders: bool = True) -> str:
        """The file's text; ``placeholders=False`` drops left-out statements instead (a block shown inline, where
        no line number is cited)."""
        lines = self.file(raw).lines
        return "\n".join(lines if placeholders else [line for line in lines if line != LEFT_OUT])

    def project_memory(self, project: Path) -> str | None:
        """MEMORY.md for one project (its task groups and the user-level ones, ``scoped_text``) as agents read it:
        chosen by the approved file's structure, then trust applied; None when it holds nothing for the project."""
        data = self.snapshot.read_text(MEMORY_MD)
        if data is None:
            return None
        text = scoped_text(parse_memory(data), project)
        return None if text is None else trusted_text(text, include_untrusted=self.include_untrusted).text

    def visible_line(self, rel: str, line: int) -> bool:
        """Whether line ``line`` of ``rel`` holds text this reader may see (a search hit on it may be shown)."""
        try:
            lines = self.file(rel).lines
        except (NotInView, OutOfScope, PathRefused):
            return False
        return 1 <= line <= len(lines) and bool(lines[line - 1].strip())

    def _summary_cwd(self, rel: str) -> str | None:
        return self._summary_header(rel, "cwd") if rel.startswith(f"{ROLLOUT_SUMMARIES}/") else None

    def _summary_header(self, rel: str, key: str) -> str | None:
        """A ``key: value`` line of a rollout summary's header (memtui writes thread_id, cwd, ... first)."""
        text = self.snapshot.read_text(rel) or ""
        prefix = f"{key}: "
        return next((line[len(prefix) :].strip() for line in text.splitlines()[:8] if line.startswith(prefix)), None)

    def _render(self, rel: str) -> ViewFile:
        data = self.snapshot.read_text(rel) or ""
        trusted = trusted_text(data, include_untrusted=self.include_untrusted, keep_lines=True)
        lines = trusted.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        blanked: set[int] = set()
        if self.scope is not None and rel == MEMORY_MD:
            visible = self.scope.visible_lines(parse_memory(data))
            kept = []
            for n, line in enumerate(lines, 1):
                if n in visible:
                    kept.append(line)
                else:
                    kept.append("")
                    if line.strip():
                        blanked.add(n)
            lines = kept
        return ViewFile(rel, lines, trusted.left_out, trusted.hidden_removed, frozenset(blanked))


def _renderer(conn: sqlite3.Connection | None) -> approved_files.Render:
    views: dict[str | None, AgentView] = {}  # one view per published commit: its withheld set is read once

    def render(snapshot: Approved, rel: str) -> bytes | None:
        """What the published folder holds for ``rel``: the unscoped, strict view (None: agents do not read it)."""
        view = views.get(snapshot.commit)
        if view is None:
            view = views[snapshot.commit] = AgentView(snapshot.root, conn=conn)
            view.__dict__["snapshot"] = snapshot  # the commit being published, not a newer one
        try:
            return (view.file(rel).text + "\n").encode("utf-8")
        except (NotInView, PathRefused):
            return None

    return render


def published(memory_root: Path) -> Path:
    """The folder agents are told to open and ``rg``: the view of the baseline, brought up to date first."""
    return approved_files.published(memory_root, _renderer(None))


def publish(memory_root: Path, conn: sqlite3.Connection | None = None) -> Path:
    """Publish the view of the baseline (``conn``: withholding forgotten and opted-out sessions' summaries, which
    makes a new copy even of the same commit)."""
    withheld = AgentView(memory_root, conn=conn).withheld if conn is not None else frozenset()
    variant = hashlib.sha256("\n".join(sorted(withheld)).encode()).hexdigest()[:12] if withheld else ""
    return approved_files.publish(memory_root, _renderer(conn), variant=variant)


baseline.after_move(publish)  # the baseline moved: the published view follows at once
