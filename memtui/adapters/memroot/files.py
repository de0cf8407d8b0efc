"""The memory root's file names, and the one way memtui writes a file there.

Every layer reads these names (the state's tombstones, the git baseline, the editor, the services), so they live
with the memory-root adapter rather than with the Phase 2 workspace that fills most of them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memtui.core.private import PRIVATE_FILE_MODE
from memtui.core.process import pid_is_dead

DIFF_FILENAME = "phase2_workspace_diff.md"
RAW_MEMORIES = "raw_memories.md"
ROLLOUT_SUMMARIES = "rollout_summaries"
SYNC_MANIFEST = (
    "phase2_sync.json"  # in the home, beside state.sqlite: what the last sync wrote (see sync_rollout_summaries)
)
MEMORY_MD = "MEMORY.md"
MEMORY_SUMMARY = "memory_summary.md"
TOMBSTONES = "tombstones.md"  # memory lines a person deleted (services/phase2/prompt_inputs.py)


TEMP_MARK = ".tmp-"  # an atomic write's temp file is ``.<name>.tmp-<pid>``; a publish's folder ``<name>.tmp-<pid>-*``


def temp_name(name: str) -> str:
    return f".{name}{TEMP_MARK}{os.getpid()}"


def temp_owner(name: str) -> int | None:
    """The pid a temp file or folder name records (None: not a temp name, or one without a pid)."""
    if TEMP_MARK not in name:
        return None
    digits = name.rsplit(TEMP_MARK, 1)[1].split("-", 1)[0]
    return int(digits) if digits.isdigit() else None


def interrupted_writes(root: Path) -> list[Path]:
    """Temp files a process killed between write and rename left in the memory root (outside ``.git``): each holds
    the full text it was writing, so none may outlive a forget. A temp file of a live process is not one."""
    if not root.is_dir():
        return []
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            if name.startswith(".") and (pid := temp_owner(name)) is not None and pid_is_dead(pid):
                out.append(Path(dirpath) / name)
    return sorted(out)


def sweep_interrupted_writes(root: Path) -> int:
    """Remove ``interrupted_writes(root)``; returns how many."""
    found = interrupted_writes(root)
    for path in found:
        path.unlink(missing_ok=True)
    return len(found)


def write_if_changed(path: Path, data: str | bytes) -> bool:
    """Write ``data`` unless the file already holds exactly these bytes; True when written.

    Atomic (temp file + rename): a reader, or a process killed mid-write, sees the old bytes or the new ones.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_size == len(raw):
            with open(path, "rb") as fh:
                if fh.read() == raw:
                    return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(temp_name(path.name))
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, PRIVATE_FILE_MODE)  # 0600 whatever the umask
        os.fchmod(fd, PRIVATE_FILE_MODE)  # also a stale temp file left by a kill
        os.close(fd)
        tmp.write_bytes(raw)
        os.replace(tmp, path)
    except BaseException:  # disk full, read-only...: no half-written temp file stays behind in the memory root
        tmp.unlink(missing_ok=True)
        raise
    return True
