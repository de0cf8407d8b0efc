"""Agents' own hooks keep memory fresh: Claude Code's and Gemini CLI's ``SessionEnd`` hooks and Codex's (or, for a codex without
that event, its per-turn ``notify`` program) run ``memtui ingest`` and ``memtui phase1`` in the background.

``install`` merges one entry into ``$CLAUDE_CONFIG_DIR/settings.json`` and ``~/.gemini/settings.json`` (the Gemini
source's ``hooks`` part; a file with comments, which Gemini CLI allows, is refused rather than rewritten without
them) (JSON; every other hook kept) and
``$CODEX_HOME/config.toml`` (TOML via tomlkit, formatting kept; an existing ``notify`` program is kept by chaining:
memtui's command ends with ``-- <the old argv>`` and passes Codex's JSON argument on to it). The bytes of each file
before the first install are saved under ``$MEMTUI_HOME/hooks/``, so ``uninstall`` puts them back byte for byte when
nothing else changed the file since; otherwise it removes memtui's entry only. A file that does not parse is
reported and left untouched.

The hook command (``python -m memtui.hook_entry``, standard library only) starts a detached worker and returns:
it never opens the database, never waits, prints nothing. The worker (``hooks work``) takes a lock, so one runs at a time (a run asked for meanwhile
is done next), and logs to ``$MEMTUI_HOME/logs/hooks.log``. Phase 2 stays a person's decision: the hooks never run it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeGuard

import tomlkit
from pydantic import BaseModel
from tomlkit.exceptions import TOMLKitError

from memtui import hook_entry
from memtui.core import clock
from memtui.core.paths import Paths
from memtui.core.private import make_private_dir, write_private_bytes
from memtui.hook_entry import LOG
from memtui.hooks import codex_probe

Agent = Literal["claude", "codex", "gemini"]
AGENTS: tuple[Agent, ...] = ("claude", "codex", "gemini")  # the agents ``memtui hooks install`` edits
JSON_HOOK_AGENTS = ("claude", "gemini")  # a SessionEnd list in a settings.json (Codex's own hooks.json is alike)
CLAUDE_EVENT = "SessionEnd"
# Codex's session-end hook: a ``SessionEnd`` entry in ``$CODEX_HOME/hooks.json`` (the same shape as Claude Code's
# settings), for a codex whose own program knows that event; older ones get the per-turn ``notify`` program.
CODEX_EVENT = "SessionEnd"
CODEX_HOOKS_FILE = "hooks.json"
# Codex gives a SessionEnd hook 1 s unless told, and at most 3 s (it warns about more): the hook only starts the
# worker (0.08 s), but a busy machine can take longer than 1 s to start Python.
CODEX_SESSION_END_TIMEOUT = 3
SESSION_END_FLAG = "--session-end"
CHAIN_SEPARATOR = "--"
ENTRY_MODULE = "memtui.hook_entry"  # the fast, stdlib-only command the agents run


# Codex runs a hook only once a person trusted it in its TUI (exec skips an untrusted one without a word).
TRUST_HINT = "start `codex`, type /hooks, pick SessionEnd, press enter, then t to trust memtui's hook"


class HookError(RuntimeError):
    """A settings file memtui cannot safely edit (it does not parse, or has an unexpected shape); left untouched."""


class HookResult(BaseModel):
    agent: Agent
    path: Path
    outcome: Literal["installed", "already_installed", "restored", "removed_entry", "not_installed"]
    detail: str = ""

    def message(self) -> str:
        return f"{self.agent}: {self.outcome.replace('_', ' ')} {self.path}" + (
            f" ({self.detail})" if self.detail else ""
        )


class HookStatus(BaseModel):
    agent: Agent
    path: Path
    installed: bool
    detail: str


# --- where things are ----------------------------------------------------------------------------------------


def codex_knows_session_end(command: str = "codex") -> bool:
    """Whether the codex on PATH has the ``SessionEnd`` hook event: asked of its native program, found through
    symlinks and the npm launcher (``codex_probe``). Read from the program, never assumed."""
    return codex_probe.knows_session_end(codex_probe.find_codex(command))


def codex_uses_session_end(paths: Paths) -> bool:
    """Session-end hook when the codex on PATH has it, or when memtui's entry is already in hooks.json."""
    hooks_json = paths.codex_home / CODEX_HOOKS_FILE
    try:
        if _claude_installed(parse_settings_json(hooks_json, read_bytes(hooks_json)), "codex"):
            return True
    except HookError:
        pass
    return codex_knows_session_end()


