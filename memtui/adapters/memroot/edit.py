"""A person's own edit of a memory file: saved under the memory-root lock, never over a change they did not see.

The editor keeps the hash of what it loaded. ``save_file`` writes only if the file on disk still has that hash;
otherwise it raises ``SaveConflict`` carrying what is on disk now, so the person can reload, overwrite (save again
with the new hash) or look at the difference. While Phase 2 or a decision holds the root, a save waits briefly and
then raises ``MemoryRootBusy``: the text stays in the editor.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path

from pydantic import BaseModel

from memtui.adapters.memroot.files import write_if_changed
from memtui.adapters.memroot.lock import memory_root_lock
from memtui.core.hidden import strip_hidden

SAVE_WAIT_SECONDS = 1.0


class LoadedFile(BaseModel):
    text: str
    sha256: str | None  # None: the file did not exist


class SaveConflict(RuntimeError):
    """The file changed on disk since the editor loaded it."""

    def __init__(self, rel: str, disk: LoadedFile) -> None:
        self.rel = rel
        self.disk = disk
        what = "was deleted" if disk.sha256 is None else "changed on disk"
        super().__init__(f"{rel} {what} since you opened it; nothing was saved")


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _path(root: Path, rel: str) -> Path:
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()) or ".git" in Path(rel).parts:
        raise ValueError(f"{rel!r} is not a file of the memory root")
    return root / rel


def load_file(root: Path, rel: str) -> LoadedFile:
    path = _path(root, rel)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return LoadedFile(text="", sha256=None)
    return LoadedFile(text=data.decode("utf-8", errors="replace"), sha256=digest(data))


def save_file(root: Path, rel: str, text: str, expected_sha256: str | None, *, wait: float = SAVE_WAIT_SECONDS) -> str:
    """Write ``text`` if the file still has ``expected_sha256`` (None: still absent); returns the new hash."""
    path = _path(root, rel)
    with memory_root_lock(root, f"saving {rel}", wait=wait):
        disk = load_file(root, rel)
        if disk.sha256 != expected_sha256:
            raise SaveConflict(rel, disk)
        data = _strip_edited(text, disk.text).encode("utf-8")
        write_if_changed(path, data)  # atomic: a reader sees the old file or the new one
        return str(digest(data))


def _strip_edited(text: str, disk_text: str) -> str:
    """``text`` with hidden characters removed from the lines the person changed (pasted invisible characters never
    reach the memory root); a line the file already held is written back exactly as it was."""
    held = set(disk_text.splitlines())
    out = []
    for line in text.splitlines(keepends=True):
        body = line.splitlines()[0] if line.splitlines() else ""
        out.append(line if body in held else strip_hidden(body).text + line[len(body) :])
    return "".join(out)


def difference(rel: str, disk_text: str, editor_text: str) -> str:
    """Unified diff from what is on disk to what the editor holds (what an overwrite would do)."""
    lines = difflib.unified_diff(
        disk_text.splitlines(keepends=True),
        editor_text.splitlines(keepends=True),
        fromfile=f"a/{rel} (on disk)",
        tofile=f"b/{rel} (your editor)",
    )
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return f"diff --git a/{rel} b/{rel}\n{body}" if body else ""
