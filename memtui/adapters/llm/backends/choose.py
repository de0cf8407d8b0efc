"""Which backend ``provider = "auto"`` picks, and why (``memtui config`` prints the reason)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtui.adapters.llm.backends import claude_cli, codex_cli
from memtui.adapters.llm.backends.base import BackendError
from memtui.adapters.llm.backends.cleanroom import codex_config, codex_env, codex_home
from memtui.core.paths import Paths, resolve_paths
from memtui.core.settings import ResolvedProvider, Settings

if TYPE_CHECKING:
    from memtui.adapters.llm.backends.base import Backend

CLI_PROVIDERS = ("codex", "claude")


@dataclass(frozen=True)
class ProviderChoice:
    name: ResolvedProvider
    reason: str


_CACHE: dict[tuple[str, ...], ProviderChoice] = {}


def _codex_clean_room() -> tuple[dict[str, str] | None, dict[str, Any] | None]:
    """How memtui's own codex calls run (its private CODEX_HOME, the user's provider settings), so ``auto`` asks
    the question those calls would: is *that* codex logged in? A home not made yet is not made here: the user's
    own codex answers then."""
    paths = resolve_paths()
    if not paths.home.is_dir():
        return None, None
    try:
        private = codex_home(paths)
        return codex_env(private), codex_config(paths.codex_home)
    except (OSError, BackendError):
        return None, None


def _probe_clis() -> ProviderChoice:
    notes = []
    if path := shutil.which(codex_cli.COMMAND):
        ok, said = codex_cli.login_status(codex_cli.COMMAND, *_codex_clean_room())
        if ok:
            return ProviderChoice("codex", f"no API key or base URL; codex on PATH ({path}) and logged in: {said}")
        notes.append(f"codex on PATH but not logged in ({said})")
    else:
        notes.append("no codex on PATH")
    if path := shutil.which(claude_cli.COMMAND):
        ok, said = claude_cli.auth_status()
        if ok is not False:
            state = said if ok else f"login state unknown: {said}"
            return ProviderChoice(
                "claude", f"no API key or base URL; {'; '.join(notes)}; claude on PATH ({path}), {state}"
            )
        notes.append(f"claude on PATH but not logged in ({said})")
    else:
        notes.append("no claude on PATH")
    return ProviderChoice("offline", f"no API key or base URL; {'; '.join(notes)}: the offline extractor")


def choose_provider(settings: Settings) -> ProviderChoice:
    """``auto``: API key or base URL -> openai; else a logged-in codex -> codex; else claude -> claude; else offline.

    The CLI probe runs once per process and environment (PATH and the agents' homes), not on every call.
    """
    if settings.provider != "auto":
        return ProviderChoice(settings.provider, f"provider = {settings.provider!r} is set")
    if settings.api_key or settings.base_url:
        which = "an API key" if settings.api_key else "a base URL"
        return ProviderChoice("openai", f"{which} is set (OPENAI_API_KEY / OPENAI_BASE_URL or config)")
    key = tuple(os.environ.get(v, "") for v in ("PATH", "HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "MEMTUI_HOME"))
    if key not in _CACHE:
        _CACHE[key] = _probe_clis()
    return _CACHE[key]


def resolved_provider(settings: Settings) -> ResolvedProvider:
    """The provider ``settings`` run with: its own, or what ``auto`` finds (the CLI probe lives here, not in
    the settings model, so reading settings never reaches the model backends)."""
    return choose_provider(settings).name


def forget_probe() -> None:
    """Drop cached probe results (tests, or after ``codex login``)."""
    _CACHE.clear()


def make_backend(settings: Settings, paths: Paths | None = None, name: str | None = None) -> Backend:
    """The backend for ``name`` (default: the resolved provider). ``offline`` has no backend."""
    name = name or resolved_provider(settings)
    paths = paths or resolve_paths(settings)
    if name == "codex":
        return codex_cli.CodexCliBackend(settings, paths)
    if name == "claude":
        return claude_cli.ClaudeCliBackend(settings, paths)
    if name in ("openai", "local"):
        # Imported on use for start-up speed: the openai client is heavy and the CLI backends never need it.
        from memtui.adapters.llm.backends.openai_http import OpenAIHttpBackend

        return OpenAIHttpBackend(settings, local=name == "local")
    raise ValueError(f"no model backend for provider {name!r}")


def model_if_set(settings: Settings, field: str) -> str | None:
    """A model name for a CLI backend only when the user chose one: the CLI's own default beats ours."""
    value = getattr(settings, field)
    return value if value != Settings.model_fields[field].default else None
