"""Hunk-level decisions on a run: which hunks go in, which are left out (and why), which a person amended.

``plan`` turns the reviewer's choices into the exact file contents to commit (the baseline's lines where a hunk
is left out, the reviewer's text where one was amended). ``record_*`` write the audit record, the rejected hunks
that teach the next run ("do not re-learn"), and the snapshot of the new approved version.

A left-out hunk never turns into "delete these lines" later (issue 33.2): one of a generated input is not remembered
(the next run renders it again), a remembered one acts only in its own file and only against lines that file does
not hold, structure is never remembered, and a left-out rewording keeps the old line. ``Rejections.acted`` records
what each rejection did to a run, so its review names it; ``lift`` takes one back.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import is_generated_input, write_if_changed
from memtui.core import clock
from memtui.domain.trust.markers import approve_untrusted
from memtui.services import history
from memtui.services.review.hunks import Hunk, HunkError, apply_decisions, parse_diff, resolve_ids
from memtui.state import rejected_hunks as rejected_store
from memtui.state.db import immediate
from memtui.state.person_lines import key_hash, normalize_line

MAX_DO_NOT_RELEARN = 40  # rejected hunks listed in the agent prompt, newest first

# The memory's structure, never remembered as rejected: a left-out new task must not take a heading, a task group's
# scope or a summary pointer out of every later run (headings and blank lines normalise to "" already).
_STRUCTURE = re.compile(
    r"^(?:[-*]\s*)?(?:(?:scope|applies_to|description|task|task_group|task_outcome|cwd|keywords|thread_id|updated_at"
    r"|rollout_path|rollout_summary_file|git_branch):|rollout_summaries/\S+\.md \(cwd=|desc: see rollout_summaries/)"
)


def remembered_key(line: str) -> str:
    """The key a left-out line is remembered by (``normalize_line``), or "" for structure, which is never
    remembered: headings (task headings too), blank lines, the generated block's markers and metadata lines."""
    key = normalize_line(line)
    if not key or key.startswith("task: ") or _STRUCTURE.match(line.strip()):
        return ""
    return key


def _keyword_lines(h: Hunk) -> set[str]:
    """The lines of a hunk's new side under a ``### keywords`` heading: a task's index, structure too."""
    out, previous = set(), ""
    for line in h.new_lines:
        text = line.rstrip("\n")
        if previous == "### keywords" and text.strip():
            out.add(text)
        previous = text.strip() or previous
    return out


def remembered_if_left_out(h: Hunk) -> bool:
    """Whether leaving ``h`` out would be remembered: a memory file's hunk with a line of content to keep out (one
    that only removes or moves lines, or only touches structure, is left out for now and may come back)."""
    index, moved = _keyword_lines(h), {normalize_line(line) for line in h.removed}
    return remembers(h.file) and any(
        (key := remembered_key(line)) and key not in moved and line not in index for line in h.added
    )


def remembers(rel: str) -> bool:
    """Whether a left-out hunk of ``rel`` is remembered as rejected. Not for a generated input (raw_memories.md, a
    rollout summary): leaving it out means "not published now", and the next run renders it again from the
    memories; to drop what a session taught for good, forget the rollout."""
    return not is_generated_input(rel)


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
        index = _keyword_lines(h)
        return [line for line in h.added if (key := remembered_key(line)) and key not in known and line not in index]

    def remembered(self) -> list[Hunk]:
        """The left-out hunks remembered as rejected: of a memory file, with a line of content to keep out."""
        return [h for h in self.hunks if h.id in self.rejected and remembers(h.file) and self.new_lines(h)]

    def deferred(self) -> list[Hunk]:
        """The left-out hunks of generated inputs: not published now, rendered again by the next run."""
        return [h for h in self.hunks if h.id in self.rejected and not remembers(h.file)]

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
    content_hash: str
    text: str
    added: list[str]
    reason: str | None
    decided_at: int

    @property
    def removed(self) -> list[str]:
        """The baseline lines of content the hunk would have replaced (a rewording's old side; no structure)."""
        out, previous = [], ""
        for line in self.text.split("\n")[1:]:
            if not line.startswith(("-", " ")):
                continue
            text = line[1:]
            if line.startswith("-") and remembered_key(text) and previous != "### keywords":
                out.append(text)
            previous = text.strip() or previous
        return out

    def when(self) -> str:
        return clock.iso(self.decided_at)[:10]

    def names(self) -> str:
        """How the review names it: when, which run, and how to lift it."""
        run = f" (run {self.run_id})" if self.run_id else ""
        return f"you rejected it on {self.when()}{run}; `memtui review lift {self.id}` allows it again"


AMEND_GENERATED = (
    "{file} is rendered from the memories at every Phase 2 run, so an amendment would be undone by the next one: "
    "amend MEMORY.md or memory_summary.md instead, or forget the rollout (`memtui forget`) to drop what it taught"
)


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
        if not remembers(rel := next(h.file for h in hunks if h.id == hid)):
            raise HunkError(AMEND_GENERATED.format(file=rel))
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
    left_out = p.remembered()
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
    """The remembered rejections, newest first (rows of generated inputs, left by an older memtui, act on nothing
    and are left out)."""
    out = []
    for r in rejected_store.newest(conn, limit):
        d = asdict(r)
        d["added"] = json.loads(d["added"] or "[]")
        if remembers(r.file):
            out.append(RejectedHunk(**d))
    return out


