"""Codex CLI as a transcript source: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`` (legacy and paginated
history) and ``archived_sessions/``, read by ``memtui.adapters.rollouts.codex``; Codex's own state database
(``codex_state``, read-only) decides the memory switch and archiving where it says more than the rollout, and its
``session_index.jsonl`` gives renamed threads their titles."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtui.adapters.rollouts import codex, codex_state, jsonl
from memtui.adapters.rollouts.codex_names import thread_names
from memtui.adapters.rollouts.discover import Found, discover_codex
from memtui.adapters.rollouts.filter import codex_items_at
from memtui.adapters.rollouts.model import FileResult, Thread
from memtui.adapters.sources.protocol import HookTarget, Instructions, McpTarget, ServerCommand
from memtui.core.paths import Paths

STARTUP_TIMEOUT_SEC = 60  # above Codex's 10 s default, which a busy machine's Python start-up can pass


def apply_state(thread: Thread, state: codex_state.StateRead) -> None:
    """Codex's own row for the thread decides its switches where it says more than the rollout: memory turned off
    there (the TUI's ``/memories`` writes only there) or archived there. The stricter of the two wins: a rollout's
    own opt-out (a second ``session_meta``) is never undone by a row that says less."""
    row = state.rows.get(thread.id)
    if row is None:
        return
    if row.source is not None:
        # Codex's claim query filters on the row's source (``INTERACTIVE_SESSION_SOURCES``), not the rollout's.
        source, detail, parent = codex.session_source(codex_state.parse_source(row.source), {})
        thread.session_source, thread.source_detail = source, detail
        thread.parent_thread_id = parent or thread.parent_thread_id
    if row.memory_mode != "enabled":
        thread.memory_mode = row.memory_mode
    if row.archived:
        thread.archived = True


def locate_in(state: codex_state.StateRead, codex_paths: list[str]) -> codex_state.Locate:
    """Where a thread's files are: the ones discovered in this run (by the id in their names), then Codex's
    ``rollout_path``."""
    among = codex_state.locate_among(codex_paths)

    def locate(thread_id: str) -> list[Path]:
        found = among(thread_id)
        row = state.rows.get(thread_id.lower())
        if row is not None and row.rollout_path and Path(row.rollout_path) not in found:
            found.append(Path(row.rollout_path))
        return found

    return locate


@dataclass
class CodexRun:
    """One ingest's Codex state: its thread rows, read once, and where history bases are."""

    codex_home: Path
    state: codex_state.StateRead
    locate: codex_state.Locate
    warnings: list[str] = field(default_factory=list)

    def index(self, found: Found, data: bytes, now: int) -> FileResult:
        result = codex.index_file(
            Path(found.path),
            data,
            size=found.size,
            mtime_ns=found.mtime_ns,
            archived=found.archived,
            now=now,
            locate=self.locate,
        )
        if result.thread is not None:
            apply_state(result.thread, self.state)
        return result

    def changed(self, thread_id: str | None, memory_mode: str | None, archived: bool) -> bool:
        """An unchanged file whose thread Codex's state now judges otherwise than the stored row (a switch flipped
        without a new line): read again, so the row follows."""
        row = self.state.rows.get(thread_id) if thread_id else None
        if row is None or memory_mode is None:
            return False
        disabled_now = row.memory_mode != "enabled"
        return disabled_now != (memory_mode != "enabled") or (bool(row.archived) and not archived)

    def titles(self) -> dict[str, str]:
        """The state database's ``name`` (what ``/rename`` sets), ``session_index.jsonl``'s entry winning."""
        named = {tid: row.name for tid, row in self.state.rows.items() if row.name}
        return {**named, **thread_names(self.codex_home)}

    def read_again(self, reasons: dict[str, str]) -> list[str]:
        """Forks read while their history base was missing whose base can be found now (its file arrived later,
        or was restored): read again, so their preview and Phase 1 input gain the inherited turns."""
        again = []
        for path, reason in reasons.items():
            m = codex_state.MISSING_BASE_ID.search(reason)
            if m is not None and any(str(p) != path for p in self.locate(m.group(1))):
                again.append(path)
        return again


class CodexSource:
    kind = "codex"
    label = "Codex"

    def discover(self, paths: Paths) -> Iterator[Found]:
        return discover_codex(paths)

    def roots(self, paths: Paths) -> list[Path]:
        return [p for p in (paths.codex_sessions, paths.codex_archived) if p.is_dir()]

    def load(self, path: Path) -> tuple[bytes, str | None]:
        return jsonl.read_bytes(path)

    def begin(self, paths: Paths, found: Sequence[Found]) -> CodexRun:
        state = codex_state.read_state(paths.codex_home)
        run = CodexRun(paths.codex_home, state, locate_in(state, [f.path for f in found]))
        if state.warning:
            run.warnings.append(state.warning)
        return run

    def items(self, path: Path | None, data: bytes) -> list[dict[str, Any]]:
        return codex_items_at(path, data)

    def memory_off(self, path: Path, data: bytes, thread_id: str) -> bool:
        """A thread whose memory the person turned off since it was indexed: the file grew by a ``session_meta``
        saying so, or Codex's state database says so now."""
        return codex.memory_mode_of(data, thread_id) != "enabled" or codex_state.memory_off_now(path, thread_id)

    def instructions(self, paths: Paths) -> Instructions:
        return Instructions(user=paths.codex_home / "AGENTS.md", project="AGENTS.md")

    def mcp(self, paths: Paths) -> McpTarget:
        return McpTarget(paths.codex_home / "config.toml", "toml", ("mcp_servers",), _mcp_entry)

    def hooks(self, paths: Paths) -> HookTarget:
        return HookTarget(paths.codex_home / "hooks.json", "SessionEnd")


def _mcp_entry(server: ServerCommand) -> dict[str, Any]:
    return {
        "command": server.command,
        "args": server.args,
        "env": server.env,
        "startup_timeout_sec": STARTUP_TIMEOUT_SEC,
    }


SOURCE = CodexSource()
