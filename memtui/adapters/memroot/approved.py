"""The approved memory: the ONE read path for everything memtui hands to an agent.

Agents load what a person approved: the memory root's baseline commit (made by approving a run, by committing a
person's own edit, or by restoring a version through review). Never the working tree, which holds a run awaiting
review or an edit nobody committed yet. The agent-facing view (``memtui.services.agent_view``: trust, hidden text,
scope, confinement) is built on ``approved(root)``; export, the MCP server, search and the published folder read
through that view, and a structural test (``tests/test_approved_read_path.py``) fails when one of them reads the
working tree.

A snapshot pins one commit, lists its files with their blob ids, and reads blobs from git's object store with
read-only commands (``GIT_OPTIONAL_LOCKS=0``, no index), so it needs no lock and never writes ``.git``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import TEMP_MARK, temp_owner
from memtui.core.private import PRIVATE_DIR_MODE, write_private_bytes
from memtui.core.process import pid_is_dead


@dataclass(frozen=True)
class Approved:
    """One baseline commit's files: ``{path: blob id}``; empty when the memory root has no baseline yet."""

    root: Path
    commit: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    # Every blob of the snapshot, read by one git process on the first read: a view reads each file two or three
    # times (its header, its text, the search index), 4 processes a file before (a blob id's bytes never change).
    _blobs: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)

    def is_file(self, rel: str) -> bool:
        return rel in self.files

    def is_dir(self, rel: str) -> bool:
        prefix = rel.rstrip("/") + "/"
        return rel in (".", "") or any(p.startswith(prefix) for p in self.files)

    def read_bytes(self, rel: str) -> bytes | None:
        """The approved bytes of ``rel`` (a path relative to the root), or None when the baseline has no such file."""
        rel = PurePosixPath(rel).as_posix()
        blob = self.files.get(rel)
        if blob is None:
            return None
        if not self._blobs:
            with contextlib.suppress(baseline.BaselineError):  # then one by one, as below
                self._blobs.update(baseline.read_blobs(self.root, self.files.values()))
        if blob in self._blobs:
            return self._blobs[blob]
        try:
            return baseline.read_blob(self.root, blob)
        except baseline.BaselineError:  # pruned by an approve since this snapshot: read the new baseline
            fresh = approved(self.root).files.get(rel)
            try:
                return None if fresh is None else baseline.read_blob(self.root, fresh)
            except baseline.BaselineError:
                return None

    def read_text(self, rel: str) -> str | None:
        data = self.read_bytes(rel)
        return None if data is None else data.decode("utf-8", errors="replace")


def approved(root: Path) -> Approved:
    """A snapshot of the approved memory of ``root`` (no lock; a commit moved meanwhile is read whole, or retried)."""
    root = Path(root)
    for _attempt in range(3):
        if not baseline.is_usable(root):
            return Approved(root)
        try:
            commit = baseline.head_commit(root)
            return Approved(root, commit, _regular_files(root, commit))
        except baseline.BaselineError:
            continue  # an approve replaced and pruned the commit between the two reads: read the new one
    return Approved(root)


def _regular_files(root: Path, commit: str) -> dict[str, str]:
    """{path: blob id} of the commit's regular files (a committed symlink is a path, not memory an agent reads)."""
    out = baseline.run_git(root, "ls-tree", "-r", "-z", "--full-tree", commit)
    files = {}
    for entry in out.split("\0"):
        meta, sep, path = entry.partition("\t")
        mode, _kind, blob = [*meta.split(), "", "", ""][:3]
        if sep and mode in ("100644", "100755"):
            files[path] = blob
    return files


# --- the published copy: the folder agents are pointed at ---------------------------------------------------------

PUBLISHED_PREFIX = "-approved"


def published_dir(root: Path) -> Path:
    """The folder the read-path prompt names (agents ``rg`` in it): a symlink, next to the root, to a copy of the
    approved files. Never the root itself, whose working tree holds runs awaiting review and unsaved work."""
    root = Path(root)
    return root.with_name(f"{root.name}{PUBLISHED_PREFIX}")


# The copy's name says which rules built it: a copy an earlier memtui made of the same commit (the raw commit, before
# the agent-facing view) is not taken for this one.
PUBLISHED_RULES = "view1"


def _copy_name(root: Path, commit: str | None) -> str:
    return f".{root.name}{PUBLISHED_PREFIX}-{(commit or 'empty')[:16]}.{PUBLISHED_RULES}"


def _copies(root: Path) -> list[Path]:
    return sorted(root.parent.glob(f".{root.name}{PUBLISHED_PREFIX}-*"))


Render = Callable[[Approved, str], "bytes | None"]  # a file of the snapshot as agents read it (None: not at all)


def publish(root: Path, render: Render, *, variant: str = "") -> Path:
    """Make ``published_dir`` hold, for the baseline commit, each file as ``render`` makes it (the agent-facing view:
    ``memtui.services.agent_view``, never the raw commit); returns it.

    Idempotent and safe without the memory-root lock: each copy is built in its own folder named by the commit and
    swapped in by replacing the symlink (``os.replace``), so a reader sees the old copy or the new one, and copies of
    older commits (which may hold deleted text) are removed."""
    import shutil
    import tempfile

    root = Path(root)
    link = published_dir(root)
    snap = approved(root)
    name = _copy_name(root, snap.commit) + (f".{variant}" if variant else "")  # variant: what ``render`` withholds
    target = root.parent / name
    if not target.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}{TEMP_MARK}{os.getpid()}-", dir=root.parent))
        for rel in sorted(snap.files):
            data = render(snap, rel)
            if data is None:
                continue
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
            write_private_bytes(out, data)
        try:
            tmp.rename(target)
        except OSError:  # another process published the same commit meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    if not (link.is_symlink() and os.readlink(link) == name):
        if link.exists() and not link.is_symlink():
            shutil.rmtree(link) if link.is_dir() else link.unlink()
        new = root.parent / f".{link.name}.{os.getpid()}.link"
        new.unlink(missing_ok=True)
        new.symlink_to(name)
        os.replace(new, link)
    for old in _copies(root):
        if old.name != name and TEMP_MARK not in old.name:
            shutil.rmtree(old, ignore_errors=True)
    sweep_interrupted_publishes(root)
    return link


def interrupted_publishes(root: Path) -> list[Path]:
    """Folders a publish killed before its rename left beside the root: each holds a full copy of a baseline."""
    out = []
    for path in _copies(Path(root)):
        if TEMP_MARK in path.name:
            pid = temp_owner(path.name)
            if pid is None or pid_is_dead(pid):  # no pid: an older memtui's, whose process is long gone
                out.append(path)
    return out


def sweep_interrupted_publishes(root: Path) -> int:
    import shutil

    found = interrupted_publishes(root)
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return len(found)


def published(root: Path, render: Render) -> Path:
    """``published_dir``, brought up to the baseline commit first when it lags (an older memtui, a moved HEAD)."""

    link = published_dir(root)
    snap_commit = approved(root).commit
    want = _copy_name(Path(root), snap_commit)
    if link.is_symlink() and os.readlink(link).startswith(want) and (link.parent / os.readlink(link)).is_dir():
        return link  # this commit's copy (or a variant of it that withholds more)
    return publish(root, render)
