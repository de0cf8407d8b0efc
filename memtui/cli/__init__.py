"""``memtui`` command line: parse flags, call the domain, print. No pipeline logic lives here.

Each sub-command is a module ``memtui/cli/<name>_cmd.py`` exposing ``register(subparsers)``, listed with its help
line in ``COMMANDS``; a run imports only the module of the command it names (none for the help or the UI).
With no sub-command the terminal UI opens on the configured MEMTUI_HOME.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sqlite3
import sys
from pathlib import Path

from memtui import __version__

# The settings, paths and state modules (pydantic among them) load in main() after the arguments are parsed, so a
# command can start its work first: `memtui mcp` answers its client's handshake while they load.

COMMANDS: dict[str, str] = {  # name -> the one line `memtui --help` shows; its module is memtui/cli/<name>_cmd.py
    "ingest": "index rollouts from CODEX_HOME and CLAUDE_CONFIG_DIR (incremental)",
    "status": "counts of threads, jobs, outputs and the Phase 2 state",
    "config": "print the effective settings and their origins",
    "phase1": "extract memories from eligible rollouts",
    "phase2": "consolidate memories (agent or --offline); the result awaits `memtui review`",
    "review": "show, approve or reject the consolidation awaiting review; commit your edits",
    "cite": "parse, check and record memory citations in an agent's answer",
    "export": "hand the memory to agents: a prompt block or an AGENTS.md / CLAUDE.md / GEMINI.md section",
    "demo": "build a demo home from bundled sample rollouts and open the UI on it",
    "doctor": "check the home; --reset-state moves a broken database aside",
    "batch": "status, collect or cancel Phase 1 batches",
    "lint": "flag memory that would leak across projects, and untrusted statements",
    "search": "full-text search over the approved memory and your past sessions (bm25)",
    "mcp": "stdio MCP server: memory_search, memory_read, memory_cite and the read-path resource",
    "hooks": "agent hooks that run ingest and Phase 1 after each session (install, status)",
    "history": "decisions on the memory; show, restore or purge past versions",
    "forget": "forget a rollout: its memory goes now, what was derived from it with the next reviewed Phase 2 run",
    "retention": "remove stage-1 outputs unused for max_unused_days, and forget rollouts whose memory was turned off",
    "health": "whether each memory helps: cited, restated, contradicted, corrected, stale",  # memory health
}
LISTED = "(listed)"  # build_parser's ``only`` for the command list alone: every command named, none imported


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``only=None``: what the docs are generated from), of one command, or, with
    ``only=LISTED``, the command list alone: each command's name and help line from ``COMMANDS``, its module not
    imported. That list is what ``memtui --help``, ``memtui`` (the UI) and a mistyped command need, and importing
    every command's module (model clients, git, the redaction and health rules) took seconds."""
    parser = argparse.ArgumentParser(
        prog="memtui",
        description="Curate the long-term memory of coding agents. With no command, open the terminal UI.",
    )
    parser.add_argument("--version", action="version", version=f"memtui {__version__}")
    parser.add_argument("--home", type=Path, help="memtui home (default: $MEMTUI_HOME or ~/.memtui)")
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting for this run (repeatable), e.g. --set max_unused_days=14",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only == LISTED:
        for name, help_ in COMMANDS.items():
            sub.add_parser(name, help=help_, add_help=False)  # never parsed: a named command gets its own parser
        return parser
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"memtui.cli.{name}_cmd").register(sub)
    return parser


def _named_command(argv: list[str]) -> str:
    """The command ``argv`` runs, if it names one (global options may come first).

    Only that command's module is loaded, not every command's imports: an agent starting ``memtui mcp`` or a hook
    does not spend its start-up timeout (nor a person their patience) on model clients the command never uses.
    With no command, or an unknown one, ``LISTED``: the help's command list and argparse's own error need no
    command's module."""
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            previous = argv[i - 1] if i else ""
            if previous in ("--home", "--set"):
                continue
            return arg if arg in COMMANDS else LISTED
    return LISTED


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away (`| head`)


def main(argv: list[str] | None = None) -> int:
    """Run one command. A reader that closed the pipe (``memtui status | head``) ends the run quietly with
    ``EXIT_BROKEN_PIPE``, as a C program killed by SIGPIPE would, never with a traceback (Python's "Note on
    SIGPIPE": stdout goes to devnull, so the flush at exit cannot raise again)."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # the pipe's buffered output fails here, not in the interpreter's shutdown
        return code
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file (a test's capture): nothing to flush
        pass


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_named_command(argv))
    args = parser.parse_args(argv)
    if args.home:
        os.environ["MEMTUI_HOME"] = str(args.home.expanduser().resolve())
    before = getattr(args, "before_start_up", None)
    if before is not None:
        before(args)
    from memtui.core.private import private_umask

    with private_umask():  # every file this run creates (database, WAL, git objects, temp files) is 0600
        _tighten_existing_home()
        return _run(args)


def _tighten_existing_home() -> None:
    """An older memtui made the home 0755 and its files 0644: make them private once and say so."""
    from memtui.core.paths import resolve_paths
    from memtui.core.private import tighten_home

    try:
        paths = resolve_paths()
        changed = tighten_home(paths.home, paths.memory_root)
    except OSError as exc:
        print(f"memtui: could not make {exc.filename or 'the home'} private: {exc.strerror or exc}", file=sys.stderr)
        return
    if changed:
        print(
            f"memtui: {paths.home} was readable by other users; made it private "
            f"({len(changed)} file(s) and folder(s) now owner-only, e.g. {changed[0]})",
            file=sys.stderr,
        )


def _run(args: argparse.Namespace) -> int:
    from memtui.adapters.memroot.lock import MemoryRootBusy
    from memtui.cli import common
    from memtui.core.settings import SettingsError
    from memtui.state.db import StateError

    try:
        common.set_flag_overrides(args.settings)
        if not args.command:
            from memtui.tui.launch import launch

            return launch()
        return int(args.func(args) or 0)
    except MemoryRootBusy as exc:  # any command needing the memory root: busy is an answer, never a traceback
        print(f"memtui: {exc}", file=sys.stderr)
        return common.EXIT_BUSY
    except (SettingsError, StateError) as exc:
        print(f"memtui: {exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # a full disk or a database damaged while in use: say so, no traceback
        print(f"memtui: state database error: {exc}. {_db_hint(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        print(f"memtui: disk full: {exc}. Free some space and run the command again.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memtui: interrupted", file=sys.stderr)
        return 130


def _db_hint(exc: sqlite3.DatabaseError) -> str:
    text = str(exc).lower()
    if "full" in text:
        return "Free some disk space and run the command again; the failed transaction was rolled back."
    if "malformed" in text or "not a database" in text:
        return "Run `memtui doctor --reset-state` to move it aside and rebuild the index from the rollouts."
    return "Run the command again; if it persists, `memtui doctor` checks the database."
