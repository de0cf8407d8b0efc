"""Find Codex and Claude Code rollout files under their folders (``memtui.adapters.sources.registry`` lists every
source's), with one ``stat`` each (the incremental check needs nothing more).

Codex: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`` and ``$CODEX_HOME/archived_sessions/`` (any depth;
those threads are marked archived). Claude Code: ``$CLAUDE_CONFIG_DIR/projects/<project>/*.jsonl`` and sub-agent
transcripts under ``projects/<project>/<session>/subagents/*.jsonl``. ``os.scandir`` is used because its entries
carry the stat result on most platforms and it is the fastest listing measured (perf-baselines §4).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memtui.adapters.rollouts.model import SourceKind
from memtui.core.paths import Paths


@dataclass(frozen=True, slots=True)
class Found:
    path: str
    source_kind: SourceKind
    size: int
    mtime_ns: int
    archived: bool


def _is_codex_name(name: str) -> bool:
    return name.startswith("rollout-") and (name.endswith(".jsonl") or name.endswith(".jsonl.zst"))


def _walk(root: Path, depth: int) -> Iterator[os.DirEntry[str]]:
    """Files under ``root`` down to ``depth`` levels of folders; unreadable folders are passed over."""
    try:
        with os.scandir(root) as it:
            entries = list(it)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth > 0:
                    yield from _walk(Path(entry.path), depth - 1)
            elif entry.is_file():
                yield entry
        except OSError:
            continue


def _found(entry: os.DirEntry[str], kind: SourceKind, archived: bool) -> Found | None:
    try:
        st = entry.stat()
    except OSError:
        return None
    return Found(entry.path, kind, st.st_size, st.st_mtime_ns, archived)


def discover_codex(paths: Paths) -> Iterator[Found]:
    for root, archived in ((paths.codex_sessions, False), (paths.codex_archived, True)):
        for entry in _walk(root, 4):
            if _is_codex_name(entry.name) and (f := _found(entry, "codex", archived)):
                yield f


def discover_claude(paths: Paths) -> Iterator[Found]:
    root = paths.claude_projects
    for entry in _walk(root, 3):
        rel = Path(entry.path).relative_to(root).parts
        if not entry.name.endswith(".jsonl"):
            continue
        wanted = len(rel) == 2 or (len(rel) == 4 and rel[2] == "subagents")
        if wanted and (f := _found(entry, "claude", False)):
            yield f
