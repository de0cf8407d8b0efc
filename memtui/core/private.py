"""Private by default: memtui's home holds distilled transcripts, so nobody else on the machine may read it.

Directories memtui creates are 0700 and files 0600. ``private_umask`` makes that hold for every file the process
creates (SQLite's database, WAL and SHM, git objects, temp files); the helpers here set the modes explicitly too, so
domain code called as a library is private without the umask. ``tighten_home`` fixes a home made by an older version.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
PRIVATE_UMASK = 0o077


@contextmanager
def private_umask() -> Iterator[None]:
    """Files and directories created inside are readable by their owner only; the old umask comes back after."""
    old = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) as 0700; an existing directory is left as it is (see tighten_home)."""
    if path.is_dir():
        return
    if not path.parent.exists():
        make_private_dir(path.parent)
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        return
    os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask; be exact


def create_private_file(path: Path) -> None:
    """Make sure ``path`` exists as a 0600 file before another library creates it with its default mode (SQLite
    copies the database file's mode to its -wal and -shm files)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, PRIVATE_FILE_MODE)


def write_private_bytes(path: Path, data: bytes) -> None:
    """Write a new or replaced file memtui owns, 0600 from its first byte."""
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fd, PRIVATE_FILE_MODE)
        fh.write(data)


def _loose(mode: int) -> bool:
    return bool(mode & 0o077)


def tighten_home(home: Path, memory_root: Path) -> list[str]:
    """Take group and other bits off the home and everything memtui keeps in it (a home made 0755/0644 by an
    older memtui). Returns what was changed, for the caller to say so; empty when the home was already private.

    Only the home's own mode is checked first, so a private home costs one ``stat`` per run."""
    try:
        st = home.stat()
    except FileNotFoundError:
        return []
    if not _loose(st.st_mode) and not (memory_root.exists() and _loose(memory_root.stat().st_mode)):
        return []
    changed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(home):
        for name in [".", *dirnames, *filenames]:
            path = Path(dirpath) if name == "." else Path(dirpath) / name
            try:
                lst = path.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(lst.st_mode) or not _loose(lst.st_mode):
                continue
            mode = stat.S_IMODE(lst.st_mode)
            os.chmod(path, mode & ~0o077)
            changed.append(f"{path} {mode:04o} -> {mode & ~0o077:04o}")
    return changed
