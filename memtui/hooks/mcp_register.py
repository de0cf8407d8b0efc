"""``memtui mcp install|uninstall|status``: register memtui's MCP server with Codex and Claude Code, serving the home
it must serve, in the agents' own per-user configuration (never a file a project shares).

The server is ``<this Python> -m memtui mcp`` with ``MEMTUI_HOME`` in its environment: an agent starts MCP servers
with its own environment, which rarely carries memtui's home, and a bare ``memtui`` may not be on the agent's PATH.

- Codex: ``[mcp_servers.memtui]`` in ``$CODEX_HOME/config.toml`` (``command``, ``args``, ``env``, and a
  ``startup_timeout_sec`` above Codex's 10 s default, which a busy machine's Python start-up can pass), written with
  tomlkit so the rest of the file keeps its formatting. Codex runs the tools without asking: they are annotated
  read-only.
- Gemini CLI: ``mcpServers.memtui`` in ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini``), where the
  Gemini source says (``memtui.adapters.sources.gemini``: ``SOURCE.mcp``), with its ``timeout`` in milliseconds
  and ``trust: true`` limited by ``includeTools`` to the three read-only tools (``gemini -p`` leaves out of the
  request every tool it would have to ask about); every other key is kept. Gemini CLI allows comments in that file: memtui refuses to rewrite a file that has them
  (the comments would be lost) and says what to add by hand.
- Claude Code: the server through its own CLI, ``claude mcp add-json -s user`` (or ``-s local`` for one project:
  that project's entry in the same per-machine file). Claude keeps that file (``~/.claude.json``, or
  ``$CLAUDE_CONFIG_DIR/.claude.json``) rewritten by every running session, so its CLI, not memtui, writes it; memtui
  only reads it. Claude asks before an MCP tool runs (and ``claude -p`` denies it) unless a permission rule allows it,
  so the three read-only tools get ``mcp__memtui__<tool>`` rules in ``$CLAUDE_CONFIG_DIR/settings.json``
  ``permissions.allow``. ``claude mcp add -s project`` would write this machine's paths into the shared
  ``.mcp.json``: memtui never uses that scope.

As with the hooks, the bytes of each file memtui edits are saved under ``$MEMTUI_HOME/hooks/`` before its first
change, and ``uninstall`` puts a file nobody changed since back byte for byte, else removes memtui's entry only; the
Claude registration memtui made is remembered and removed only while it is still the one memtui made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import tomlkit
from pydantic import BaseModel
from tomlkit.exceptions import TOMLKitError

from memtui.adapters.sources.protocol import McpTarget, ServerCommand
from memtui.core.paths import Paths
from memtui.core.private import make_private_dir, write_private_bytes
from memtui.hooks.install import (
    Agent,
    HookError,
    HookResult,
    forget_state,
    has_comments,
    parse_settings_json,
    read_bytes,
    render_settings_json,
    restore_if_unchanged,
    state_dir,
    write_keeping_mode,
    write_remembering,
)

SERVER = "memtui"  # the name agents know the server by (tests keep it equal to memtui.mcp.server.SERVER_NAME)
READ_ONLY_TOOLS = ("memory_search", "memory_read", "memory_cite")  # every tool the server has (a test checks)
CODEX_STARTUP_TIMEOUT_SEC = 60
CLAUDE_CLI_TIMEOUT = 120.0
ClaudeScope = Literal["user", "local"]
GEMINI_KIND = "gemini"  # the Gemini source's kind (memtui.adapters.sources.gemini)
MCP_AGENTS: tuple[Agent, ...] = ("claude", "codex", "gemini")  # the agents ``memtui mcp install`` registers with


class McpStatus(BaseModel):
    agent: Agent
    path: Path
    installed: bool
    detail: str


def not_installed(paths: Paths, agent: Agent) -> str | None:
    """Why ``agent`` looks absent from this machine (None: it is there): ``install`` without a choice skips it."""
    if agent == "gemini":
        folder = _gemini_target(paths).config.parent
        return None if shutil.which("gemini") or folder.exists() else f"no `gemini` on PATH, no {folder}"
    if agent == "claude":
        return None if shutil.which("claude") else "`claude` is not on PATH"
    return None if shutil.which("codex") or paths.codex_home.exists() else f"no `codex` on PATH, no {paths.codex_home}"


def claude_rule(tool: str) -> str:
    """Claude Code's name for an MCP tool, as its permission rules and the model's tool list spell it."""
    return f"mcp__{SERVER}__{tool}"


def server_entry(paths: Paths, project: Path | None = None) -> dict[str, Any]:
    """What the agent runs: this Python and this memtui, serving ``paths.home`` (and only ``project``, if given)."""
    args = ["-m", "memtui", "mcp", *(["--project", str(project)] if project else [])]
    return {"command": sys.executable, "args": args, "env": {"MEMTUI_HOME": str(paths.home)}}


def _is_memtui_server(entry: Any) -> bool:
    """An entry that runs memtui's server: memtui's own, or the ``memtui mcp`` line older docs gave."""
    if not isinstance(entry, dict):
        return False
    argv = [str(entry.get("command", "")), *(str(a) for a in entry.get("args", []) or [])]
    return "mcp" in argv and any(Path(a).name == "memtui" or a == "memtui" for a in argv)


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python (for comparing)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


# --- Codex ---------------------------------------------------------------------------------------------------


def codex_config(paths: Paths) -> Path:
    """Codex's per-user config.toml, where the Codex source's ``mcp`` part says."""
    from memtui.adapters.sources.registry import source

    return source("codex").mcp(paths).config


def _codex_doc(path: Path, raw: bytes | None) -> tomlkit.TOMLDocument:
    try:
        doc = tomlkit.parse((raw or b"").decode("utf-8"))
    except (UnicodeDecodeError, TOMLKitError) as exc:
        raise HookError(f"{path} is not valid TOML ({exc}); it was left untouched. Fix it, then run again.") from exc
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise HookError(f"{path}: 'mcp_servers' is not a table; it was left untouched")
    return doc


def _codex_wanted(paths: Paths, project: Path | None) -> dict[str, Any]:
    return {**server_entry(paths, project), "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_SEC}


def install_codex(paths: Paths, project: Path | None = None) -> HookResult:
    path = codex_config(paths)
    raw = read_bytes(path)
    doc = _codex_doc(path, raw)
    wanted = _codex_wanted(paths, project)
    current = doc.get("mcp_servers", {}).get(SERVER)
    if _plain(current) == wanted:
        return HookResult(agent="codex", path=path, outcome="already_installed", detail=f"serves {paths.home}")
    if current is not None and not _is_memtui_server(_plain(current)):
        raise HookError(f"{path}: [mcp_servers.{SERVER}] runs something else; it was left untouched")
    table = tomlkit.table()
    table["command"] = wanted["command"]
    table["args"] = wanted["args"]
    env = tomlkit.inline_table()
    env.update(wanted["env"])
    table["env"] = env
    table["startup_timeout_sec"] = wanted["startup_timeout_sec"]
    if "mcp_servers" not in doc:
        doc["mcp_servers"] = tomlkit.table(is_super_table=True)
    doc["mcp_servers"][SERVER] = table
    write_remembering(paths, "mcp-codex", path, raw, tomlkit.dumps(doc).encode("utf-8"))
    detail = f"serves {paths.home}" + ("; replaced the entry that did not say which home" if current else "")
    return HookResult(agent="codex", path=path, outcome="installed", detail=detail)


def uninstall_codex(paths: Paths) -> HookResult:
    path = codex_config(paths)
    raw = read_bytes(path)
    if restore_if_unchanged(paths, "mcp-codex", path, raw):
        return HookResult(agent="codex", path=path, outcome="restored", detail="byte for byte as before the install")
    doc = _codex_doc(path, raw)
    servers = doc.get("mcp_servers")
    if not servers or not _is_memtui_server(_plain(servers.get(SERVER))):
        forget_state(paths, "mcp-codex")
        return HookResult(agent="codex", path=path, outcome="not_installed")
    del servers[SERVER]
    if not servers:
        del doc["mcp_servers"]
    write_keeping_mode(path, tomlkit.dumps(doc).encode("utf-8"))
    forget_state(paths, "mcp-codex")
    return HookResult(agent="codex", path=path, outcome="removed_entry", detail="the file changed since the install")


def codex_status(paths: Paths) -> McpStatus:
    path = codex_config(paths)
    try:
        current = _plain(_codex_doc(path, read_bytes(path)).get("mcp_servers", {}).get(SERVER))
    except (HookError, OSError) as exc:
        return McpStatus(agent="codex", path=path, installed=False, detail=str(exc))
    return McpStatus(agent="codex", path=path, installed=current is not None, detail=_serves(paths, current))


def _serves(paths: Paths, current: Any) -> str:
    if current is None:
        return "not registered"
    if not isinstance(current, dict):
        return "an entry memtui cannot read"
    home = (current.get("env") or {}).get("MEMTUI_HOME")
    if home is None:
        return "registered without MEMTUI_HOME: it serves the default home; run `memtui mcp install` to fix"
    if Path(home) != paths.home:
        return f"registered for another home ({home})"
    args = [str(a) for a in current.get("args", [])]
    scope = f", only {args[args.index('--project') + 1]}" if "--project" in args[:-1] else ""
    return f"serves {home}{scope}"


# --- Claude Code -----------------------------------------------------------------------------------------------


def _claude_env(paths: Paths) -> dict[str, str]:
    """The environment for Claude's CLI: its config folder named when it is not the default (Claude then keeps its
    state file inside that folder rather than at ``~/.claude.json``)."""
    env = dict(os.environ)
    if "CLAUDE_CONFIG_DIR" in env or paths.claude_dir != Path.home() / ".claude":
        env["CLAUDE_CONFIG_DIR"] = str(paths.claude_dir)
    return env


def claude_state_file(paths: Paths) -> Path:
    """Where Claude Code keeps its MCP servers of the user and local scopes (read only by memtui)."""
    env = _claude_env(paths)
    return (
        Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json" if "CLAUDE_CONFIG_DIR" in env else Path.home() / ".claude.json"
    )


def claude_settings(paths: Paths) -> Path:
    """Claude Code's settings.json (its permission rules), the file the Claude source's ``hooks`` part names."""
    from memtui.adapters.sources.registry import source

    target = source("claude").hooks(paths)
    return target.config if target is not None else paths.claude_dir / "settings.json"


def _claude_registered(paths: Paths, scope: ClaudeScope, project: Path | None) -> Any:
    """The ``memtui`` server Claude has in that scope, as its state file holds it (None: none)."""
    path = claude_state_file(paths)
    raw = read_bytes(path)
    if not raw:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if scope == "local":
        data = (data.get("projects") or {}).get(str(project)) or {}
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return servers.get(SERVER) if isinstance(servers, dict) else None


def _claude_cli(paths: Paths, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    claude = shutil.which("claude")
    if claude is None:
        raise HookError("`claude` is not on PATH; install Claude Code, then run again")
    try:
        return subprocess.run(
            [claude, "mcp", *args],
            cwd=cwd,
            env=_claude_env(paths),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLAUDE_CLI_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HookError(f"`claude mcp {args[0]}` did not run: {exc}") from exc


def _record(paths: Paths) -> Path:
    return state_dir(paths) / "mcp-claude.json"


def _claude_wanted(paths: Paths, project: Path | None) -> dict[str, Any]:
    return {"type": "stdio", **server_entry(paths, project)}


def install_claude(paths: Paths, project: Path | None = None) -> list[HookResult]:
    scope: ClaudeScope = "local" if project else "user"
    cwd = project or Path.home()
    state = claude_state_file(paths)
    wanted = _claude_wanted(paths, project)
    current = _claude_registered(paths, scope, project)
    results = []
    if current == wanted:
        results.append(HookResult(agent="claude", path=state, outcome="already_installed", detail=f"{scope} scope"))
    else:
        if current is not None:
            if not _is_memtui_server(current):
                raise HookError(f"Claude Code's {scope}-scope server '{SERVER}' runs something else; left untouched")
            _claude_cli(paths, ["remove", "-s", scope, SERVER], cwd)
        done = _claude_cli(paths, ["add-json", "-s", scope, SERVER, json.dumps(wanted)], cwd)
        if done.returncode != 0:
            raise HookError(f"`claude mcp add-json` failed: {(done.stderr or done.stdout).strip()}")
        make_private_dir(state_dir(paths))
        record = {"scope": scope, "project": str(project) if project else None, "entry": wanted}
        write_private_bytes(_record(paths), json.dumps(record).encode())
        detail = f"{scope} scope, serves {paths.home}" + (
            "; replaced the entry that did not say which home" if current else ""
        )
        results.append(HookResult(agent="claude", path=state, outcome="installed", detail=detail))
    results.append(_allow_tools(paths))
    return results


def _allow_tools(paths: Paths) -> HookResult:
    path = claude_settings(paths)
    raw = read_bytes(path)
    data = parse_settings_json(path, raw)
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict) or not isinstance(permissions.setdefault("allow", []), list):
        raise HookError(f"{path}: 'permissions' or 'permissions.allow' has an unexpected shape; it was left untouched")
    missing = [claude_rule(t) for t in READ_ONLY_TOOLS if claude_rule(t) not in permissions["allow"]]
    if not missing:
        return HookResult(agent="claude", path=path, outcome="already_installed", detail="memtui's tools are allowed")
    permissions["allow"].extend(missing)
    write_remembering(paths, "mcp-claude-settings", path, raw, render_settings_json(data))
    return HookResult(agent="claude", path=path, outcome="installed", detail="allowed " + ", ".join(missing))


def uninstall_claude(paths: Paths) -> list[HookResult]:
    results = []
    state = claude_state_file(paths)
    try:
        record = json.loads((read_bytes(_record(paths)) or b"null").decode())
    except ValueError:
        record = None
    if isinstance(record, dict):
        scope: ClaudeScope = "local" if record.get("scope") == "local" else "user"
        project = Path(record["project"]) if record.get("project") else None
        current = _claude_registered(paths, scope, project)
        if current == record.get("entry"):
            done = _claude_cli(paths, ["remove", "-s", scope, SERVER], project or Path.home())
            if done.returncode != 0:
                raise HookError(f"`claude mcp remove` failed: {(done.stderr or done.stdout).strip()}")
            results.append(HookResult(agent="claude", path=state, outcome="removed_entry", detail=f"{scope} scope"))
        else:
            results.append(
                HookResult(agent="claude", path=state, outcome="not_installed", detail="changed since; left as it is")
            )
        _record(paths).unlink(missing_ok=True)
    else:
        results.append(HookResult(agent="claude", path=state, outcome="not_installed"))
    results.append(_disallow_tools(paths))
    return results


def _disallow_tools(paths: Paths) -> HookResult:
    path = claude_settings(paths)
    raw = read_bytes(path)
    if restore_if_unchanged(paths, "mcp-claude-settings", path, raw):
        return HookResult(agent="claude", path=path, outcome="restored", detail="byte for byte as before the install")
    data = parse_settings_json(path, raw)
    allow = (data.get("permissions") or {}).get("allow")
    rules = {claude_rule(t) for t in READ_ONLY_TOOLS}
    if not isinstance(allow, list) or not rules & set(allow):
        forget_state(paths, "mcp-claude-settings")
        return HookResult(agent="claude", path=path, outcome="not_installed")
    data["permissions"]["allow"] = [r for r in allow if r not in rules]
    write_keeping_mode(path, render_settings_json(data))
    forget_state(paths, "mcp-claude-settings")
    return HookResult(agent="claude", path=path, outcome="removed_entry", detail="the file changed since the install")


def claude_status(paths: Paths) -> McpStatus:
    state = claude_state_file(paths)
    current = _claude_registered(paths, "user", None)
    scope = "user scope"
    try:
        record = json.loads((read_bytes(_record(paths)) or b"null").decode())
    except ValueError:
        record = None
    if current is None and isinstance(record, dict) and record.get("scope") == "local" and record.get("project"):
        current = _claude_registered(paths, "local", Path(record["project"]))
        scope = f"local scope ({record['project']})"
    detail = _serves(paths, current) + (f", {scope}" if current is not None else "")
    try:
        allow = (
            parse_settings_json(claude_settings(paths), read_bytes(claude_settings(paths))).get("permissions") or {}
        ).get("allow") or []
    except HookError as exc:
        allow, detail = [], f"{detail}; {exc}"
    missing = [claude_rule(t) for t in READ_ONLY_TOOLS if claude_rule(t) not in allow]
    if current is not None:
        detail += (
            "; its tools are allowed"
            if not missing
            else f"; Claude will ask before (and `claude -p` deny) {', '.join(missing)}"
        )
    return McpStatus(agent="claude", path=state, installed=current is not None, detail=detail)


def status(paths: Paths) -> list[McpStatus]:
    return [claude_status(paths), codex_status(paths), gemini_status(paths)]


# --- Gemini CLI ------------------------------------------------------------------------------------------------


def _gemini_target(paths: Paths) -> McpTarget:
    from memtui.adapters.sources.registry import source

    return source(GEMINI_KIND).mcp(paths)


def _gemini_wanted(paths: Paths, project: Path | None) -> dict[str, Any]:
    entry = server_entry(paths, project)
    wanted = _gemini_target(paths).entry(ServerCommand(entry["command"], entry["args"], entry["env"]))
    return {**wanted, "includeTools": list(READ_ONLY_TOOLS)}  # the trust given covers these read-only tools only


def parse_gemini_settings(path: Path, raw: bytes | None, wanted: dict[str, Any] | None = None) -> dict[str, Any]:
    """Gemini CLI's settings.json as plain JSON. A file with comments is refused (rewriting it would drop them),
    saying what to add by hand (``wanted``: memtui's entry)."""
    if raw is None or not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except UnicodeDecodeError as exc:
        raise HookError(f"{path} is not UTF-8 text ({exc}); it was left untouched") from exc
    except json.JSONDecodeError as exc:
        if not has_comments(text):
            raise HookError(
                f"{path} is not valid JSON ({exc}); it was left untouched. Fix it, then run again."
            ) from exc
        by_hand = f': add "{SERVER}": {json.dumps(wanted)} under "mcpServers" yourself,' if wanted else ""
        raise HookError(
            f"{path} has comments, which memtui would lose by rewriting it; it was left untouched{by_hand} or remove "
            "the comments and run again"
        ) from exc
    if not isinstance(data, dict):
        raise HookError(f"{path} is not a JSON object; it was left untouched")
    if not isinstance(data.get("mcpServers", {}), dict):
        raise HookError(f"{path}: 'mcpServers' is not an object; it was left untouched")
    return data


def install_gemini(paths: Paths, project: Path | None = None) -> HookResult:
    path = _gemini_target(paths).config
    wanted = _gemini_wanted(paths, project)
    raw = read_bytes(path)
    data = parse_gemini_settings(path, raw, wanted)
    current = data.get("mcpServers", {}).get(SERVER)
    if current == wanted:
        return HookResult(agent="gemini", path=path, outcome="already_installed", detail=f"serves {paths.home}")
    if current is not None and not _is_memtui_server(current):
        raise HookError(f"{path}: mcpServers.{SERVER} runs something else; it was left untouched")
    data.setdefault("mcpServers", {})[SERVER] = wanted
    write_remembering(paths, "mcp-gemini", path, raw, render_settings_json(data))
    detail = f"serves {paths.home}" + ("; replaced the entry that did not say which home" if current else "")
    return HookResult(agent="gemini", path=path, outcome="installed", detail=detail)


def uninstall_gemini(paths: Paths) -> HookResult:
    path = _gemini_target(paths).config
    raw = read_bytes(path)
    if restore_if_unchanged(paths, "mcp-gemini", path, raw):
        return HookResult(agent="gemini", path=path, outcome="restored", detail="byte for byte as before the install")
    data = parse_gemini_settings(path, raw)
    servers = data.get("mcpServers")
    if not servers or not _is_memtui_server(servers.get(SERVER)):
        forget_state(paths, "mcp-gemini")
        return HookResult(agent="gemini", path=path, outcome="not_installed")
    del servers[SERVER]
    if not servers:
        del data["mcpServers"]
    write_keeping_mode(path, render_settings_json(data))
    forget_state(paths, "mcp-gemini")
    return HookResult(agent="gemini", path=path, outcome="removed_entry", detail="the file changed since the install")


def gemini_status(paths: Paths) -> McpStatus:
    path = _gemini_target(paths).config
    try:
        current = parse_gemini_settings(path, read_bytes(path)).get("mcpServers", {}).get(SERVER)
    except (HookError, OSError) as exc:
        return McpStatus(agent="gemini", path=path, installed=False, detail=str(exc))
    return McpStatus(agent="gemini", path=path, installed=current is not None, detail=_serves(paths, current))