def settings_path(paths: Paths, agent: Agent) -> Path:
    """The file the agent's hook goes in: the source's ``hooks`` part (Claude Code's and Gemini CLI's settings.json),
    for Codex its hooks.json, or config.toml's ``notify`` for a codex without the session-end event."""
    from memtui.adapters.sources.registry import source

    if agent in JSON_HOOK_AGENTS:
        target = source(agent).hooks(paths)
        assert target is not None  # both have SessionEnd in their settings.json ``hooks``
        return target.config
    return paths.codex_home / (CODEX_HOOKS_FILE if codex_uses_session_end(paths) else "config.toml")


def state_dir(paths: Paths) -> Path:
    return paths.home / hook_entry.STATE_DIR


def _backup(paths: Paths, agent: str) -> Path:
    return state_dir(paths) / f"{agent}.orig"


def _absent_marker(paths: Paths, agent: str) -> Path:
    return state_dir(paths) / f"{agent}.absent"


def _written_hash(paths: Paths, agent: str) -> Path:
    return state_dir(paths) / f"{agent}.installed-sha256"


def hook_argv(paths: Paths, agent: Agent, session_end: bool = False) -> list[str]:
    """The command the agent runs: this Python and this memtui, with the home pinned (the agent's environment may
    not carry MEMTUI_HOME)."""
    argv = [sys.executable, "-m", ENTRY_MODULE, "--home", str(paths.home), "--from", agent]
    return [*argv, SESSION_END_FLAG] if session_end else argv


def gemini_absent(paths: Paths) -> str | None:
    """Why Gemini CLI looks absent (no ``gemini`` on PATH, no ~/.gemini): ``install`` without a choice skips it."""
    import shutil

    folder = settings_path(paths, "gemini").parent
    return None if shutil.which("gemini") or folder.exists() else f"no `gemini` on PATH, no {folder}"


def _json_hooks(agent: Agent, path: Path) -> bool:
    """Whether the agent's hook is an entry in a ``hooks.SessionEnd`` JSON list (not Codex's notify program)."""
    return agent in JSON_HOOK_AGENTS or path.name == CODEX_HOOKS_FILE


def _is_ours_claude(command: Any, agent: Agent = "claude") -> bool:
    return isinstance(command, str) and ENTRY_MODULE in command and f"--from {agent}" in command


def _is_ours_codex(notify: Any) -> TypeGuard[list[Any]]:
    return isinstance(notify, list) and ENTRY_MODULE in notify and "codex" in notify


# --- file handling -------------------------------------------------------------------------------------------


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write_keeping_mode(path: Path, data: bytes) -> None:
    """Atomic replace; an existing file keeps its mode, a new one is 0600 (a symlink is followed)."""
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sha(data: bytes | None) -> str:
    return hashlib.sha256(data or b"").hexdigest()


def strip_json_comments(text: str) -> str:
    """``text`` without ``//`` and ``/* */`` comments outside strings (as Gemini CLI's strip-json-comments reads it)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def has_comments(text: str) -> bool:
    """A file that is not JSON only because of its comments (Gemini CLI allows them in its settings.json)."""
    try:
        json.loads(strip_json_comments(text))
    except json.JSONDecodeError:
        return False
    return True


def parse_settings_json(path: Path, raw: bytes | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        if isinstance(exc, json.JSONDecodeError) and has_comments(raw.decode("utf-8")):
            raise HookError(
                f"{path} has comments, which memtui would lose by rewriting it; it was left untouched. Remove the "
                "comments and run again, or add memtui's entry yourself"
            ) from exc
        raise HookError(f"{path} is not valid JSON ({exc}); it was left untouched. Fix it, then run again.") from exc
    if not isinstance(data, dict):
        raise HookError(f"{path} is not a JSON object; it was left untouched")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.get(CLAUDE_EVENT, []), list):
        raise HookError(f"{path}: 'hooks' or 'hooks.{CLAUDE_EVENT}' has an unexpected shape; it was left untouched")
    return data


def _parse_codex(path: Path, raw: bytes | None) -> tomlkit.TOMLDocument:
    try:
        doc = tomlkit.parse((raw or b"").decode("utf-8"))
    except (UnicodeDecodeError, TOMLKitError) as exc:
        raise HookError(f"{path} is not valid TOML ({exc}); it was left untouched. Fix it, then run again.") from exc
    notify = doc.get("notify")
    if notify is not None and not (isinstance(notify, list) and all(isinstance(a, str) for a in notify)):
        raise HookError(f"{path}: 'notify' is not a list of strings; it was left untouched")
    return doc


def _claude_installed(data: dict[str, Any], agent: Agent = "claude") -> bool:
    """memtui's entry among the ``SessionEnd`` hooks (Claude Code's settings.json, or Codex's hooks.json)."""
    for group in data.get("hooks", {}).get(CLAUDE_EVENT, []):
        if isinstance(group, dict) and any(
            isinstance(h, dict) and _is_ours_claude(h.get("command"), agent) for h in group.get("hooks", []) or []
        ):
            return True
    return False