def remembered_rejections(conn: sqlite3.Connection) -> list[RejectedHunk]:
    """Every remembered rejection, newest first: what ``memtui review rejections`` lists."""
    return rejected_hunks(conn, limit=-1)


def do_not_relearn_lines(conn: sqlite3.Connection, hunks: list[RejectedHunk] | None = None) -> list[str]:
    """For the agent: the hunks a person left out (newest first), each with the file it applies to, its reason and
    the lines it added."""
    out = []
    for h in rejected_hunks(conn) if hunks is None else hunks:
        out.append(f"in {h.file} only" + (f" (reason: {h.reason})" if h.reason else "") + ":")
        out += [f"  + {line}" for line in h.added if line.strip()][:20]
    return out


@dataclass
class Acted:
    """What a remembered rejection did to one run: lines it kept out, old lines it kept in place of their rejected
    rewording, or (an agent run) that the agent was told of it."""

    id: int
    file: str
    left_out: list[str] = field(default_factory=list)  # key hashes of the lines kept out
    kept: int = 0  # baseline lines kept instead of the rejected lines that replaced them
    told: bool = False


@dataclass
class Rejections:
    """The remembered rejections as the offline consolidator applies them: each only to the file it was made in,
    and only to lines that file does not already hold (a rejection keeps a line from being added, it never deletes
    one). ``acted`` collects what each did, for the run's review."""

    by_file: dict[str, dict[str, RejectedHunk]] = field(default_factory=dict)  # file -> key -> its rejection
    acted: dict[tuple[int, str], Acted] = field(default_factory=dict)

    def keys(self, rel: str) -> dict[str, RejectedHunk]:
        return self.by_file.get(rel, {})

    def note(self, row: RejectedHunk, rel: str, key: str | None = None, kept: int = 0) -> None:
        acted = self.acted.setdefault((row.id, rel), Acted(row.id, rel))
        if key is not None and (digest := key_hash(key)) not in acted.left_out:
            acted.left_out.append(digest)
        acted.kept += kept

    def as_json(self) -> list[dict[str, object]]:
        return [asdict(a) for a in self.acted.values()]


def rejections(conn: sqlite3.Connection) -> Rejections:
    """Every remembered rejection, by the file it was made in (oldest first, so the newest names a key)."""
    out = Rejections()
    for h in reversed(remembered_rejections(conn)):
        for line in h.added:
            if key := remembered_key(line):
                out.by_file.setdefault(h.file, {})[key] = h
    return out


def rejected_lines(conn: sqlite3.Connection) -> set[str]:
    """Every line a person left out, normalised (any file)."""
    return {key for keys in rejections(conn).by_file.values() for key in keys}


def told(hunks: list[RejectedHunk]) -> list[dict[str, object]]:
    """An agent run's record of the rejections its prompt listed."""
    return [asdict(Acted(h.id, h.file, told=True)) for h in hunks]


def _quote(line: str, width: int = 72) -> str:
    text = " ".join(line.split())
    return f"'{text[: width - 1]}…'" if len(text) > width else f"'{text}'"


def acted_notes(conn: sqlite3.Connection, acted: list[dict[str, object]]) -> list[str]:
    """The review's words for what remembered rejections did to a run (``Phase2Run.rejections_acted``): which lines
    each kept out or kept in place, when it was made, and how to lift it."""
    rows = {h.id: h for h in remembered_rejections(conn)}
    out = []
    for a in acted:
        rid, rel = int(str(a.get("id"))), str(a.get("file"))
        row = rows.get(rid)
        if row is None:
            out.append(f"{rel}: a rejection (#{rid}) shaped this run; it has been lifted since")
            continue
        hashes = set(a.get("left_out") or [])  # type: ignore[call-overload]
        lines = [x for x in row.added if (k := remembered_key(x)) and key_hash(k) in hashes]
        if a.get("told"):
            first = next((x for x in row.added if remembered_key(x)), "")
            out.append(f"{rel}: the agent was told not to learn {_quote(first)} again: {row.names()}")
            continue
        if lines:
            more = f" and {len(lines) - 1} more line(s)" if len(lines) > 1 else ""
            out.append(f"{rel}: left out {_quote(lines[0])}{more} because {row.names()}")
        if kept := int(str(a.get("kept") or 0)):
            out.append(f"{rel}: kept {kept} approved line(s) in place of a rewording, because {row.names()}")
    return out


class LiftError(ValueError):
    """No remembered rejection has that id."""


def lift(conn: sqlite3.Connection, rejection_id: int) -> RejectedHunk:
    """Forget a remembered rejection: later runs may propose its lines again. Recorded in the history."""
    found = next((h for h in remembered_rejections(conn) if h.id == rejection_id), None)
    if found is None:
        known = ", ".join(str(h.id) for h in remembered_rejections(conn)) or "none"
        raise LiftError(f"no remembered rejection #{rejection_id} (remembered: {known}; `memtui review rejections`)")
    with immediate(conn):  # the row and its record go together
        rejected_store.delete(conn, found.id)
        history.record_decision(
            conn,
            "lift",
            run_id=found.run_id,
            files_in=[found.file],
            hunks_in=[history.HunkRef(id=found.hunk_id, file=found.file, hash=found.content_hash)],
            reason=f"rejection #{found.id} of {found.when()} lifted",
        )
    return found


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
