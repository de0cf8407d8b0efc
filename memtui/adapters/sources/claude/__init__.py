"""Claude Code as a transcript source: ``$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl`` and its sub-agents'
``<session>/subagents/*.jsonl``, read by ``memtui.adapters.rollouts.claude`` (the conversation that stands,
``claude_tree``; spilled tool output followed). Claude Code's MCP servers are written by its own CLI
(``claude mcp add-json``), which ``memtui.hooks.mcp_register`` drives."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memtui.adapters.rollouts import claude, jsonl
from memtui.adapters.rollouts.discover import Found, discover_claude
from memtui.adapters.rollouts.filter import claude_items
from memtui.adapters.rollouts.model import FileResult
from memtui.adapters.sources.protocol import HookTarget, Instructions, McpTarget, ServerCommand, SimpleRun
from memtui.core.paths import Paths


def _index(found: Found, data: bytes, now: int) -> FileResult:
    return claude.index_file(Path(found.path), data, size=found.size, mtime_ns=found.mtime_ns, now=now)


class ClaudeSource:
    kind = "claude"
    label = "Claude Code"

    def discover(self, paths: Paths) -> Iterator[Found]:
        return discover_claude(paths)

    def roots(self, paths: Paths) -> list[Path]:
        return [p for p in (paths.claude_projects,) if p.is_dir()]

    def load(self, path: Path) -> tuple[bytes, str | None]:
        return jsonl.read_bytes(path)

    def begin(self, paths: Paths, found: Sequence[Found]) -> SimpleRun:
        return SimpleRun(_index)

    def items(self, path: Path | None, data: bytes) -> list[dict[str, Any]]:
        return claude_items(data, path)

    def memory_off(self, path: Path, data: bytes, thread_id: str) -> bool:
        return False  # Claude Code has no per-session memory switch; memtui's forget is the opt-out

    def instructions(self, paths: Paths) -> Instructions:
        return Instructions(user=paths.claude_dir / "CLAUDE.md", project="CLAUDE.md")

    def mcp(self, paths: Paths) -> McpTarget:
        return McpTarget(paths.claude_dir / ".claude.json", "agent_cli", ("mcpServers",), _mcp_entry)

    def hooks(self, paths: Paths) -> HookTarget:
        return HookTarget(paths.claude_dir / "settings.json", "SessionEnd")


def _mcp_entry(server: ServerCommand) -> dict[str, Any]:
    return {"type": "stdio", "command": server.command, "args": server.args, "env": server.env}


SOURCE = ClaudeSource()
