"""Open a file in the person's ``$EDITOR`` or ``$PAGER`` with the UI suspended (lazygit's ``e`` and ``o``)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from textual.app import App, SuspendNotSupported


def command_for(path: Path, *, pager: bool = False, line: int | None = None) -> list[str] | None:
    """The command line: ``$VISUAL``/``$EDITOR`` (or ``$PAGER``, then ``less``), at ``line`` when known."""
    names = ("PAGER",) if pager else ("VISUAL", "EDITOR")
    raw = next((os.environ[n] for n in names if os.environ.get(n, "").strip()), "")
    if not raw and pager:
        raw = "less" if shutil.which("less") else ""
    if not raw:
        return None
    cmd = shlex.split(raw)
    prog = Path(cmd[0]).name
    if line and prog in ("vi", "vim", "nvim", "nano", "emacs", "less", "hx", "micro", "kak"):
        cmd.append(f"+{line}")
    return [*cmd, str(path)]


def run_suspended(app: App, cmd: list[str]) -> str:
    """Run ``cmd`` on the real terminal while the app is suspended; '' when it exited 0, else why not.

    Where the driver cannot suspend (headless tests, some web drivers) the command runs without a terminal."""
    try:
        try:
            with app.suspend():
                done = subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            done = subprocess.run(cmd, check=False, stdin=subprocess.DEVNULL, capture_output=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {cmd[0]}: {exc}"
    return "" if done.returncode == 0 else f"{cmd[0]} exited with status {done.returncode}"
