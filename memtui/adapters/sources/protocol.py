"""What memtui needs from a coding agent whose sessions it reads: the transcript-source protocol.

One agent is one package under ``memtui/adapters/sources/<agent>/`` exposing ``SOURCE``, an object with every part
below; ``memtui.adapters.sources.registry`` finds the packages and refuses an object that lacks a part. Nothing else
in memtui names an agent's format: ingest, Phase 1, search and the detail screen ask the registry for the source of a
thread's ``source_kind``; ``memtui mcp install`` and the exports read the declarative parts (``mcp``,
``instructions``, ``hooks``), whose writers live with the entry points (``memtui.hooks.mcp_register``).

Eligibility is judged by the source when it indexes a session: it sets ``session_source`` (``cli``/``vscode`` are
a person at the agent; ``subagent``, ``exec``... are not, whatever the agent calls them), ``memory_mode`` (the
agent's own opt-out) and ``archived``; ``memory_off`` says at extraction time whether the opt-out was turned on
since. Phase 1 takes exactly the indexed sessions that are interactive, enabled, not archived and not forgotten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from memtui.adapters.rollouts.discover import Found
from memtui.adapters.rollouts.model import FileResult
from memtui.core.paths import Paths


class IngestRun(Protocol):
    """One ingest's view of one source: what it read once for the whole run (an agent's own state database)."""

    warnings: list[str]  # said once per run (the agent's state unreadable...)

    def index(self, found: Found, data: bytes, now: int) -> FileResult:
        """The index row of one session, or the reason it has none."""
        ...

    def changed(self, thread_id: str | None, memory_mode: str | None, archived: bool) -> bool:
        """True when the agent now judges an unchanged session otherwise than its stored row (read it again)."""
        ...

    def titles(self) -> dict[str, str]:
        """Thread id -> the title the person gave it outside the session file (a rename), applied every run."""
        ...

    def read_again(self, reasons: dict[str, str]) -> list[str]:
        """Of the unchanged files with a stored ingest reason (path -> reason), those to read again now that what
        they missed can be found (a Codex fork whose history base has arrived)."""
        ...


@dataclass
class SimpleRun:
    """An ``IngestRun`` for a source with nothing to read once per run: ``index`` is the source's reader."""

    reader: Callable[[Found, bytes, int], FileResult]
    warnings: list[str] = field(default_factory=list)

    def index(self, found: Found, data: bytes, now: int) -> FileResult:
        return self.reader(found, data, now)

    def changed(self, thread_id: str | None, memory_mode: str | None, archived: bool) -> bool:
        return False

    def titles(self) -> dict[str, str]:
        return {}

    def read_again(self, reasons: dict[str, str]) -> list[str]:
        return []


@dataclass(frozen=True)
class Instructions:
    """The instruction files the agent loads at the start of a session, where memtui's export goes:
    ``user`` the per-user file (every project), ``project`` the file name it reads in a project folder."""

    user: Path
    project: str


@dataclass(frozen=True)
class ServerCommand:
    """memtui's MCP server as a command: what every agent's entry is made from."""

    command: str
    args: list[str]
    env: dict[str, str]


McpStyle = Literal["toml", "json", "agent_cli"]


@dataclass(frozen=True)
class McpTarget:
    """Where and how the agent is told about memtui's MCP server. ``toml``/``json``: memtui edits ``config`` (the
    agent's per-user file), setting ``key + (server name,)`` to ``entry(command)``; ``agent_cli``: the agent's own CLI
    writes its file (Claude Code), memtui only reads it."""

    config: Path
    style: McpStyle
    key: tuple[str, ...]
    entry: Callable[[ServerCommand], dict[str, Any]]


@dataclass(frozen=True)
class HookTarget:
    """The agent's own hook that keeps memory fresh when a session ends: ``event`` in ``config``."""

    config: Path
    event: str


class TranscriptSource(Protocol):
    """One coding agent's sessions on disk, as memtui reads them (every part is required; ``PARTS`` lists them)."""

    kind: str  # threads.source_kind: stable, lower case, never reused
    label: str  # what people call the agent ("Gemini CLI")

    def discover(self, paths: Paths) -> Iterator[Found]:
        """Every session the agent keeps, with one ``stat`` each (the incremental check needs nothing more)."""
        ...

    def roots(self, paths: Paths) -> list[Path]:
        """The folders that exist: a session under a missing root is not reported missing (an unmounted disk)."""
        ...

    def load(self, path: Path) -> tuple[bytes, str | None]:
        """A session's bytes (and a warning); raises ``jsonl.UnreadableFile`` or ``OSError``."""
        ...

    def begin(self, paths: Paths, found: Sequence[Found]) -> IngestRun:
        """Start one ingest over this source's ``found`` sessions."""
        ...

    def items(self, path: Path | None, data: bytes) -> list[dict[str, Any]]:
        """The memory items of a session (memtui's transcript): only the person's own words as ``user`` messages."""
        ...

    def memory_off(self, path: Path, data: bytes, thread_id: str) -> bool:
        """True when the agent's own opt-out now holds for the session (checked again at extraction time)."""
        ...

    def instructions(self, paths: Paths) -> Instructions:
        """The instruction files the agent loads (memtui's export targets)."""
        ...

    def mcp(self, paths: Paths) -> McpTarget:
        """Where memtui's MCP server is registered with the agent."""
        ...

    def hooks(self, paths: Paths) -> HookTarget | None:
        """The agent's session-end hook, or None when the agent has none memtui can use."""
        ...


PARTS: tuple[str, ...] = (
    "kind",
    "label",
    "discover",
    "roots",
    "load",
    "begin",
    "items",
    "memory_off",
    "instructions",
    "mcp",
    "hooks",
)
CALLABLE_PARTS = frozenset(PARTS) - {"kind", "label"}


def missing_parts(source: object) -> list[str]:
    """The parts of the protocol ``source`` lacks (a missing attribute, or one that is not callable/not text)."""
    missing = []
    for name in PARTS:
        value = getattr(source, name, None)
        if (
            value is None
            or (name in CALLABLE_PARTS and not callable(value))
            or (name not in CALLABLE_PARTS and (not isinstance(value, str) or not value))
        ):
            missing.append(name)
    return missing
