"""Gemini CLI as a transcript source: ``<gemini home>/.gemini/tmp/<project>/chats/session-*.jsonl`` (and the legacy
``session-*.json``), a sub-agent's under ``chats/<parent session id>/<id>.jsonl``, read by ``session``.

The home is the one Gemini CLI resolves (packages/core/src/utils/paths.ts ``homedir``): ``$GEMINI_CLI_HOME``, else
the user's home; its runtime folder is ``.gemini`` there (``~/.cache/.gemini`` under macOS's ``sandbox-exec``, also
read). ``<project>`` is the short slug Gemini CLI's ``ProjectRegistry`` gave the folder (``projects.json``, the
``.project_root`` marker) or, before 0.2x, the folder's sha256; the header's ``projectHash`` is always that sha256.

Opt-outs: Gemini CLI has no per-session memory or recording switch to honour (0.61: the chat is always recorded;
``general.sessionRetention``, on by default at 30 days, deletes old sessions at the next start). A session it
deletes is marked missing by ingest and what was extracted from it stays, with its evidence; memtui's ``forget`` is
the person's opt-out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.rollouts import jsonl
from memtui.adapters.rollouts.discover import Found
from memtui.adapters.rollouts.model import FileResult
from memtui.adapters.sources.gemini import session
from memtui.adapters.sources.protocol import HookTarget, Instructions, McpTarget, ServerCommand, SimpleRun
from memtui.core.paths import Paths

GEMINI_DIR = ".gemini"
CONTEXT_FILE = "GEMINI.md"  # Gemini CLI's default context file name
MCP_TIMEOUT_MS = 60_000  # Gemini CLI's ``timeout`` is in milliseconds; a busy machine's Python start-up can be slow


def gemini_home() -> Path:
    """The folder Gemini CLI puts ``.gemini`` in: ``$GEMINI_CLI_HOME``, else the user's home."""
    env = os.environ.get("GEMINI_CLI_HOME")
    return Path(env) if env else Path.home()


def gemini_dir() -> Path:
    return gemini_home() / GEMINI_DIR


def context_file_name() -> str:
    """The context file Gemini CLI loads (the per-user one in ~/.gemini and the project's): ``context.fileName`` in
    ~/.gemini/settings.json (a name or a list, the first is written), else GEMINI.md. A settings file memtui cannot
    read as plain JSON (Gemini CLI allows comments) leaves the default."""
    try:
        settings = orjson.loads((gemini_dir() / "settings.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return CONTEXT_FILE
    context = settings.get("context") if isinstance(settings, dict) else None
    name = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(name, list):
        name = next((n for n in name if isinstance(n, str) and n.strip()), None)
    return name.strip() if isinstance(name, str) and name.strip() and "/" not in name else CONTEXT_FILE


def _tmp_roots() -> list[Path]:
    home = gemini_home()
    return [home / GEMINI_DIR / "tmp", home / ".cache" / GEMINI_DIR / "tmp"]


def _is_session_name(name: str, nested: bool) -> bool:
    if nested:
        return name.endswith(".jsonl")  # a sub-agent's file is named after its session id
    return name.startswith("session-") and (name.endswith(".jsonl") or name.endswith(".json"))


def _stat(path: str) -> Found | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Found(path, session.KIND, st.st_size, st.st_mtime_ns, False)


def _scan(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def discover_gemini() -> Iterator[Found]:
    """``tmp/<project>/chats/session-*`` and ``tmp/<project>/chats/<parent>/<id>.jsonl``, one ``stat`` each."""
    for root in _tmp_roots():
        for project in _scan(str(root)):
            if not project.is_dir(follow_symlinks=False):
                continue
            for entry in _scan(os.path.join(project.path, "chats")):
                if entry.is_dir(follow_symlinks=False):
                    for sub in _scan(entry.path):
                        if sub.is_file() and _is_session_name(sub.name, True) and (f := _stat(sub.path)):
                            yield f
                elif entry.is_file() and _is_session_name(entry.name, False) and (f := _stat(entry.path)):
                    yield f


def _index(found: Found, data: bytes, now: int) -> FileResult:
    return session.index_file(
        Path(found.path), data, size=found.size, mtime_ns=found.mtime_ns, now=now, gemini_dir=gemini_dir()
    )


class GeminiSource:
    kind = session.KIND
    label = "Gemini CLI"

    def discover(self, paths: Paths) -> Iterator[Found]:
        return discover_gemini()

    def roots(self, paths: Paths) -> list[Path]:
        return [p for p in _tmp_roots() if p.is_dir()]

    def load(self, path: Path) -> tuple[bytes, str | None]:
        return jsonl.read_bytes(path)

    def begin(self, paths: Paths, found: Sequence[Found]) -> SimpleRun:
        return SimpleRun(_index)

    def items(self, path: Path | None, data: bytes) -> list[dict[str, Any]]:
        sub = path is not None and session.parent_session(path) is not None
        return session.items(data, subagent=True if sub else None)

    def memory_off(self, path: Path, data: bytes, thread_id: str) -> bool:
        return False  # Gemini CLI has no per-session memory switch (see the module docstring)

    def instructions(self, paths: Paths) -> Instructions:
        name = context_file_name()
        return Instructions(user=gemini_dir() / name, project=name)

    def mcp(self, paths: Paths) -> McpTarget:
        return McpTarget(gemini_dir() / "settings.json", "json", ("mcpServers",), _mcp_entry)

    def hooks(self, paths: Paths) -> HookTarget:
        return HookTarget(gemini_dir() / "settings.json", "SessionEnd")


def _mcp_entry(server: ServerCommand) -> dict[str, Any]:
    """An ``mcpServers`` entry as Gemini CLI reads it (``MCPServerConfig``: command, args, env, timeout in ms).
    ``trust``: Gemini CLI asks before a server's tool runs, and ``gemini -p`` (which cannot ask) leaves such tools
    out of the model's request altogether (0.61); memtui's tools only read, so its own server is trusted."""
    return {"command": server.command, "args": server.args, "env": server.env, "timeout": MCP_TIMEOUT_MS, "trust": True}


SOURCE = GeminiSource()
