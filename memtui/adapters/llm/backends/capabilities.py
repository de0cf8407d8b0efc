"""What the installed agent CLIs can do, asked once per CLI and version: ``--version``, then its ``--help`` text.

memtui's own calls must stay out of the user's way: no ``notify`` program fired (``codex exec -c notify=[]``), no
tools and none of the user's MCP servers for an extraction (``claude -p --tools "" --strict-mcp-config``), no
transcript written (``codex exec --ephemeral``, ``claude -p --no-session-persistence``). Each flag is used only
when the CLI's own help lists it, and ``memtui config`` says which are used and why (``describe``).
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


def claude_quiet_args(caps: CliCaps, *, tool_less: bool) -> list[str]:
    """No tools at all (extraction), none of the user's MCP servers, and no transcript, where the CLI has them."""
    out: list[str] = []
    if tool_less and caps.has("--tools"):
        out += ["--tools", ""]
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
        used = ["--ephemeral (no session file)" if caps.has("--ephemeral") else "no --ephemeral in this codex"]
        used.append("-c notify=[] (your notify program is not run for memtui's calls)" if quiet else "no -c")
        return f"codex {caps.version or '(version unknown)'} at {caps.path}: " + "; ".join(used)
    caps = detect("claude")
    if caps.path is None:
        return "claude: not on PATH"
    flags = claude_quiet_args(caps, tool_less=True)
    why = {
        "--tools": '--tools "" (extraction gets no tools at all)',
        "--strict-mcp-config": "--strict-mcp-config (none of your MCP servers)",
        "--no-session-persistence": "--no-session-persistence (no transcript of memtui's calls)",
    }
    used = [why[f] for f in flags if f in why]
    missing = [f for f in why if f not in flags]
    tail = f"; not in this claude: {', '.join(missing)} (a deny-list of tools instead)" if missing else ""
    return (
        f"claude {caps.version or '(version unknown)'} at {caps.path}: " + ("; ".join(used) or "no quiet flags") + tail
    )
