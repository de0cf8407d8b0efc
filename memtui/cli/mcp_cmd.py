"""``memtui mcp``: serve the memory to agents over MCP (stdio); ``memtui mcp install|uninstall|status``: register
that server with Codex, Claude Code and Gemini CLI (``memtui.hooks.mcp_register``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.cli import COMMANDS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help=COMMANDS["mcp"],
        description="Register it with your agents with `memtui mcp install` (Codex, Claude Code and Gemini CLI, user scope, "
        "serving this home); `memtui mcp` itself is what the agents run.",
    )
    p.add_argument(
        "--project",
        type=Path,
        help="serve only this project's memory, as `memtui export --project DIR` does (default: the client's "
        "first root when it sends one, else every project)",
    )
    p.set_defaults(func=run, before_start_up=take_the_wire)
    actions = p.add_subparsers(dest="mcp_command", metavar="ACTION")
    for name, func, help_ in [
        (
            "install",
            run_install,
            "register the server with Codex ($CODEX_HOME/config.toml) and Claude Code (`claude mcp add-json -s "
            "user`, and allow its read-only tools in $CLAUDE_CONFIG_DIR/settings.json) and Gemini CLI "
            "(mcpServers in ~/.gemini/settings.json), serving this home",
        ),
        ("uninstall", run_uninstall, "remove those registrations; files nobody changed since go back byte for byte"),
    ]:
        q = actions.add_parser(name, help=help_)
        q.add_argument("--claude", action="store_true", help="Claude Code only")
        q.add_argument("--codex", action="store_true", help="Codex only")
        q.add_argument("--gemini", action="store_true", help="Gemini CLI only")
        if name == "install":
            q.add_argument(
                "--project",
                dest="only_project",
                type=Path,
                help="serve only this project's memory (Claude Code: registered in its local scope for that "
                "folder, never in the project's shared .mcp.json)",
            )
        q.set_defaults(func=func)
    q = actions.add_parser("status", help="where the server is registered, which home it serves")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run_status)


def take_the_wire(args: argparse.Namespace) -> None:
    """Start answering the client's handshake (``memtui.mcp.front``) before the settings, the database and the MCP
    SDK load: agents send their first model request without waiting long for a server."""
    if args.func is run:
        from memtui.mcp.front import start

        args.front = start()


def run(args: argparse.Namespace) -> int:
    from memtui.cli.common import make_context
    from memtui.mcp.server import serve

    front, wire = getattr(args, "front", None) or (None, None)
    serve(make_context(), args.project, front, wire)
    return 0


def _each(args: argparse.Namespace, install: bool) -> int:
    from memtui.core.paths import resolve_paths
    from memtui.hooks import mcp_register as reg
    from memtui.hooks.install import HookError

    paths = resolve_paths()
    project = getattr(args, "only_project", None)
    project = project.expanduser().resolve() if project else None
    code = 0
    chosen = [a for a in reg.MCP_AGENTS if getattr(args, a)]
    for agent in chosen or list(reg.MCP_AGENTS):
        missing = reg.not_installed(paths, agent)
        if install and missing and not chosen:
            print(f"{agent}: skipped ({missing})")
            continue
        try:
            if agent == "claude":
                results = reg.install_claude(paths, project) if install else reg.uninstall_claude(paths)
            elif agent == "gemini":
                results = [reg.install_gemini(paths, project) if install else reg.uninstall_gemini(paths)]
            else:
                results = [reg.install_codex(paths, project) if install else reg.uninstall_codex(paths)]
        except HookError as exc:
            print(f"memtui mcp: {agent}: {exc}", file=sys.stderr)
            code = 2
            continue
        for result in results:
            print(result.message())
    return code


def run_install(args: argparse.Namespace) -> int:
    return _each(args, install=True)


def run_uninstall(args: argparse.Namespace) -> int:
    return _each(args, install=False)


def run_status(args: argparse.Namespace) -> int:
    from memtui.cli.common import print_json
    from memtui.core.paths import resolve_paths
    from memtui.hooks.mcp_register import status

    found = status(resolve_paths())
    if args.json:
        print_json([s.model_dump(mode="json") for s in found])
        return 0
    for s in found:
        print(f"{s.agent:<7} {'registered' if s.installed else 'not registered':<15} {s.path}  ({s.detail})")
    return 0