def render_settings_json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# --- install / uninstall / status ----------------------------------------------------------------------------


def _remember_original(paths: Paths, agent: str, raw: bytes | None) -> None:
    """Save the file as it was before memtui's first change (``agent``: whose state, e.g. ``codex``, ``mcp-codex``)."""
    make_private_dir(state_dir(paths))
    if _backup(paths, agent).exists() or _absent_marker(paths, agent).exists():
        return  # an earlier install already saved the file as it was before memtui
    if raw is None:
        write_private_bytes(_absent_marker(paths, agent), b"")
    else:
        write_private_bytes(_backup(paths, agent), raw)


def install(paths: Paths, agent: Agent) -> HookResult:
    path = settings_path(paths, agent)
    raw = read_bytes(path)
    if _json_hooks(agent, path):
        data = parse_settings_json(path, raw)
        if _claude_installed(data, agent):
            return HookResult(agent=agent, path=path, outcome="already_installed")
        command = shlex.join(hook_argv(paths, agent, session_end=agent == "codex"))
        handler: dict[str, Any] = {"type": "command", "command": command}
        if agent == "codex":
            handler["timeout"] = CODEX_SESSION_END_TIMEOUT
        entry = {"hooks": [handler]}
        data.setdefault("hooks", {}).setdefault(CLAUDE_EVENT, []).append(entry)
        new = render_settings_json(data)
        detail = f"{CLAUDE_EVENT} hook added" + (
            f" (this codex has the session-end hook; {TRUST_HINT})" if agent == "codex" else ""
        )
    else:
        doc = _parse_codex(path, raw)
        old = doc.get("notify")
        if _is_ours_codex(old):
            return HookResult(agent=agent, path=path, outcome="already_installed")
        chained = [str(a) for a in old] if old else []
        doc["notify"] = [*hook_argv(paths, agent), CHAIN_SEPARATOR, *chained]
        new = tomlkit.dumps(doc).encode("utf-8")
        detail = f"notify set; the existing notify {chained!r} still runs" if chained else "notify set"
    write_remembering(paths, agent, path, raw, new)
    return HookResult(agent=agent, path=path, outcome="installed", detail=detail)


def write_remembering(paths: Paths, key: str, path: Path, raw: bytes | None, new: bytes) -> None:
    """Write ``new`` over ``path`` (whose bytes were ``raw``), keeping the file as it was before memtui's first
    change and the hash of what memtui wrote, under the state ``key``."""
    _remember_original(paths, key, raw)
    write_keeping_mode(path, new)
    write_private_bytes(_written_hash(paths, key), _sha(new).encode())


def restore_if_unchanged(paths: Paths, key: str, path: Path, raw: bytes | None) -> bool:
    """Put ``path`` back byte for byte as before memtui when it still holds what memtui wrote (True); else False."""
    written = read_bytes(_written_hash(paths, key))
    if written is None or raw is None or _sha(raw) != written.decode().strip():
        return False
    original = read_bytes(_backup(paths, key))
    if original is not None:
        write_keeping_mode(path, original)
    elif _absent_marker(paths, key).exists():
        path.unlink()
    forget_state(paths, key)
    return True


def forget_state(paths: Paths, agent: str) -> None:
    for p in (_backup(paths, agent), _absent_marker(paths, agent), _written_hash(paths, agent)):
        p.unlink(missing_ok=True)


def uninstall(paths: Paths, agent: Agent) -> HookResult:
    """Put the file back as it was before memtui when nobody changed it since; else remove memtui's entry only."""
    path = settings_path(paths, agent)
    raw = read_bytes(path)
    if restore_if_unchanged(paths, agent, path, raw):
        return HookResult(agent=agent, path=path, outcome="restored", detail="byte for byte as before the install")
    if _json_hooks(agent, path):
        data = parse_settings_json(path, raw)
        if not _claude_installed(data, agent):
            forget_state(paths, agent)
            return HookResult(agent=agent, path=path, outcome="not_installed")
        groups = []
        for group in data["hooks"][CLAUDE_EVENT]:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                group["hooks"] = [
                    h for h in group["hooks"] if not (isinstance(h, dict) and _is_ours_claude(h.get("command"), agent))
                ]
                if not group["hooks"]:
                    continue
            groups.append(group)
        if groups:
            data["hooks"][CLAUDE_EVENT] = groups
        else:
            del data["hooks"][CLAUDE_EVENT]
            if not data["hooks"]:
                del data["hooks"]
        new = render_settings_json(data)
    else:
        doc = _parse_codex(path, raw)
        notify = doc.get("notify")
        if not _is_ours_codex(notify):
            forget_state(paths, agent)
            return HookResult(agent=agent, path=path, outcome="not_installed")
        argv = [str(a) for a in notify]
        chained = argv[argv.index(CHAIN_SEPARATOR) + 1 :] if CHAIN_SEPARATOR in argv else []
        if chained:
            doc["notify"] = chained
        else:
            del doc["notify"]
        new = tomlkit.dumps(doc).encode("utf-8")
    write_keeping_mode(path, new)
    forget_state(paths, agent)
    return HookResult(agent=agent, path=path, outcome="removed_entry", detail="the file changed since the install")


