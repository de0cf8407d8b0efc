"""Effective settings: defaults < config.toml < environment (MEMTUI_*) < command-line flags.

Every value remembers where it came from so ``memtui config`` can say so. Limits mirror the
``[memories]`` table of Codex (same names, defaults and clamps) plus memtui's own knobs.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Provider = Literal["auto", "openai", "local", "offline", "codex", "claude"]
ResolvedProvider = Literal["openai", "local", "offline", "codex", "claude"]

# Environment variables read besides MEMTUI_<FIELD>: the conventional OpenAI ones.
_ALIASES: dict[str, tuple[str, ...]] = {
    "api_key": ("MEMTUI_API_KEY", "OPENAI_API_KEY"),
    "base_url": ("MEMTUI_BASE_URL", "OPENAI_BASE_URL"),
}


class Settings(BaseModel):
    """All tunables. Field names are the config.toml keys and, upper-cased, the MEMTUI_* variables."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # Codex [memories] limits, same defaults and clamps.
    max_rollout_age_days: int = Field(
        10, ge=0, le=90, description="Phase 1 looks at threads updated within this window (`phase1 --all`: any age)"
    )
    min_rollout_idle_hours: int = Field(6, ge=0, le=48, description="a thread must be idle this long before extraction")
    max_raw_memories_for_consolidation: int = Field(
        256, ge=1, le=4096, description="top-K stage-1 outputs fed to Phase 2"
    )
    max_unused_days: int = Field(
        30,
        ge=0,
        le=365,
        description="retention and Phase 2 eligibility window, from when a memory was made or last used (a memory "
        "made since the last consolidation is always kept and taken); memory health's stale",
    )
    extract_model: str = Field("gpt-5.4-mini", description="model for Phase 1 (codex/claude: -m / --model when set)")
    consolidation_model: str = Field("gpt-5.4", description="model for the Phase 2 agent")
    concurrency: int = Field(
        8, ge=1, le=128, description="parallel model calls, and the cap on running stage-1 jobs across processes"
    )

    # Model access.
    provider: Provider = Field(
        "auto",
        description="openai (any OpenAI-compatible server), local (a model on your machine), codex, claude, offline, "
        "or auto: a key or base URL -> openai, else a logged-in codex, else claude, else offline (`memtui config` "
        "says why)",
    )
    api_key: str | None = Field(None, description="the key of the server to talk to")
    base_url: str | None = Field(None, description="the OpenAI-compatible server to talk to (default: OpenAI's)")
    request_timeout_seconds: float = Field(120.0, gt=0, description="per model call")
    context_window_tokens: int = Field(
        272_000,
        ge=1_000,
        description="the extract model's window; Phase 1 gives the rollout context_window_percent of "
        "effective_context_window_percent of it",
    )
    effective_context_window_percent: int = Field(
        95, ge=1, le=100, description="the usable part of the window, as in Codex"
    )
    context_window_percent: int = Field(
        70, ge=1, le=100, description="the part of the usable window given to the rollout, as in Codex"
    )
    bytes_per_token: float = Field(
        3.0,
        gt=0,
        description="base of the token estimate; JSON, code and non-ASCII text count denser (Codex's 4 B/token "
        "overflows)",
    )
    # A model on the user's own machine (provider = "local": Ollama, llama.cpp's server, LM Studio, vLLM): its
    # window replaces context_window_tokens, and every request reserves room for the reply.
    local_context_window_tokens: int = Field(
        8192, ge=1024, description="provider = local: the model's context window (n_ctx)"
    )
    reply_reserve_tokens: int = Field(
        2048, ge=256, description="provider = local: tokens of the window kept for the reply (sent as max_tokens)"
    )

    # Jobs.
    job_lease_seconds: int = Field(3600, ge=1, description="lease of a claimed job")
    job_retry_delay_seconds: int = Field(
        3600, ge=0, description="backoff after a failure (3 retries, reset when the rollout changes)"
    )
    phase2_cooldown_hours: float = Field(6.0, ge=0, description="success cooldown of Phase 2")
    phase2_heartbeat_seconds: int = Field(90, ge=1, description="lease heartbeat while the agent runs")
    agent_max_turns: int = Field(60, ge=1, description="turns of the consolidation agent per run")
    agent_max_write_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="bytes the consolidation agent may write per run"
    )

    # The terminal UI: binding id -> keys, e.g. [keymap] "review.approve" = "A" (ids are on the help screen, f1).
    keymap: dict[str, str] = Field(
        default_factory=dict,
        description='remap UI keys by binding id, e.g. [keymap] then "review.approve" = "A" (ids on the help '
        "screen, f1; read at start)",
    )

    # A git index.lock in the memory root older than this (and no memtui holder) is stale and removed.
    index_lock_stale_seconds: int = Field(
        60,
        ge=0,
        description="a git index.lock in the memory root is removed only when memtui holds the root, it is older "
        "than this, and no process has it open",
    )
    # Approved versions kept for undo as compressed snapshots in the state database (0 keeps none).
    history_versions: int = Field(
        20,
        ge=0,
        le=10_000,
        description="approved versions kept for undo, zstd-compressed in state.sqlite (0 keeps none; lowering it "
        "drops the oldest at the next decision)",
    )

    # Sources (None = the conventional locations).
    codex_home: Path | None = Field(
        None, description="where Codex rollouts are read from (default $CODEX_HOME or ~/.codex)"
    )
    claude_dir: Path | None = Field(
        None, description="where Claude Code rollouts are read from (default $CLAUDE_CONFIG_DIR or ~/.claude)"
    )

    @field_validator("codex_home", "claude_dir")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        return None if value is None else absolute(value)

    # Agent CLIs as backends, and bulk extraction.
    cli_timeout_seconds: float = Field(
        600.0, gt=0, description="one Phase 1 call through codex/claude (start-up included)"
    )
    agent_timeout_seconds: float = Field(1800.0, gt=0, description="a whole Phase 2 agent run through codex/claude")
    batch_lease_hours: float = Field(
        25.0,
        ge=1,
        description="lease of jobs sent in a batch: the 24 h window plus a margin; they do not count against "
        "concurrency",
    )

    # Trust: tool-only and flagged statements reach what agents load (export, MCP) only once a person approved them;
    # true lets every statement through (hidden characters are removed regardless).
    export_tool_statements: bool = Field(
        False,
        description="let tool-only and flagged statements into exports and MCP reads without a person's approval",
    )

    @property
    def model_context_window(self) -> int:
        """The window Phase 1 budgets against: the local model's own when ``provider = "local"``."""
        return self.local_context_window_tokens if self.provider == "local" else self.context_window_tokens

    @property
    def rollout_token_budget(self) -> int:
        """Tokens of rollout given to Phase 1: 70 % of the effective window, as Codex gives."""
        effective = self.context_window_tokens * self.effective_context_window_percent // 100
        return max(1, effective * self.context_window_percent // 100)


Origin = Literal["default", "config", "env", "flag"]


class LoadedSettings(BaseModel):
    settings: Settings
    origins: dict[str, str]
    config_path: Path


class SettingsError(ValueError):
    """A config file or variable that does not validate; the message names the culprit."""


def absolute(path: str | Path) -> Path:
    """``~`` expanded and made absolute once, at start-up: a relative path would follow the current directory
    (git runs in the memory root, so a relative git dir or work tree names the wrong folder)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def memtui_home() -> Path:
    return absolute(os.environ.get("MEMTUI_HOME") or Path.home() / ".memtui")


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid TOML: {exc}") from exc
    # Accept both top-level keys and a Codex-style [memories] table; [keymap] is a table of its own.
    flat = {k: v for k, v in data.items() if not isinstance(v, dict) or k == "keymap"}
    for table in ("memories", "memtui"):
        if isinstance(data.get(table), dict):
            flat.update(data[table])
    return flat


def env_names(name: str) -> tuple[str, ...]:
    """The environment variables setting ``name`` is read from, the first set one winning (none for a table)."""
    if name == "keymap":  # a table: config.toml only
        return ()
    return _ALIASES.get(name, ()) or (f"MEMTUI_{name.upper()}",)


def _read_env() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in Settings.model_fields:
        for var in env_names(name):
            if os.environ.get(var):
                out[name] = os.environ[var]
                break
    return out


def load_settings(overrides: dict[str, Any] | None = None, home: Path | None = None) -> LoadedSettings:
    """Merge the four layers and validate once; ``overrides`` are command-line flags (None = unset)."""
    config_path = (absolute(home) if home else memtui_home()) / "config.toml"
    layers: list[tuple[str, dict[str, Any]]] = [
        ("config", _read_config(config_path)),
        ("env", _read_env()),
        ("flag", {k: v for k, v in (overrides or {}).items() if v is not None}),
    ]
    merged: dict[str, Any] = {}
    origins = {name: "default" for name in Settings.model_fields}
    for origin, values in layers:
        for key, value in values.items():
            if key not in Settings.model_fields:
                where = config_path if origin == "config" else origin
                raise SettingsError(f"unknown setting {key!r} (from {where})")
            merged[key] = value
            origins[key] = origin if origin != "config" else f"config ({config_path})"
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))} ({origins.get(str(e['loc'][0]), '?')}): {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(f"invalid settings: {problems}") from exc
    return LoadedSettings(settings=settings, origins=origins, config_path=config_path)
