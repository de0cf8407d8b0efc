"""The memory root's private git repository: one parentless baseline commit, diffed against the working tree.

Every command runs the git CLI (a plain subprocess: GitPython took longer to import than a read-only command's whole
run) with memtui's own identity, hooks off and no user or system configuration, and with ``GIT_DIR``/``GIT_WORK_TREE``
pinned so git never wanders into an enclosing repository.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from memtui.adapters.memroot.files import DIFF_FILENAME
from memtui.core.private import PRIVATE_DIR_MODE, write_private_bytes

IDENTITY = "memtui"
EMAIL = "memtui@localhost"
BASELINE_MESSAGE = "memtui memory baseline"
_CONFIG = [
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.quotepath=off",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "gc.auto=0",
    "-c", "commit.gpgsign=false",
    "-c", "core.sharedRepository=0600",  # git objects, refs and index readable by the owner only
    "-c", "diff.noprefix=false",
    "-c", "diff.renames=false",
    "-c", "advice.detachedHead=false",
    "-c", f"user.name={IDENTITY}",
    "-c", f"user.email={EMAIL}",
]  # fmt: skip


class BaselineError(RuntimeError):
    """A git operation on the memory root failed; the message carries git's own words."""


def _env(root: Path) -> dict[str, str]:
    if not root.is_absolute():  # git runs in the root: a relative git dir would name a folder inside it
        raise BaselineError(f"the memory root {root} is not an absolute path; memtui resolves it at start-up")
    return {
        "GIT_DIR": str(root / ".git"),
        "GIT_WORK_TREE": str(root),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": IDENTITY,
        "GIT_AUTHOR_EMAIL": EMAIL,
        "GIT_COMMITTER_NAME": IDENTITY,
        "GIT_COMMITTER_EMAIL": EMAIL,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
    }


