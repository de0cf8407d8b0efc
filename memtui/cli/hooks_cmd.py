"""``memtui hooks``: let Claude Code, Codex and Gemini CLI keep memory fresh (ingest + Phase 1 in the background).

``install``/``uninstall``/``status`` edit and read the agents' settings; ``run`` is what the agents call (it starts
the worker and returns at once); ``work`` is the worker. Phase 2 is never run from a hook.
"""

from __future__ import annotations

import argparse
import sys

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.core.paths import resolve_paths
from memtui.hooks.install import (
    AGENTS,
    HookError,
    gemini_absent,
    install,
    run_hook,
    run_worker,
    status,
    uninstall,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hooks", help=COMMANDS["hooks"])
    hk = p.add_subparsers(dest="hooks_command", metavar="ACTION", required=True)
    for name, func, help_ in [
        (
            "install",
            run_install,
            "add a Claude Code and a Gemini CLI SessionEnd hook and a Codex session-end hook (or notify program)",
        ),
        ("uninstall", run_uninstall, "remove them; files nobody changed since go back byte for byte"),
    ]:
        q = hk.add_parser(name, help=help_)
        q.add_argument("--claude", action="store_true", help="Claude Code ($CLAUDE_CONFIG_DIR/settings.json)")
        q.add_argument(
            "--codex",
            action="store_true",
            help="Codex ($CODEX_HOME/hooks.json, or notify in config.toml for an older codex)",
        )
        q.add_argument("--gemini", action="store_true", help="Gemini CLI (~/.gemini/settings.json)")
        q.set_defaults(func=func)
    q = hk.add_parser("status", help="which hook is installed where, and when each last fired")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run_status)
    q = hk.add_parser("run", help="(called by the agents) start the background worker and return at once")
    q.add_argument("--from", dest="agent", choices=AGENTS, required=True)
    q.add_argument("rest", nargs=argparse.REMAINDER, help="Codex: -- [previous notify argv...] JSON")
    q.set_defaults(func=run_run)
    q = hk.add_parser("work", help="(started by the hook) ingest and Phase 1 under the worker lock, quietly")
    q.set_defaults(func=run_work)


def _agents(args: argparse.Namespace) -> list:
    chosen = [a for a in AGENTS if getattr(args, a)]
    return chosen or list(AGENTS)


def _each(args: argparse.Namespace, action) -> int:
    paths = make_context().paths
    code = 0
    chosen = any(getattr(args, a) for a in AGENTS)
    for agent in _agents(args):
        if agent == "gemini" and action is install and not chosen and (absent := gemini_absent(paths)):
            print(f"gemini: skipped ({absent})")
            continue
        try:
            print(action(paths, agent).message())
        except HookError as exc:
            print(f"memtui hooks: {agent}: {exc}", file=sys.stderr)
            code = 2
    return code


def run_install(args: argparse.Namespace) -> int:
    code = _each(args, install)
    if code == 0:
        print("each agent session now ends with `memtui ingest` and `memtui phase1` in the background;")
        print("Phase 2 stays yours: run `memtui phase2` and review it when you choose.")
    return code


def run_uninstall(args: argparse.Namespace) -> int:
    return _each(args, uninstall)


def run_status(args: argparse.Namespace) -> int:
    found = status(make_context().paths)
    if args.json:
        print_json([s.model_dump(mode="json") for s in found])
        return 0
    for s in found:
        print(f"{s.agent:<7} {'installed' if s.installed else 'not installed':<14} {s.path}  ({s.detail})")
    return 0


def run_run(args: argparse.Namespace) -> int:
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    try:
        run_hook(resolve_paths(), args.agent, rest)
    except OSError:
        pass  # a hook must never fail the agent; the next session tries again
    return 0


def run_work(args: argparse.Namespace) -> int:
    from memtui.services.ingest import run_ingest
    from memtui.services.phase1.run import run_phase1
    from memtui.services.search import refresh

    ctx = make_context(creates_home=True)  # the hook's ingest is a first step too

    def work(log) -> None:
        try:
            ingest = run_ingest(ctx)
            log(
                f"ingest: {ingest.new} new, {ingest.updated} updated, {ingest.skipped} skipped in {ingest.seconds:.1f}s"
            )
            log(refresh(ctx.conn, ctx.paths.memory_root).message())
            p1 = run_phase1(ctx)
            log(f"phase1: {p1.claimed} claimed, {p1.succeeded} succeeded, {p1.noop} no-op, {p1.failed} failed")
        except Exception as exc:  # logged, never raised into a terminal nobody watches
            log(f"error: {exc.__class__.__name__}: {exc}")

    try:
        run_worker(ctx.paths, work)
    finally:
        ctx.close()
    return 0
