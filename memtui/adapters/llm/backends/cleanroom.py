"""memtui's own agent calls are clean rooms: none of the user's instruction files, memory, hooks or notify program
reaches them, yet they authenticate and reach the model exactly as the user's own ``codex`` / ``claude`` do.

Codex: a private ``CODEX_HOME`` (``<memtui home>/codex-home``) whose ``config.toml`` holds only the user's model and
provider settings (``CODEX_KEYS``, a selected ``profile`` folded in) plus ``project_doc_max_bytes = 0`` and
``features.memories = false``, and whose ``auth.json`` is a link to the user's (Codex rewrites it in place, so a
token refresh lands in the user's file). Codex's global ``AGENTS.md``, its memories, ``notify``, hooks, MCP servers,
skills and rules stay in the user's home, which memtui's calls never see. Measured with codex 0.169.0:
``-c project_doc_max_bytes=0`` left the global ``AGENTS.md`` in; ``--disable memories`` dropped only the memory
summary; the private home dropped both.

Claude Code: flags, each used when ``claude --help`` lists it (``capabilities``): ``--safe-mode`` (no CLAUDE.md,
skills, plugins, hooks, output styles), ``--setting-sources ""`` (none of the user's settings files), and
``--settings`` with ``disableAllHooks``, ``autoMemoryEnabled: false``, the user's ``CLAUDE_SETTINGS_KEYS`` (how they
authenticate and which model) and, for the agent, ``permissions.deny`` on Claude's own folder: Claude 2.1.328 lets a
``Write`` into its auto-memory folder through with no permission asked, even with ``dontAsk`` or
``CLAUDE_CODE_DISABLE_AUTO_MEMORY``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from memtui.adapters.llm.backends.base import BackendError, FailureKind
from memtui.core.paths import Paths

CODEX_HOME_DIR = "codex-home"
# What a Codex call needs to reach the user's model the way their own ``codex exec`` does; nothing else is copied.
CODEX_KEYS = (
    "model",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "model_context_window",
    "model_auto_compact_token_limit",
    "model_supports_reasoning_summaries",
    "openai_base_url",
    "chatgpt_base_url",
    "forced_login_method",
    "forced_chatgpt_workspace_id",
    "cli_auth_credentials_store",
    "oss_provider",
)
CODEX_AUTH_FILE = "auth.json"
# Built-in providers that need no login (Codex's ``--oss`` providers).
CODEX_KEYLESS = frozenset({"ollama", "lmstudio", "oss"})
# Claude settings that say how the user authenticates and which model they run; hooks, permissions, statusLine,
# outputStyle, plugins and the rest stay out.
CLAUDE_SETTINGS_KEYS = (
    "env",
    "apiKeyHelper",
    "model",
    "awsAuthRefresh",
    "awsCredentialExport",
    "forceLoginMethod",
    "forceLoginOrgUUID",
)
CLAUDE_FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
_CLAUDE_PROJECT_NAME = re.compile(r"[^A-Za-z0-9]")
CLAUDE_PROJECT_NAME_MAX = 200  # Claude shortens longer folder names (and adds a hash): compared by this prefix


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BackendError(FailureKind.ERROR, f"cannot read {path}: {exc}") from exc


def codex_config(user_home: Path) -> dict[str, Any]:
    """The private config.toml's content: the user's model and provider settings (their ``profile`` folded in)."""
    user = _read_toml(user_home / "config.toml")
    profiles = user.get("profiles")
    chosen = profiles.get(user.get("profile")) if isinstance(profiles, dict) else None
    merged = {**user, **chosen} if isinstance(chosen, dict) else user
    out: dict[str, Any] = {k: merged[k] for k in CODEX_KEYS if k in merged}
    out["project_doc_max_bytes"] = 0
    out["features"] = {"memories": False}
    return out


def codex_home(paths: Paths) -> Path:
    """memtui's private CODEX_HOME, brought up to date with the user's provider settings (written when changed)."""
    private = paths.home / CODEX_HOME_DIR
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = tomlkit.dumps(codex_config(paths.codex_home))
    config = private / "config.toml"
    if not config.is_file() or config.read_text(encoding="utf-8") != text:
        config.write_text(text, encoding="utf-8")
    link, target = private / CODEX_AUTH_FILE, paths.codex_home / CODEX_AUTH_FILE
    if not (link.is_symlink() and os.readlink(link) == str(target)):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return private


def codex_env(private: Path) -> dict[str, str]:
    return {**os.environ, "CODEX_HOME": str(private)}


def codex_api_key_login(config: dict[str, Any], env: dict[str, str]) -> str | None:
    """Why a Codex that ``codex login status`` calls logged out still works, or None: its provider takes an API key
    from the environment (``env_key``) that is set, needs no login, or is OpenAI's with a key in the environment."""
    name = str(config.get("model_provider") or "openai")
    providers = config.get("model_providers")
    provider = providers.get(name) if isinstance(providers, dict) else None
    if isinstance(provider, dict):
        key = provider.get("env_key")
        if isinstance(key, str) and key:
            return f"provider {name!r} takes its key from ${key}" if env.get(key) else None
        if not provider.get("requires_openai_auth"):
            return f"provider {name!r} needs no login"
        return None
    if name in CODEX_KEYLESS:
        return f"provider {name!r} needs no login"
    for key in ("CODEX_API_KEY", "OPENAI_API_KEY"):
        if env.get(key):
            return f"an API key in ${key}"
    return None


