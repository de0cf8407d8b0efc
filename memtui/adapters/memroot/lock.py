"""ONE lock for the memory root: every write to it, and every git command that writes its index, runs inside it.

Phase 2 (sync, agent, undo), approve, reject, a manual commit and an editor save each take it, so none of them
interleave. It is a POSIX ``flock`` on ``<root's parent>/.<root name>.lock``: next to the root, never inside it, so
neither the agent's listing nor a replaced ``.git`` ever sees or deletes it, and the kernel releases it when its holder
dies (a killed process never leaves it held). Each hold opens its own file description, so two threads of one
process contend exactly like two processes; the thread that holds it may re-enter (Phase 2's auto-approve).

Contention is not a failure. ``MemoryRootBusy`` names the holder and says to retry shortly; callers report it as
"busy" and never as a failure that starts a retry backoff. Readers never take the lock: they diff through a
temporary index (``memtui.adapters.memroot.view``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memtui.core import clock

DEFAULT_WAIT_SECONDS = 2.0  # a person's action (approve, reject, commit, save) waits this long for the root
PHASE2_WAIT_SECONDS = 5.0
_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Holder:
    """Who holds the memory root (read from the lock file; only meaningful while the lock is held)."""

    purpose: str
    pid: int
    host: str
    since: float

    def describe(self) -> str:
        where = f"pid {self.pid}" if self.host == socket.gethostname() else f"pid {self.pid} on {self.host}"
        return f"{self.purpose} ({where}, for {max(0, int(clock.file_time() - self.since))} s)"


class MemoryRootBusy(RuntimeError):
    """The memory root is in use by another memtui action (or a live git process): retry shortly. Not a failure."""

    def __init__(self, purpose: str, holder: Holder | None = None, detail: str | None = None) -> None:
        self.purpose = purpose
        self.holder = holder
        if detail is None:
            detail = f"{holder.describe()} is using the memory root" if holder else "the memory root is in use"
        super().__init__(f"busy: {detail}; {purpose} did not start, nothing changed. Retry shortly.")


def lock_path(root: Path) -> Path:
    root = Path(os.path.abspath(root))
    return root.with_name(f".{root.name}.lock")


class _Holds(threading.local):
    def __init__(self) -> None:
        self.depth: dict[str, int] = {}


_holds = _Holds()


def held(root: Path) -> bool:
    """True when the calling thread holds the memory-root lock of ``root``."""
    return _holds.depth.get(str(lock_path(root)), 0) > 0


def read_holder(root: Path) -> Holder | None:
    """The current holder, or None when nobody holds the lock (stale holder text of a dead process is ignored)."""
    path = lock_path(root)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: its text is current
        else:
            return None
        raw = os.pread(fd, 4096, 0)
    finally:
        os.close(fd)
    try:
        d = json.loads(raw or b"{}")
        return Holder(str(d["purpose"]), int(d["pid"]), str(d["host"]), float(d["since"]))
    except (ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def memory_root_lock(root: Path, purpose: str, *, wait: float = DEFAULT_WAIT_SECONDS) -> Iterator[None]:
    """Hold the memory root for ``purpose``; wait up to ``wait`` seconds, then raise ``MemoryRootBusy``."""
    path = lock_path(root)
    key = str(path)
    if _holds.depth.get(key, 0) > 0:  # re-entry by the holding thread
        _holds.depth[key] += 1
        try:
            yield
        finally:
            _holds.depth[key] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise MemoryRootBusy(purpose, read_holder(root)) from None
                time.sleep(_POLL_SECONDS)
        me = {"purpose": purpose, "pid": os.getpid(), "host": socket.gethostname(), "since": clock.file_time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        _holds.depth[key] = 1
        try:
            yield
        finally:
            _holds.depth.pop(key, None)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


# --- git's own index.lock ---------------------------------------------------------------------------------------


def _opened_by_a_process(path: Path) -> bool | None:
    """Whether any process has ``path`` open (Linux ``/proc``); None when that cannot be told.

    git keeps ``index.lock`` open from creating it until it renames it over the index, so a live writer shows up
    here. Processes of other users whose descriptors we cannot read are skipped: they cannot write our ``.git``.
    """
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    target = os.path.realpath(path)
    uid = os.getuid()
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(os.path.join(entry.path, "fd"))
        except FileNotFoundError:
            continue  # exited meanwhile
        except PermissionError:
            try:
                if uid != 0 and os.stat(entry.path).st_uid != uid:
                    continue
            except OSError:
                continue
            return None  # one of ours we cannot inspect: no proof
        with fds:
            for fd in fds:
                try:
                    if os.readlink(fd.path) == target:
                        return True
                except OSError:
                    continue
    return False


def clear_stale_index_lock(root: Path, stale_after: float, *, purpose: str = "") -> bool:
    """Remove ``.git/index.lock`` only when provably stale; True when one was removed.

    Provably stale means all of: this thread holds the memory-root lock (so no memtui process is running git on the
    index; UI diffs use a temporary index), the file is older than ``stale_after`` seconds (the setting
    ``index_lock_stale_seconds``), and no process has it open (Linux ``/proc``; skipped where it cannot be told).
    Otherwise a live git process (a person's own ``git`` in the root) may own it: ``MemoryRootBusy``.
    """
    if not held(root):
        raise RuntimeError("clear_stale_index_lock needs the memory-root lock")
    lock = Path(root) / ".git" / "index.lock"
    try:
        age = clock.file_time() - lock.stat().st_mtime
    except (FileNotFoundError, NotADirectoryError):  # no index.lock, or no usable .git (rebuilt later)
        return False
    if age < stale_after:
        why = f"git's index.lock in the memory root is {int(age)} s old and may belong to a running git process"
    elif _opened_by_a_process(lock):
        why = "a running process holds git's index.lock in the memory root open"
    else:
        lock.unlink(missing_ok=True)
        return True
    raise MemoryRootBusy(purpose or "this action", detail=why)
