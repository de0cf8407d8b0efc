"""What the agents run when a session ends: start memtui's background worker and return at once.

Kept to the standard library (no settings, no database, no CLI parser: ``memtui``'s full start-up imports the
OpenAI SDK and takes seconds on a busy machine), so the agent is not kept waiting. Usage, as written into the
agents' settings by ``memtui hooks install``::

    python -m memtui.hook_entry --home HOME --from claude|codex|gemini [-- PREVIOUS_NOTIFY_ARGV...] [CODEX_JSON]

Codex appends its JSON notification as the last argument; the previous ``notify`` program, if any, gets it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PENDING = "pending"
STATE_DIR = "hooks"
FIRED_SUFFIX = ".fired"  # <agent>.fired: its mtime is when the agent last ran the hook (``memtui hooks status``)
LOG = Path("logs") / "hooks.log"


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


def spawn_detached(argv: list[str], log: Path | None = None) -> None:
    """Start ``argv`` in its own session with no tie to the caller's terminal or pipes, and do not wait for it."""
    err: int = subprocess.DEVNULL
    fd = None
    if log is not None:
        _private_dir(log.parent)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        err = fd
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        if fd is not None:
            os.close(fd)


def own_dirs(home: Path) -> tuple[str, ...]:
    """The folders memtui runs its own model sessions in: ``selfcalls.own_dirs`` without its imports (a test keeps
    the two equal). A session there ending must not start another round of memtui work."""
    return tuple(os.path.realpath(p) for p in (home / "work", home / "memories"))


def _session_cwd(agent: str, rest: list[str]) -> str:
    if agent == "codex" and rest:
        try:
            payload = json.loads(rest[-1])
        except ValueError:
            payload = None
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if isinstance(cwd, str):
            return cwd
    return os.getcwd()  # Claude Code runs the hook in the session's folder


def is_memtui_session(home: Path, agent: str, rest: list[str]) -> bool:
    try:
        cwd = os.path.realpath(_session_cwd(agent, rest))
    except OSError:
        return False
    return any(cwd == d or cwd.startswith(d + os.sep) for d in own_dirs(home))


def run_hook(home: Path, agent: str, rest: list[str]) -> None:
    """Chain to the agent's previous notify program (Codex: ``rest`` = its argv + the JSON), mark a run as pending,
    start the worker. No database, no waiting, no output."""
    if agent == "codex" and len(rest) > 1:
        spawn_detached(rest)
    if is_memtui_session(home, agent, rest):
        return  # memtui's own model call ending (Phase 1 through the codex CLI): no new round
    state = home / STATE_DIR
    _private_dir(state)
    os.close(os.open(state / f"{agent}{FIRED_SUFFIX}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    fd = os.open(state / PENDING, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, agent.encode())
    os.close(fd)
    spawn_detached([sys.executable, "-m", "memtui", "--home", str(home), "hooks", "work"], home / LOG)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    home: Path | None = None
    agent = ""
    session_end = False
    while args and args[0] in ("--home", "--from", "--session-end"):
        if args[0] == "--session-end":  # Codex's SessionEnd hook: JSON on stdin, run in the session's folder
            session_end, args = True, args[1:]
            continue
        flag, value = args[0], args[1] if len(args) > 1 else ""
        args = args[2:]
        if flag == "--home":
            home = Path(value)
        else:
            agent = value
    if args[:1] == ["--"]:
        args = args[1:]
    if home is None or agent not in ("claude", "codex", "gemini"):
        return 0  # a hook must never fail the agent
    os.umask(0o077)
    if session_end:
        args = []  # nothing to chain to, and the session's folder is the working directory (as Claude Code's)
    try:
        run_hook(home, agent, args)
    except OSError:
        pass  # the next session tries again
    return 0


if __name__ == "__main__":
    sys.exit(main())
