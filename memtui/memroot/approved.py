"""The approved memory: the ONE read path for everything memtui hands to an agent.

Agents load what a person approved: the memory root's baseline commit (made by approving a run, by committing a
person's own edit, or by restoring a version through review). Never the working tree, which holds a run awaiting
review or an edit nobody committed yet. Export (prompt, AGENTS.md / CLAUDE.md), the MCP server's tools and
resources, and the search index of memory files read through ``approved(root)``; a structural test
(``tests/test_approved_read_path.py``) fails when one of them reads the working tree.

A snapshot pins one commit, lists its files with their blob ids, and reads blobs from git's object store with
read-only commands (``GIT_OPTIONAL_LOCKS=0``, no index), so it needs no lock and never writes ``.git``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memtui.phase2 import baseline


@dataclass(frozen=True)
class Approved:
    """One baseline commit's files: ``{path: blob id}``; empty when the memory root has no baseline yet."""

    root: Path
    commit: str | None = None
    files: dict[str, str] = field(default_factory=dict)

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
