"""Running an agent CLI as a subprocess: timeout, cancel, whole-process-group kill, failure classification."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.llm.backends.base import BackendError, FailureKind

# Wording the CLIs use, from their public issue trackers (see codex_cli.py / claude_cli.py for the sources):
# codex: "Not logged in", a 401 from the backend; "You've hit your usage limit ...", "Quota exceeded".
# claude: "Invalid API key · Please run /login"; "Claude AI usage limit reached|<epoch>", "You've hit your limit · resets".
_NOT_LOGGED_IN = re.compile(
    r"not logged in|please run /login|run `?codex login|invalid api key|\b401\b|unauthori[sz]ed|"
    r"missing api key|could not resolve authentication",
    re.IGNORECASE,
)
_LIMITED = re.compile(
    r"usage limit|rate limit|hit your limit|limit reached|quota exceeded|too many requests|\b429\b|overloaded",
    re.IGNORECASE,
)
MAX_REASON = 400
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def classify(text: str, default: FailureKind = FailureKind.ERROR) -> FailureKind:
    if _NOT_LOGGED_IN.search(text):
        return FailureKind.NOT_LOGGED_IN
    if _LIMITED.search(text):
        return FailureKind.RATE_LIMITED
    return default


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


@dataclass
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float


def which_or_fail(command: str) -> str:
    exe = shutil.which(command)
    if exe is None:
        raise BackendError(
            FailureKind.NOT_INSTALLED, f"`{command}` is not on PATH; install it or set another provider (memtui config)"
        )
    return exe


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL it when memtui dies, even by ``kill -9``, so no CLI is orphaned."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_cli(
    argv: list[str],
    *,
    stdin: bytes,
    cwd: Path,
    timeout: float,
    should_stop: Callable[[], str | None] | None = None,
    poll: float = 0.25,
    env: dict[str, str] | None = None,
) -> Completed:
    """Run ``argv`` (its first element looked up on PATH) in its own process group, prompt on stdin.

    A timeout or a stop request kills the whole group (the CLI and anything it spawned) and raises
    ``BackendError``; nothing is left running behind memtui. ``env``: the CLI's whole environment (default: ours).
    """
    exe = which_or_fail(argv[0])
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            exe,
            *argv[1:],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise BackendError(FailureKind.NOT_INSTALLED, f"cannot run `{argv[0]}`: {exc}") from exc
    task = asyncio.ensure_future(proc.communicate(stdin))
    try:
        while True:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                raise BackendError(FailureKind.TIMEOUT, f"`{argv[0]}` did not finish within {timeout:g}s; killed")
            done, _ = await asyncio.wait({task}, timeout=min(poll, left))
            if done:
                break
            if should_stop is not None and (why := should_stop()):
                raise BackendError(FailureKind.ERROR, f"stopped: {why}")
    except BaseException:
        _kill_group(proc)
        task.cancel()
        with contextlib.suppress(BaseException):
            await proc.wait()
        raise
    out, err = task.result()
    _kill_group(proc)  # anything the CLI left behind in its group
    return Completed(proc.returncode or 0, out or b"", err or b"", time.monotonic() - started)


def probe(
    argv: list[str], timeout: float = 15.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str] | None:
    """A quick synchronous status command (``codex login status``); None when it cannot run at all."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        return subprocess.run(
            [exe, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def json_lines(data: bytes) -> list[dict[str, Any]]:
    """Every line of ``data`` that is a JSON object (progress text and blank lines skipped)."""
    out = []
    for line in data.splitlines():
        line = line.strip()
        if line.startswith(b"{"):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out
