"""What ``memtui mcp`` shows when it is scoped to one project: the same memory ``memtui export --project`` gives.

A scoped server serves the project's task groups and the user-level (global) groups of MEMORY.md, the rollout
summaries and search hits of threads in the project, and the project's read-path block. ``raw_memories.md`` and
``memory_summary.md`` span every project and are refused; other projects' lines of MEMORY.md read as blank lines
(line numbers stay true for citations) and are counted in ``hidden_lines``. The rules are the agent-facing view's
(``memtui.services.agent_view.Scope``); this module only finds the project a client's roots name.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from memtui.services.agent_view import AgentView, OutOfScope, Scope

McpScope = Scope
__all__ = ["AgentView", "McpScope", "OutOfScope", "root_directory"]


def root_directory(uri: str) -> Path | None:
    """The folder of an MCP root (``file://`` URIs only)."""
    parsed = urlparse(str(uri))
    return Path(unquote(parsed.path)) if parsed.scheme == "file" and parsed.path else None
