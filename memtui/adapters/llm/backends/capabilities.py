"""What the installed agent CLIs can do, asked once per CLI and version: ``--version``, then its ``--help`` text.

memtui's own calls must stay out of the user's way and out of the user's setup (``cleanroom``): no ``notify``
program fired (``codex exec -c notify=[]``, and a private CODEX_HOME), none of the user's CLAUDE.md, settings, hooks
or auto memory (``claude -p --safe-mode --setting-sources "" --settings {...}``), exactly the documented tools
(``--tools ""`` for an extraction, ``--tools Read,Edit,Write,Glob,Grep`` for the agent), none of the user's MCP
servers (``--strict-mcp-config``), no transcript (``--no-session-persistence``). Each flag is used only when the
CLI's own help lists it, and ``memtui config`` says which are used and why (``describe``).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from memtui.adapters.llm.backends.cli_common import probe

_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")


@dataclass(frozen=True)
class CliCaps:
    command: str
    path: str | None
    version: str | None
    flags: frozenset[str]  # the long options the CLI's help lists

    def has(self, flag: str) -> bool:
        return flag in self.flags


_CACHE: dict[tuple[str, str | None, str | None], CliCaps] = {}


def detect(command: str, help_argv: tuple[str, ...] = ("--help",)) -> CliCaps:
    """The CLI's version and help-listed flags; asked once per (path, version) in a process."""
    path = shutil.which(command, path=os.environ.get("PATH"))
    if path is None:
        return CliCaps(command, None, None, frozenset())
    done = probe([command, "--version"])
    said = (done.stdout + done.stderr) if done is not None else ""
    m = _VERSION.search(said)
    version = m.group(0) if m else None
    key = (path, version, " ".join(help_argv))
    if key not in _CACHE:
        helped = probe([command, *help_argv])
        text = (helped.stdout + helped.stderr) if helped is not None else ""
        _CACHE[key] = CliCaps(command, path, version, frozenset(re.findall(r"--[a-z][a-z0-9-]+", text)))
    return _CACHE[key]


def forget() -> None:
    _CACHE.clear()


def codex_quiet_args(caps: CliCaps) -> list[str]:
    """``-c notify=[]``: the user's notify program (run after every turn) is not fired by memtui's calls."""
    return ["-c", "notify=[]"] if caps.has("--config") or caps.has("-c") or not caps.flags else []


# The consolidation agent's tools (docs/models.md): read and edit files in its work copy, nothing else.
AGENT_TOOLS = "Read,Edit,Write,Glob,Grep"


def claude_quiet_args(caps: CliCaps, *, tool_less: bool, settings: str | None = None) -> list[str]:
    """Exactly the documented tools (none for an extraction), none of the user's CLAUDE.md, settings files, hooks or
    MCP servers, memtui's own ``settings`` JSON (``cleanroom.claude_settings``), and no transcript, where the CLI
    has them."""
    out: list[str] = []
    if caps.has("--tools"):
        out += ["--tools", "" if tool_less else AGENT_TOOLS]
    if caps.has("--safe-mode"):
        out.append("--safe-mode")
    if caps.has("--setting-sources"):
        out += ["--setting-sources", ""]
    if settings is not None and caps.has("--settings"):
        out += ["--settings", settings]
    if not tool_less and caps.has("--permission-prompts"):
        out += ["--permission-prompts", "none"]
    if caps.has("--strict-mcp-config"):
        out.append("--strict-mcp-config")
    if caps.has("--no-session-persistence"):
        out.append("--no-session-persistence")
    return out


def describe(command: str) -> str:
    """One line for ``memtui config``: the CLI, its version, and the flags memtui's calls use and why."""
    if command == "codex":
        caps = detect("codex", ("exec", "--help"))
        if caps.path is None:
            return "codex: not on PATH"
        quiet = codex_quiet_args(caps)
        used = [
            "a private CODEX_HOME (none of your AGENTS.md, memories, hooks or MCP servers; your provider and login)"
        ]
        used.append("-c notify=[] (your notify program is not run for memtui's calls)" if quiet else "no -c")
        return f"codex {caps.version or '(version unknown)'} at {caps.path}: " + "; ".join(used)
    caps = detect("claude")
    if caps.path is None:
        return "claude: not on PATH"
    flags = claude_quiet_args(caps, tool_less=True, settings="{}")
    why = {
        "--tools": f'--tools "" / {AGENT_TOOLS} (extraction gets no tools, the agent exactly these)',
        "--safe-mode": "--safe-mode (none of your CLAUDE.md, skills, plugins or hooks)",
        "--setting-sources": '--setting-sources "" (none of your settings files)',
        "--settings": "--settings (hooks and auto memory off; writes outside the work copy denied)",
        "--strict-mcp-config": "--strict-mcp-config (none of your MCP servers)",
        "--no-session-persistence": "--no-session-persistence (no transcript of memtui's calls)",
    }
    used = [why[f] for f in flags if f in why]
    missing = [f for f in why if f not in flags]
    tail = f"; not in this claude: {', '.join(missing)} (a deny-list of tools instead)" if missing else ""
    return (
        f"claude {caps.version or '(version unknown)'} at {caps.path}: " + ("; ".join(used) or "no quiet flags") + tail
    )
