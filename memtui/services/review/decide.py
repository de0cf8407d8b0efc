"""Hunk-level decisions on a run: which hunks go in, which are left out (and why), which a person amended.

``plan`` turns the reviewer's choices into the exact file contents to commit (the baseline's lines where a hunk
is left out, the reviewer's text where one was amended). ``record_*`` write the audit record, the rejected hunks
that teach the next run ("do not re-learn"), and the snapshot of the new approved version.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import write_if_changed
from memtui.core import clock
from memtui.domain.trust.markers import approve_untrusted
from memtui.services import history
from memtui.services.review.hunks import Hunk, HunkError, apply_decisions, parse_diff, resolve_ids
from memtui.state import rejected_hunks as rejected_store
from memtui.state.person_lines import normalize_line

MAX_DO_NOT_RELEARN = 40  # rejected hunks listed in the agent prompt, newest first


@dataclass
class Plan:
    """The outcome of the reviewer's choices for one run."""

    hunks: list[Hunk]
    rejected: set[str] = field(default_factory=set)
    amended: dict[str, str] = field(default_factory=dict)
    files: dict[str, str | None] = field(default_factory=dict)  # rel -> content to commit (None: absent)
    baseline_keys: dict[str, set[str]] = field(default_factory=dict)  # rel -> normalised lines of its baseline
    trusted: set[str] = field(default_factory=set)  # hunks whose untrusted lines a person approved for agents
    by_person: set[str] = field(default_factory=set)  # hunks amended with a reviewer's own text

    def new_lines(self, h: Hunk) -> list[str]:
        """What a left-out hunk really wanted to add: its '+' lines that are not already in the baseline (a line
        that only moved or was renumbered, ``[Task 2]`` -> ``[Task 3]``, is not new)."""
        known = self.baseline_keys.get(h.file, set()) | {normalize_line(line) for line in h.removed}
        return [line for line in h.added if normalize_line(line) not in known]

    @property
    def partial(self) -> bool:
        return bool(self.rejected or self.amended)

    def hunk_refs(self, taken: bool) -> list[history.HunkRef]:
        return [
            history.HunkRef(
                id=h.id, file=h.file, hash=h.content_hash, amended=h.id in self.by_person, trusted=h.id in self.trusted
            )
            for h in self.hunks
            if (h.id not in self.rejected) == taken
        ]

    def files_in(self) -> list[str]:
        return sorted({h.file for h in self.hunks if h.id not in self.rejected})

    def files_out(self) -> list[str]:
        return sorted({h.file for h in self.hunks if h.id in self.rejected} - set(self.files_in()))


class RejectedHunk(BaseModel):
    id: int
    run_id: int | None
    hunk_id: str
    file: str
    text: str
    added: list[str]
    reason: str | None
    decided_at: int


def _baseline_text(root: Path, rel: str) -> str | None:
    try:
        return baseline.run_git(root, "cat-file", "blob", f"HEAD:{rel}")
    except baseline.BaselineError:
        return None


def _workspace_text(root: Path, rel: str) -> str | None:
    path = root / rel
    return path.read_bytes().decode("utf-8", "replace") if path.is_file() else None


def plan(
    root: Path,
    diff: str,
    except_ids: Iterable[str] = (),
    amendments: dict[str, str] | None = None,
    *,
    reviewed_text: Callable[[Path, str], str | None] = _workspace_text,
    trusted_ids: Iterable[str] = (),
) -> Plan:
    """Resolve ids (prefixes allowed) and compute every decided file's content from the baseline and the run's
    version (``reviewed_text``). ``trusted_ids``: hunks whose tool-only or flagged lines a person approved for
    what agents load (their markers say ``approved``). Raises ``HunkError`` naming unknown ids or a baseline that
    moved."""
    files = parse_diff(diff)
    hunks = [h for f in files for h in f.hunks]
    rejected = resolve_ids(hunks, list(except_ids))
    amended: dict[str, str] = {}
    for key, text in (amendments or {}).items():
        (hid,) = resolve_ids(hunks, [key])
        if hid in rejected:
            raise HunkError(f"hunk {hid} is both left out and amended")
        amended[hid] = text
    by_person = set(amended)
    trusted = resolve_ids(hunks, list(trusted_ids))
    for hid in trusted:
        if hid in rejected:
            raise HunkError(f"hunk {hid} is both left out and approved for agents")
        hunk = next(h for h in hunks if h.id == hid)
        amended[hid] = approve_untrusted(amended.get(hid, hunk.new_text()))
    result = Plan(hunks=hunks, rejected=rejected, amended=amended, trusted=trusted, by_person=by_person)
    for f in files:
        if not any(h.id in rejected or h.id in amended for h in f.hunks):
            continue
        old = _baseline_text(root, f.path)
        result.files[f.path] = apply_decisions(old, reviewed_text(root, f.path), f.hunks, rejected, amended)
        if any(h.id in rejected for h in f.hunks):
            result.baseline_keys[f.path] = {normalize_line(line) for line in (old or "").split("\n")}
    return result


class ChangedWhileApproving(RuntimeError):
    """A decided file changed on disk after approve checked it: nothing was written or committed."""

    def __init__(self, files: list[str]) -> None:
        self.files = files
        super().__init__(
            f"{', '.join(files)} changed while approving (after the check); nothing was written or approved. "
            "Look at `memtui review show` again and approve what it shows."
        )