def run_git(root: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run ``git <args>`` in the memory root; stdout decoded leniently (memory files may hold any bytes).

    ``env`` adds variables, e.g. a temporary ``GIT_INDEX_FILE`` for a read-only view.
    """
    out = run_git_bytes(root, *args, check=check, env=env)
    return out.decode("utf-8", "replace")


def run_git_bytes(root: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> bytes:
    """``run_git`` with stdout as the exact bytes git wrote (a blob read back byte for byte)."""
    cwd = root if os.access(root, os.X_OK) else None  # git needs no cwd: GIT_DIR and GIT_WORK_TREE are pinned
    try:
        done = subprocess.run(
            ["git", *_CONFIG, *args],
            cwd=cwd,
            env={**os.environ, "LANGUAGE": "C", **_env(root), **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    except FileNotFoundError as exc:
        raise BaselineError(f"git {' '.join(args[:2])} could not start: {exc} (is git installed and on PATH?)") from exc
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace")
        raise BaselineError(f"git {' '.join(args[:2])} failed ({done.returncode}): {message.strip()}")
    return done.stdout


def read_blob(root: Path, blob: str) -> bytes:
    """The bytes of one blob of the memory root's object store (read-only; BaselineError when it is gone)."""
    return run_git_bytes(root, "cat-file", "blob", blob)


def read_blobs(root: Path, blobs: Iterable[str]) -> dict[str, bytes]:
    """The bytes of many blobs from one ``git cat-file --batch`` (one process, not one per file); a blob the
    object store no longer holds is left out."""
    wanted = sorted(set(blobs))
    if not wanted:
        return {}
    try:
        done = subprocess.run(
            ["git", *_CONFIG, "cat-file", "--batch"],
            cwd=root if os.access(root, os.X_OK) else None,
            env={**os.environ, "LANGUAGE": "C", **_env(root)},
            input="".join(f"{b}\n" for b in wanted).encode(),
            capture_output=True,
        )
    except FileNotFoundError as exc:
        raise BaselineError(f"git cat-file could not start: {exc} (is git installed and on PATH?)") from exc
    if done.returncode != 0:
        raise BaselineError(
            f"git cat-file failed ({done.returncode}): {done.stderr.decode('utf-8', 'replace').strip()}"
        )
    out, at, found = done.stdout, 0, {}
    for blob in wanted:  # git answers in the order asked: "<id> blob <size>\n<bytes>\n" or "<id> missing\n"
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found[blob] = out[at : at + size]
            at += size + 1
    return found


def _write_exclude(root: Path) -> None:
    info = root / ".git" / "info"
    info.mkdir(parents=True, exist_ok=True)
    want = f"/{DIFF_FILENAME}\n.*.tmp-*\n"  # and the temp file of an atomic write cut short by a kill
    exclude = info / "exclude"
    if not exclude.is_file() or exclude.read_text(errors="replace") != want:
        write_private_bytes(exclude, want.encode())


# What staging leaves out, by pathspec rather than by ignore rules: memtui's own diff file and the temp file of an
# atomic write cut short by a kill. Nothing else: ``--force`` makes git ignore every ``.gitignore``, ``info/exclude``
# and ``core.excludesFile``, so no file in the memory root can hide from a review, a commit or an approve.
STAGE_EXCLUDES = (f":(exclude,top){DIFF_FILENAME}", ":(exclude,glob,top)**/.*.tmp-*")


def stage_all(root: Path, *, env: dict[str, str] | None = None, keep: tuple[str, ...] = ()) -> None:
    """``git add -A`` of every file of the working tree, ignored and hidden ones included (``keep``: paths left as
    the index has them)."""
    excludes = [f":(exclude,top){p}" for p in keep]
    run_git(root, "add", "-A", "--force", "--", ":/", *STAGE_EXCLUDES, *excludes, env=env)


def head_commit(root: Path) -> str:
    return run_git(root, "rev-parse", "--verify", "HEAD^{commit}").strip()


def is_usable(root: Path) -> bool:
    """True when ``.git`` opens and HEAD's tree can be read."""
    if not (root / ".git").is_dir():
        return False
    try:
        run_git(root, "cat-file", "-e", "HEAD^{tree}")
    except BaselineError:
        return False
    return True


def reset_baseline(root: Path, message: str = BASELINE_MESSAGE) -> str:
    """Make the current tree the only commit (no parents); objects only the old baseline held are pruned.

    Destructive on purpose: content deleted from the workspace leaves no object behind. A usable repository is
    re-committed in place and HEAD moves with one atomic ``update-ref``, so a process killed at any point leaves
    either the old or the new baseline, never a repository without one. A missing or broken ``.git`` is replaced.
    The caller removes the diff file first; it is also excluded, so it can never be committed.
    """
    root.mkdir(parents=True, exist_ok=True)
    if is_usable(root):
        _write_exclude(root)
        stage_all(root)
        return _commit_index_as_only_commit(root, message)
    dot_git = root / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        shutil.rmtree(dot_git)
    elif dot_git.exists() or dot_git.is_symlink():
        dot_git.unlink()
    run_git(root, "init", "-q", "--initial-branch=baseline", "--shared=0600")
    os.chmod(dot_git, PRIVATE_DIR_MODE)
    _write_exclude(root)
    stage_all(root)
    run_git(root, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    _publish(root)
    return head_commit(root)


# What follows a move of the baseline: the read path (``memtui.adapters.memroot.approved``) registers its publish here, so
# agents' copy of the approved files follows at once (text deleted from the baseline leaves it); git stays below it.
_AFTER_MOVE: list[Callable[[Path], object]] = []


def after_move(hook: Callable[[Path], object]) -> None:
    """Run ``hook(root)`` whenever the baseline moves; a failing hook is left for the read path to catch up."""
    if hook not in _AFTER_MOVE:
        _AFTER_MOVE.append(hook)


def _publish(root: Path) -> None:
    """The baseline moved: agents' copy of the approved files follows now; if that fails, the next read path brings
    it up to date (``memtui.adapters.memroot.approved.published``)."""
    for hook in _AFTER_MOVE:
        try:
            hook(root)
        except (OSError, BaselineError, tarfile.TarError):
            pass


def ensure_baseline(root: Path) -> str:
    """Keep a usable ``.git``; otherwise (missing, corrupt, empty dir, unborn HEAD) start a baseline of the files.

    A writer: call it under the memory-root lock (``memtui.adapters.memroot.lock``), which also decides whether a leftover
    ``index.lock`` is stale.
    """
    root.mkdir(parents=True, exist_ok=True)
    if not is_usable(root):
        return reset_baseline(root)
    _write_exclude(root)
    return head_commit(root)


_STATUS = {"A": "A", "M": "M", "D": "D", "T": "M"}


def changes(root: Path) -> list[tuple[str, str]]:
    """(A|M|D, path) of the working tree against the baseline commit, deletions included, sorted by path."""
    stage_all(root)
    out = run_git(root, "diff", "--cached", "--name-status", "--no-renames", "-z", "HEAD")
    parts = out.split("\0")
    result = [(_STATUS.get(parts[i][:1], "M"), parts[i + 1]) for i in range(0, len(parts) - 1, 2) if parts[i]]
    return sorted(result, key=lambda c: c[1])


def diff_text(root: Path) -> str:
    """Unified diff (3 lines of context) of the staged working tree against the baseline. Call after ``changes``."""
    return run_git(
        root, "diff", "--cached", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "HEAD"
    )


def stat_and_diff(root: Path) -> tuple[list[tuple[str, str]], str]:
    found = changes(root)
    return found, (diff_text(root) if found else "")


def unstage(root: Path) -> None:
    """Point the index back at the baseline and drop unreachable blobs staged by earlier scans (after a reject)."""
    run_git(root, "read-tree", "HEAD")
    run_git(root, "prune", "--expire=now")


def tree_keeping(root: Path, tree: str, keep_paths: list[str]) -> str:
    """``tree`` with ``keep_paths`` as the baseline has them: built from git objects alone (a temporary index), so
    the result is exactly the tree a person checked, whatever the working tree holds by now. Under the lock."""
    fd, index = tempfile.mkstemp(prefix="memtui-keep-index-", dir=root / ".git")
    os.close(fd)
    os.unlink(index)  # git creates it; an empty file is not a valid index
    env = {"GIT_INDEX_FILE": index}
    try:
        run_git(root, "read-tree", tree, env=env)
        if keep_paths:
            run_git(root, "reset", "-q", "HEAD", "--", *keep_paths, env=env)
        return run_git(root, "write-tree", env=env).strip()
    finally:
        for leftover in (index, index + ".lock"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


def write_worktree_tree(root: Path) -> str:
    """Stage the whole working tree into the real index and return its tree id (a writer: under the lock)."""
    _write_exclude(root)
    stage_all(root)
    return run_git(root, "write-tree").strip()


def tree_files(root: Path, tree: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """{path: blob id} of every file in ``tree``: a hash per file, comparable without the tree's objects."""
    out = run_git(root, "ls-tree", "-r", "-z", "--full-tree", tree, env=env)
    files = {}
    for entry in out.split("\0"):
        if "\t" in entry:
            meta, path = entry.split("\t", 1)
            files[path] = meta.split()[2]
    return files


def compare_files(old: dict[str, str], new: dict[str, str]) -> list[tuple[str, str]]:
    """(A|M|D, path) from one {path: blob id} map to another, sorted by path."""
    out = [("D" if p not in new else "A" if p not in old else "M", p) for p in set(old) | set(new)]
    return sorted(((s, p) for s, p in out if old.get(p) != new.get(p)), key=lambda c: c[1])


def commit_tree(root: Path, tree: str, message: str) -> str:
    """Make exactly ``tree`` the new one-commit baseline (and the index), pruning what only the old one reached."""
    run_git(root, "read-tree", tree)
    return _commit_index_as_only_commit(root, message)


def _commit_index_as_only_commit(root: Path, message: str) -> str:
    """Commit the index with no parent, move HEAD in one atomic ``update-ref``, and prune what only the old
    baseline reached, so content a person or a consolidation deleted is not kept in the git objects."""
    tree = run_git(root, "write-tree").strip()
    commit = run_git(root, "commit-tree", tree, "-m", message).strip()
    run_git(root, "update-ref", "HEAD", commit)
    run_git(root, "reflog", "expire", "--expire=now", "--all")
    run_git(root, "prune", "--expire=now")
    _publish(root)
    return commit
