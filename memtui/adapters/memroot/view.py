"""Read-only views of the memory root: what changed, as a tree id, a file list and a diff, without the lock.

A view stages the working tree into a temporary index (``GIT_INDEX_FILE``) seeded from a copy of ``.git/index``
(so git's stat cache still answers), and writes any new objects into a temporary object folder that borrows the
repository's objects as an alternate, both in ``.<root>-views/`` next to the root. So nothing under ``.git`` is
ever written: a UI refresh can run
while Phase 2, approve or a commit holds the memory-root lock, and it never leaves a ``index.lock`` behind.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.core import clock

VIEW_PREFIX = "memtui-view-"
LEFTOVER_VIEW_SECONDS = 3600  # a view folder this old belongs to a killed process
_DIFF_FLAGS = ("--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", "--text")


class TreeView(BaseModel):
    """The working tree as a tree id, with what changed against ``base`` (a tree-ish or a run's file map)."""

    tree: str
    files: dict[str, str]  # {path: blob id}
    stat: list[tuple[str, str]]  # (A|M|D, path) against the base
    diff: str = ""  # unified diff against the base ("" when only the file list was asked for, or unavailable)


def views_dir(root: Path) -> Path:
    """Where views keep their temporary index and objects: next to the root, never inside ``.git`` (whose bytes the
    CLI agent's check compares before and after a run) nor inside the root (the agent's working tree)."""
    root = Path(root)
    return root.with_name(f".{root.name}-views")


@contextlib.contextmanager
def temporary_git_env(root: Path) -> Iterator[dict[str, str]]:
    """Environment for git commands that must not write ``.git/index`` nor ``.git/objects``."""
    git_dir = root / ".git"
    base = views_dir(root)
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=VIEW_PREFIX, dir=base))
    try:
        index = tmp / "index"
        with contextlib.suppress(FileNotFoundError):
            shutil.copyfile(git_dir / "index", index)  # git replaces the index by rename: the copy is whole
        (tmp / "objects").mkdir()
        yield {
            "GIT_INDEX_FILE": str(index),
            "GIT_OBJECT_DIRECTORY": str(tmp / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(git_dir / "objects"),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_leftover_views(root: Path, older_than: float = LEFTOVER_VIEW_SECONDS) -> int:
    """Delete view folders left by killed processes (they may hold copies of deleted content). Under the lock."""
    removed = 0
    base = views_dir(root)
    if not base.is_dir():
        return 0
    now = clock.file_time()
    for entry in base.iterdir():
        if entry.name.startswith(VIEW_PREFIX) and entry.is_dir():
            try:
                if now - entry.stat().st_mtime >= older_than:
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
            except FileNotFoundError:
                continue
    return removed


def worktree_view(
    root: Path,
    *,
    against: str = "HEAD",
    against_files: dict[str, str] | None = None,
    with_diff: bool = True,
) -> TreeView:
    """The working tree against a tree-ish (default: the baseline), read-only.

    With ``against_files`` (a run's recorded {path: blob id}) the file list comes from comparing hashes, so it is
    right even if ``against``'s objects are gone; the diff is then best effort.
    """
    if not baseline.is_usable(root):
        raise baseline.BaselineError("the memory root has no baseline yet (run Phase 2 or commit first)")
    with temporary_git_env(root) as env:
        baseline.stage_all(root, env=env)
        tree = baseline.run_git(root, "write-tree", env=env).strip()
        if against_files is not None and tree == against:  # unchanged since the run: its file map is this tree's
            files, stat = dict(against_files), []
        elif against_files is not None:
            files = baseline.tree_files(root, tree, env=env)
            stat = baseline.compare_files(against_files, files)
        else:
            files = baseline.tree_files(root, tree, env=env)
            base_files = baseline.tree_files(root, against, env=env)
            stat = baseline.compare_files(base_files, files)
        diff = ""
        if with_diff and stat:
            try:
                diff = baseline.run_git(root, "diff", *_DIFF_FLAGS, against, tree, env=env)
            except baseline.BaselineError:
                diff = ""
    return TreeView(tree=tree, files=files, stat=stat, diff=diff)
