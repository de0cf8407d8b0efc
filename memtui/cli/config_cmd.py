"""``memtui config``: the effective settings and where each came from."""

from __future__ import annotations

import argparse

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.core.settings import Settings
from memtui.services.context import Context

SECRET_FIELDS = {"api_key"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help=COMMANDS["config"])
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=run)


def _shown(name: str, value: object) -> object:
    if name in SECRET_FIELDS and value:
        text = str(value)
        return f"{text[:3]}…{text[-2:]} (set)" if len(text) > 8 else "(set)"
    return str(value) if value is not None and not isinstance(value, int | float | bool | str) else value


def engine_lines(s: Settings) -> dict[str, str]:
    """One line per kind of provider: the path memtui's calls take on this machine and why."""
    from memtui.adapters.llm.backends import capabilities
    from memtui.adapters.llm.ladder import DEFAULT_BASE_URL, mode_memory
    from memtui.core.settings import memtui_home
    from memtui.services.phase1.prompt import COMPACT_PROMPT_MAX_WINDOW

    base = (s.base_url or DEFAULT_BASE_URL).rstrip("/")
    mode = mode_memory(memtui_home()).get(base)
    how = f"structured output as {mode.value} (probed earlier)" if mode else "structured output probed on first call"
    window = s.model_context_window
    prompt = "compact" if window <= COMPACT_PROMPT_MAX_WINDOW else "full"
    http = (
        f"{base}: {how} (json_schema, then json_object with schema, then schema in the prompt); window {window} "
        f"tokens, {s.reply_reserve_tokens} reserved for the reply, {prompt} stage-one prompt"
    )
    return {
        "http": http,
        "codex": capabilities.describe("codex"),
        "claude": capabilities.describe("claude"),
    }


def run(args: argparse.Namespace) -> int:
    from memtui.adapters.llm.backends.choose import choose_provider  # loads the model clients: only when it runs

    ctx = make_context()
    s = ctx.settings
    rows = {
        name: {"value": _shown(name, getattr(s, name)), "origin": ctx.loaded.origins[name]}
        for name in type(s).model_fields
    }
    paths = {
        "memtui_home": str(ctx.paths.home),
        "memory_root": str(ctx.paths.memory_root),
        "state_db": str(ctx.paths.state_db),
        "config_file": str(ctx.paths.config_file),
        "codex_home": str(ctx.paths.codex_home),
        "claude_dir": str(ctx.paths.claude_dir),
    }
    choice = choose_provider(s)
    engines = engine_lines(s)
    if args.json:
        print_json(
            {
                "settings": rows,
                "paths": paths,
                "provider": choice.name,
                "provider_reason": choice.reason,
                "engines": engines,
            }
        )
        _warn_keymap(ctx)
        return 0
    width = max(map(len, rows))
    for name, row in rows.items():
        print(f"{name:<{width}}  {row['value']!s:<28}  {row['origin']}")
    print(f"{'provider (effective)':<{width}}  {choice.name}: {choice.reason}")
    for name, line in engines.items():
        print(f"{'  ' + name:<{width}}  {line}")
    for name, value in paths.items():
        print(f"{name:<{width}}  {value}")
    _warn_keymap(ctx)
    return 0


def _warn_keymap(ctx: Context) -> None:
    """An unknown binding id in [keymap] is otherwise ignored without a word (the TUI warns at start-up too)."""
    import sys

    if ctx.settings.keymap:
        from memtui.tui.keymap import keymap_warnings

        for warning in keymap_warnings(ctx.settings.keymap, f"{ctx.paths.config_file} [keymap]"):
            print(f"memtui config: warning: {warning}", file=sys.stderr)