def blob_id(data: bytes | None) -> str | None:
    """git's id of a blob with these bytes (None: no file): compares a file on disk with a checked tree's entry."""
    return None if data is None else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _disk(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def write_plan(root: Path, p: Plan, checked: dict[str, str] | None = None) -> None:
    """Put the decided files into the workspace (the caller holds the memory-root lock).

    With ``checked`` (the {path: blob id} approve verified), a file whose bytes differ from what was checked, or that
    already holds the decided text, is compared first: an outside write landing between the check and this write is
    refused (``ChangedWhileApproving``), never overwritten."""
    if checked is not None:
        moved = [
            rel
            for rel, text in sorted(p.files.items())
            if blob_id(disk := _disk(root / rel)) != checked.get(rel)
            and disk != (None if text is None else text.encode("utf-8"))
        ]
        if moved:
            raise ChangedWhileApproving(moved)
    for rel, text in p.files.items():
        path = root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            write_if_changed(path, text.encode("utf-8"))


def record_approval(
    conn: sqlite3.Connection,
    root: Path,
    *,
    run_id: int,
    kind: str,
    p: Plan,
    commit: str | None,
    reason: str | None,
    evidence_threads: dict[str, list[str]] | None = None,
) -> int:
    """Audit record + rejected hunks; returns the decision id (the version). The snapshot of the new baseline
    follows with the rest of the decision's follow-ups (``review.after``)."""
    decision = history.record_decision(
        conn,
        approval_kind(kind, p),
        run_id=run_id,
        files_in=p.files_in(),
        files_out=p.files_out(),
        hunks_in=p.hunk_refs(True),
        hunks_out=p.hunk_refs(False),
        reason=reason if p.rejected else None,
        tree=history.baseline_tree(root),
        commit=commit,
    )
    now = clock.now_s()
    why = (reason or "").strip() or None
    left_out = [h for h in p.hunks if h.id in p.rejected]
    rejected_store.add(
        conn,
        [
            (
                run_id,
                h.id,
                h.file,
                h.content_hash,
                h.text,
                p.new_lines(h),
                why,
                (evidence_threads or {}).get(h.id, []),
                now,
            )
            for h in left_out
        ],
    )
    return decision


def approval_kind(run_kind: str, p: Plan) -> Literal["approve", "partial_approve", "restore"]:
    """How the history names the approval of a run of ``run_kind`` with these hunk decisions."""
    return "restore" if run_kind == "restore" else ("partial_approve" if p.partial else "approve")


def record_rejection(conn: sqlite3.Connection, root: Path, *, run_id: int, diff: str, reason: str | None) -> int:
    hunks = [h for f in parse_diff(diff) for h in f.hunks]
    p = Plan(hunks=hunks, rejected={h.id for h in hunks})
    return history.record_decision(
        conn,
        "reject",
        run_id=run_id,
        files_out=sorted({h.file for h in hunks}),
        hunks_out=p.hunk_refs(False),
        reason=reason,
        tree=history.baseline_tree(root),
    )


def rejected_hunks(conn: sqlite3.Connection, limit: int = MAX_DO_NOT_RELEARN) -> list[RejectedHunk]:
    out = []
    for r in rejected_store.newest(conn, limit):
        d = asdict(r)
        d["added"] = json.loads(d["added"] or "[]")
        out.append(RejectedHunk(**d))
    return out


def do_not_relearn_lines(conn: sqlite3.Connection) -> list[str]:
    """For the agent: the hunks a person left out (newest first), each with its reason and the lines it added."""
    out = []
    for h in rejected_hunks(conn):
        out.append(f"in {h.file}" + (f" (reason: {h.reason})" if h.reason else "") + ":")
        out += [f"  + {line}" for line in h.added if line.strip()][:20]
    return out


def rejected_lines(conn: sqlite3.Connection) -> set[str]:
    """Every line a person left out, normalised: the offline consolidator never writes one of them again."""
    out: set[str] = set()
    for added in rejected_store.added_lines(conn):
        for line in json.loads(added or "[]"):
            key = normalize_line(line)
            if key:
                out.add(key)
    return out


def apply_to_tree(root: Path, base_tree: str, p: Plan) -> str:
    """``base_tree`` with the decided files replaced (or removed): the tree to commit. Under the memory-root lock.

    Works in a temporary index, so ``.git/index`` keeps pointing at what it did until the commit moves it."""
    import os
    import tempfile

    git_dir = root / ".git"
    fd, index = tempfile.mkstemp(prefix="memtui-partial-index-", dir=git_dir)
    os.close(fd)
    os.unlink(index)  # git creates it; an empty file is not a valid index
    env = {"GIT_INDEX_FILE": index}
    try:
        baseline.run_git(root, "read-tree", base_tree, env=env)
        for rel, text in sorted(p.files.items()):
            if text is None:
                baseline.run_git(root, "update-index", "--force-remove", "--", rel, env=env)
                continue
            fd, tmp = tempfile.mkstemp(prefix="memtui-partial-blob-", dir=git_dir)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(text.encode("utf-8"))
                blob = baseline.run_git(root, "hash-object", "-w", "--no-filters", tmp).strip()
            finally:
                os.unlink(tmp)
            baseline.run_git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=env)
        return baseline.run_git(root, "write-tree", env=env).strip()
    finally:
        for leftover in (index, index + ".lock"):
            if os.path.exists(leftover):
                os.unlink(leftover)