def last_fired(paths: Paths, agent: Agent) -> int | None:
    """When the agent last ran memtui's hook (seconds since the epoch), from the stamp ``hook_entry`` leaves."""
    try:
        return int((state_dir(paths) / f"{agent}{hook_entry.FIRED_SUFFIX}").stat().st_mtime)
    except OSError:
        return None


def _fired_text(paths: Paths, agent: Agent) -> str:
    when = last_fired(paths, agent)
    if when is None:
        return "never fired"
    ago = max(0, clock.now_s() - when)
    return f"last fired {clock.iso(when)} ({ago // 3600} h {ago % 3600 // 60} min ago)"


def codex_trust(paths: Paths) -> codex_probe.HookTrust | None:
    """Codex's trust state for memtui's SessionEnd hook (None: the codex on PATH could not say)."""
    program = codex_probe.find_codex()
    if program is None:
        return None
    command = shlex.join(hook_argv(paths, "codex", session_end=True))
    return codex_probe.hook_trust(program, paths.codex_home, paths.codex_home, command)


def _codex_trust_text(paths: Paths) -> str:
    trust = codex_trust(paths)
    if trust is None:
        return "Codex did not say whether it trusts it"
    if trust.status in ("trusted", "managed"):
        return f"Codex trusts it ({trust.status})"
    return f"Codex skips it until you trust it ({trust.status}): {TRUST_HINT}"


def status(paths: Paths) -> list[HookStatus]:
    out = []
    for agent in AGENTS:
        path = settings_path(paths, agent)
        if agent == "gemini" and gemini_absent(paths):
            continue  # no Gemini CLI here: nothing to say
        try:
            raw = read_bytes(path)
            if _json_hooks(agent, path):
                installed = _claude_installed(parse_settings_json(path, raw), agent)
                kind = "session-end hook" if agent == "codex" else f"{CLAUDE_EVENT} hook"
                detail = kind if installed else f"no memtui hook (this {agent} has the session-end hook)"
                if installed and agent == "codex":
                    detail += "; " + _codex_trust_text(paths)
            else:
                notify = _parse_codex(path, raw).get("notify")
                installed = _is_ours_codex(notify)
                argv = [str(a) for a in notify] if notify else []
                chained = argv[argv.index(CHAIN_SEPARATOR) + 1 :] if installed and CHAIN_SEPARATOR in argv else []
                detail = (
                    ("notify program, after every turn (this codex has no session-end hook)"
                     + (f", chaining to {chained!r}" if chained else ""))
                    if installed
                    else (f"notify is {argv!r}" if argv else "no notify program")
                )  # fmt: skip
            if installed:
                detail += "; " + _fired_text(paths, agent)
        except (HookError, OSError) as exc:
            installed, detail = False, str(exc)
        out.append(HookStatus(agent=agent, path=path, installed=installed, detail=detail))
    return out


# --- what runs when the agent calls ----------------------------------------------------------------------------


def log_path(paths: Paths) -> Path:
    return paths.home / LOG


def run_hook(paths: Paths, agent: Agent, rest: list[str]) -> None:
    """The hook itself (``memtui.hook_entry``): chain to a previous Codex notify program, start the worker, return."""
    hook_entry.run_hook(paths.home, agent, rest)


def worker_lock_path(paths: Paths) -> Path:
    return state_dir(paths) / "worker.lock"


def run_worker(paths: Paths, work: Callable[[Callable[[str], None]], None]) -> bool:
    """Run ``work`` under the worker lock while runs are pending; False when another worker holds the lock (it
    will see the pending request). ``work`` gets a logger."""
    make_private_dir(state_dir(paths))
    pending = state_dir(paths) / hook_entry.PENDING
    ran = False
    while pending.exists():
        fd = os.open(worker_lock_path(paths), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return ran
            while pending.exists():
                pending.unlink(missing_ok=True)
                work(_logger(paths))
                ran = True
        finally:
            os.close(fd)  # releases the lock; a request that came in meanwhile is picked up by the outer loop
    return ran


def _logger(paths: Paths) -> Callable[[str], None]:
    def log(message: str) -> None:
        line = f"{clock.iso(clock.now_s())} {message}\n".encode()
        make_private_dir(paths.logs_dir)
        fd = os.open(log_path(paths), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "ab") as fh:
            fh.write(line)

    return log
