"""What ``memtui mcp`` shows when it is scoped to one project: the same memory ``memtui export --project`` gives.

A scoped server serves the project's task groups and the user-level (global) groups of MEMORY.md, the rollout
summaries and search hits of threads in the project, and the project's read-path block. ``raw_memories.md`` and
``memory_summary.md`` span every project and are refused; other projects' lines of MEMORY.md read as blank lines
(line numbers stay true for citations) and are counted in ``hidden_lines``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from memtui.adapters.memroot.approved import approved
from memtui.domain.scope import TaskGroup, inside, parse_memory

ALL_PROJECTS_FILES = ("raw_memories.md", "memory_summary.md")
ROLLOUT_SUMMARIES = "rollout_summaries/"


class OutOfScope(ValueError):
    """A file or argument this project's server does not serve."""


@dataclass(frozen=True)
class McpScope:
    project: Path
    why: str  # "--project DIR" or "the client's root file:///..."

    def visible_lines(self, groups: list[TaskGroup]) -> set[int] | None:
        """Line numbers of MEMORY.md this project may read."""
        lines: set[int] = set()
        for g in groups:
            if g.is_global or (g.cwd and inside(g.cwd, self.project)):
                lines.update(range(g.line_start, g.line_end + 1))
        return lines

    def check_file(self, memory_root: Path, rel: str) -> None:
        """Raise ``OutOfScope`` unless the file belongs to this project's memory."""
        if rel in ALL_PROJECTS_FILES:
            raise OutOfScope(
                f"{rel} spans every project and this server is scoped to {self.project}; read MEMORY.md or the "
                "memtui://read-path resource"
            )
        if rel == "MEMORY.md":
            return
        if rel.startswith(ROLLOUT_SUMMARIES):
            cwd = summary_cwd(memory_root, rel)
            if cwd and inside(cwd, self.project):
                return
            raise OutOfScope(f"{rel} is another project's rollout summary (this server is scoped to {self.project})")
        raise OutOfScope(f"{rel} is not part of {self.project}'s memory")

    def hide_other_projects(self, memory_root: Path, rel: str, lines: list[str], start: int) -> tuple[list[str], int]:
        """``lines`` (numbered from ``start``) with other projects' MEMORY.md lines blanked, and how many were."""
        if rel != "MEMORY.md":
            return lines, 0
        visible = self.visible_lines(parse_memory(approved(memory_root).read_text("MEMORY.md") or "")) or set()
        out, hidden = [], 0
        for n, line in enumerate(lines, start):
            if n in visible:
                out.append(line)
            else:
                out.append("")
                hidden += bool(line.strip())
        return out, hidden

    def keeps_hit(self, kind: str, source: str, project: str) -> bool:
        """A search hit this project may see: its own threads and MEMORY.md lines (global groups included)."""
        if kind == "memory":
            return source == "MEMORY.md" and (not project or inside(project, self.project))
        return bool(project) and inside(project, self.project)


def summary_cwd(memory_root: Path, rel: str) -> str | None:
    """The ``cwd:`` a rollout summary records, read from the approved memory (the bytes the server serves)."""
    text = approved(memory_root).read_text(rel) or ""
    return next((line[4:].strip() for line in text.splitlines()[:8] if line.startswith("cwd: ")), None)


def root_directory(uri: str) -> Path | None:
    """The folder of an MCP root (``file://`` URIs only)."""
    parsed = urlparse(str(uri))
    return Path(unquote(parsed.path)) if parsed.scheme == "file" and parsed.path else None
