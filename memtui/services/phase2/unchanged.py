"""A no-change Phase 2 run answered from a fingerprint of everything it reads, without sync, git or the selection.

A full run that ends with "no changes" keeps a record of its inputs: the counter the database triggers move on every
write to stage-1 outputs, threads and forgotten rollouts (``data_versions``), the settings and the offline flag, the
selection window, and the stat of every file of the memory root plus git's HEAD and refs. The next run that finds
the same record (and memory health's own clean fingerprint) would read the same selection, sync nothing, see no
diff and compute no health input, so it records the same outcome without doing that work.

Racy files, as git handles them: the full run touches a marker in ``.git`` before it syncs and diffs; a record is
kept only when every file is older than the marker, so an edit after the check always moves an mtime or ctime.
Memory-root files under ``extensions/`` are pruned by age, so a root that has them always runs in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

from memtui.core import clock
from memtui.core.settings import Settings
from memtui.services.health import watermark
from memtui.state import meta
from memtui.state.selection import DAY, Stage1Output

KEY = "phase2.unchanged"  # meta: the record of the last full no-change run
MARKER = "memtui-unchanged"  # in .git: its mtime is when that run's checks started (filesystem time)
SAID = "nothing the run reads changed since the last run found no changes"  # progress line of the short path
_GIT_FILES = ("HEAD", "packed-refs", "index.lock")  # which commit is the baseline; a leftover index lock
_TIME_PRUNED = "extensions"  # resources pruned by age (workspace.prune_old_extension_resources)


@dataclass(frozen=True)
class Inputs:
    """What a run reads from the database and settings, taken before its selection query."""

    version: int
    settings: str
    offline: bool


@dataclass(frozen=True)
class Record:
    inputs: Inputs
    root: str  # digest of the memory root's stat
    base: str  # the baseline commit the run diffed against
    selected: int
    max_source_updated_at: int
    cutoff: int  # the selection's unused-days cutoff then
    floor: int | None  # the stalest freshness among the selected (``FRESHNESS_SQL``): the cutoff may not pass it


def read_inputs(conn: sqlite3.Connection, settings: Settings, offline: bool) -> Inputs:
    version = meta.data_version(conn, "phase2_inputs")
    digest = hashlib.sha256(settings.model_dump_json().encode()).hexdigest()
    return Inputs(version=version, settings=digest, offline=offline)


def cutoff(settings: Settings) -> int:
    return clock.now_s() - int(settings.max_unused_days) * DAY


def _stat_entries(root: Path) -> tuple[list[tuple[object, ...]], int]:
    """(relative path, mode, inode, size, mtime, ctime) of every file and folder of the root (``.git`` only for
    HEAD, refs and a lock), and the newest mtime/ctime among them."""
    out: list[tuple[object, ...]] = []
    newest = 0
    stack = [(str(root), "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            name = f"{rel}{e.name}"
            if name == ".git":
                continue
            st = e.stat(follow_symlinks=False)
            out.append((name, st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
            if e.is_dir(follow_symlinks=False):
                stack.append((e.path, f"{name}/"))
    git = root / ".git"
    refs = [*_GIT_FILES]
    for folder, _dirs, files in os.walk(git / "refs"):
        refs.extend(os.path.relpath(os.path.join(folder, f), git) for f in files)
    for name in sorted(refs):
        try:
            st = os.lstat(git / name)
        except FileNotFoundError:
            out.append((f".git/{name}", None))
            continue
        out.append((f".git/{name}", st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return out, newest


def _root_digest(entries: list[tuple[object, ...]]) -> str:
    return hashlib.sha256(repr(entries).encode()).hexdigest()


def start(conn: sqlite3.Connection, root: Path) -> None:
    """A full run begins its checks: the old record goes, and the marker takes the current filesystem time."""
    meta.delete(conn, KEY)
    marker = root / ".git" / MARKER
    if not marker.exists():
        fd = os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    os.utime(marker)


def remember(
    conn: sqlite3.Connection,
    root: Path,
    inputs: Inputs,
    *,
    base: str,
    selected: list[Stage1Output],
    selection_cutoff: int,
) -> bool:
    """Keep the record of a full run that found no changes; False (nothing kept) when a file is as new as the
    marker (it may change again within the same filesystem tick) or the root has files pruned by age."""
    try:
        marker_ns = os.stat(root / ".git" / MARKER).st_mtime_ns
    except OSError:
        return False
    if (root / _TIME_PRUNED).exists():
        return False
    entries, newest = _stat_entries(root)
    if newest >= marker_ns:
        return False
    uses = [m.fresh_at for m in selected]
    record = Record(
        inputs=inputs,
        root=_root_digest(entries),
        base=base,
        selected=len(selected),
        max_source_updated_at=max((m.source_updated_at for m in selected), default=0),
        cutoff=selection_cutoff,
        floor=min(uses) if uses else None,
    )
    meta.put(conn, KEY, json.dumps(asdict(record)))
    return True


def _load(conn: sqlite3.Connection) -> Record | None:
    value = meta.get(conn, KEY)
    if value is None:
        return None
    try:
        data = json.loads(value)
        return Record(**{**data, "inputs": Inputs(**data["inputs"])})
    except (ValueError, TypeError, KeyError):
        return None


def check(conn: sqlite3.Connection, root: Path, settings: Settings, offline: bool) -> Record | None:
    """The last full run's record when nothing it read has changed since; None when a full run is needed."""
    record = _load(conn)
    if record is None or record.inputs != read_inputs(conn, settings, offline):
        return None
    now_cutoff = cutoff(settings)
    if now_cutoff < record.cutoff or (record.floor is not None and now_cutoff > record.floor):
        return None  # the clock moved back, or a selected memory fell out of the unused-days window
    if not watermark.is_clean(conn, watermark.fingerprint(conn, record.base)):
        return None  # memory health has something to tell (or its inputs moved)
    try:
        entries, _newest = _stat_entries(root)
    except OSError:
        return None
    return record if _root_digest(entries) == record.root else None