def claude_settings(claude_dir: Path, *, deny_writes_in: tuple[Path, ...] = ()) -> str:
    """The ``--settings`` JSON for memtui's ``claude -p`` calls: no hooks, no auto memory, the user's auth and model
    settings, and writes refused in ``deny_writes_in`` (Claude's own folders, for the agent)."""
    try:
        user = json.loads((claude_dir / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        user = {}
    out: dict[str, Any] = {k: user[k] for k in CLAUDE_SETTINGS_KEYS if isinstance(user, dict) and k in user}
    out["disableAllHooks"] = True
    out["autoMemoryEnabled"] = False
    if deny_writes_in:
        # ``//abs/path/**``: an absolute path in Claude's permission rules.
        rules = [f"{tool}(/{folder.as_posix()}/**)" for folder in deny_writes_in for tool in CLAUDE_FILE_TOOLS]
        out["permissions"] = {"deny": rules}
    return json.dumps(out, separators=(",", ":"))


def claude_dirs(claude_dir: Path) -> tuple[Path, ...]:
    """Claude's folders memtui's agent may never write in: its config folder and ``~/.claude``."""
    found: list[Path] = []
    for folder in (claude_dir, Path.home() / ".claude"):
        for p in (folder, Path(os.path.realpath(folder))):
            if p not in found:
                found.append(p)
    return tuple(found)


def claude_project_name(folder: Path) -> str:
    return _CLAUDE_PROJECT_NAME.sub("-", str(folder))[:CLAUDE_PROJECT_NAME_MAX]


def claude_project_files(claude_dir: Path, folder: Path) -> dict[str, tuple[int, int]]:
    """Files (size, mtime) in Claude's per-folder state for ``folder`` (its transcripts and auto memory)."""
    projects = claude_dir / "projects"
    names = {claude_project_name(folder), claude_project_name(Path(os.path.realpath(folder)))}
    out: dict[str, tuple[int, int]] = {}
    if not projects.is_dir():
        return out
    for entry in projects.iterdir():
        if not any(entry.name.startswith(n) for n in names):
            continue
        for dirpath, _dirs, files in os.walk(entry):
            for f in files:
                p = Path(dirpath) / f
                try:
                    st = p.lstat()
                except OSError:
                    continue
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


# What memtui's private Codex home keeps between calls: its settings and the link to the user's login. Everything
# else there (Codex's session files, its state and log databases) holds memtui's own prompts, so rollout text.
KEPT_IN_CODEX_HOME = frozenset({"config.toml", CODEX_AUTH_FILE})


def sweep_codex_home(home: Path) -> int:
    """Remove what Codex wrote into memtui's private home (sessions of memtui's own calls, their state): a stopped
    call can leave a session file holding a rollout's text. Returns how many entries went."""
    private = home / CODEX_HOME_DIR
    if not private.is_dir():
        return 0
    n = 0
    for entry in private.iterdir():
        if entry.name in KEPT_IN_CODEX_HOME:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        n += 1
    return n
