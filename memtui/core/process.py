"""Whether a process on this host is provably gone: what lets a leftover of a killed process be cleaned up."""

from __future__ import annotations

import os


def pid_is_dead(pid: int) -> bool:
    """True only when it is provable: no such process, or a zombie (a killed child nobody reaped yet still answers
    signal 0). A process we may not signal counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
