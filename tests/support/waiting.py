"""Waiting on events, never on wall-clock margins: how the suite stays green on a loaded two-core machine.

A test waits for the thing it needs (a file appearing, a request reaching the fake model, a row in state.sqlite, a
line on a pipe, a process exiting) and gives every wait the same generous ``HANG_GUARD``: a safety net that stops a
broken run from hanging the suite, never a margin a correct but slow run must beat. A model call a test needs to be
"in flight" blocks on a ``Gate`` the test opens, not on a ``delay=`` the test must outrun.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterable

HANG_GUARD = 600.0  # seconds: only a hang takes this long, however loaded the machine
POLL = 0.02


def wait_until(
    predicate: Callable[[], object],
    what: str,
    *,
    proc: subprocess.Popen | None = None,
    timeout: float = HANG_GUARD,
) -> None:
    """Return once ``predicate()`` holds. Fails at once when ``proc`` exits first (with what it printed), and after
    ``timeout`` (a hang) naming ``what`` it waited for."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            if predicate():  # it happened just before the exit
                return
            try:  # what it printed, for the message (a child it left behind may hold the pipes open)
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                out = err = "(pipes held open by a child)"
            raise AssertionError(f"the process exited ({proc.returncode}) before {what}: {out!r} {err!r}")
        if time.monotonic() > deadline:
            raise AssertionError(f"hung: {what} did not happen in {timeout:.0f} s")
        time.sleep(POLL)


def communicate_all(procs: Iterable[subprocess.Popen], timeout: float = HANG_GUARD) -> list[tuple[int, str, str]]:
    """Each process's (returncode, stdout, stderr), in order, once it exits; whatever is left is killed on a hang."""
    procs = list(procs)
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outs


class Gate:
    """Holds a thread (a fake model's reply, a lock holder) until the test opens it: ``reached`` says it arrived.

    Use as a context manager so the gate always opens when the test ends, even on a failure (no thread left waiting).
    """

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._open = threading.Event()

    def hold(self) -> None:
        """Called by the held thread: signal arrival, then block until opened (the guard only stops a hang)."""
        self.reached.set()
        self._open.wait(HANG_GUARD)

    def wait_reached(self, what: str = "the gate") -> None:
        if not self.reached.wait(HANG_GUARD):
            raise AssertionError(f"hung: {what} was never reached")

    def open(self) -> None:
        self._open.set()

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.open()
