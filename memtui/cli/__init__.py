"""``memtui`` command line: parse flags, call the domain, print. No pipeline logic lives here.

Each sub-command is a module ``memtui/cli/<name>_cmd.py`` exposing ``register(subparsers)``.
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

COMMANDS = [
    "ingest",
    "status",
    "config",
    "phase1",
    "phase2",
    "review",
    "cite",
    "export",
    "demo",
    "doctor",
    "batch",
    "lint",
    "search",
    "mcp",
    "hooks",
    "history",
    "forget",
    "retention",
    "health",  # memory health
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
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
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"memtui.cli.{name}_cmd").register(sub)
    return parser


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` runs, if it names one (global options may come first).

    Only that command's module is loaded, not every command's imports: an agent starting ``memtui mcp`` or a hook
    does not spend its start-up timeout (nor a person their patience) on model clients the command never uses.
    With no command, or an unknown one, every command is loaded for the full help and argparse's own error."""
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            previous = argv[i - 1] if i else ""
            if previous in ("--home", "--set"):
                continue
            return arg if arg in COMMANDS else None
    return None


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
