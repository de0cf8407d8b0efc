"""The memory workspace on disk: synced inputs, the diff file for the agent, artifact validation.

Files are written only when their bytes differ, so an unchanged selection leaves mtimes alone and git's stat cache
stays valid: a no-change run over thousands of summaries costs one quick ``git add -A``.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from memtui.adapters.memroot.files import (
    DIFF_FILENAME,
    MEMORY_MD,
    MEMORY_SUMMARY,
    RAW_MEMORIES,
    ROLLOUT_SUMMARIES,
    write_if_changed,
)
from memtui.core import clock
from memtui.core.hidden import strip_hidden
from memtui.domain.stems import rollout_summary_file_stem
from memtui.state.selection import Stage1Output

DIFF_MAX_BYTES = 4 * 1024 * 1024
EXTENSION_RESOURCE_RETENTION_DAYS = 7
_PREFIX_LEN = len("2025-02-11T15-35-19-jqmb")  # <ts>-<hash4>, the part of a stem fixed by the thread
_TS_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})")


def summary_stem(memory: Stage1Output) -> str:
    return rollout_summary_file_stem(memory.thread_id, memory.source_updated_at, memory.rollout_slug)


def render_rollout_summary(memory: Stage1Output) -> str:
    lines = [
        f"thread_id: {memory.thread_id}",
        f"updated_at: {clock.iso(memory.source_updated_at)}",
        f"rollout_path: {memory.rollout_path}",
        f"cwd: {memory.cwd}",
    ]
    if memory.git_branch:
        lines.append(f"git_branch: {memory.git_branch}")
    # Outputs stored before hidden characters were removed at Phase 1 lose them here.
    return "\n".join(lines) + "\n\n" + strip_hidden(memory.rollout_summary).text + "\n"


def resolve_stems(root: Path, memories: Iterable[Stage1Output]) -> dict[str, str]:
    """thread id -> the stem its summary file uses. A re-extraction changes the slug (a new model answer) but not
    the ``<ts>-<hash4>`` prefix of a UUIDv7 thread: when a file for the same thread already exists under that
    prefix, its name is kept, so the file is modified in place rather than deleted and added (a stable stem).
    A UUIDv4 thread's timestamp is ``source_updated_at`` (as Codex stems it), which a re-extraction moves: its file
    is renamed, and the consolidation prompt lists the rename."""
    folder = root / ROLLOUT_SUMMARIES
    try:
        existing = {name[:-3] for name in os.listdir(folder) if name.endswith(".md")}
    except OSError:
        existing = set()
    by_prefix: dict[str, list[str]] = {}
    for name in existing:
        by_prefix.setdefault(name[:_PREFIX_LEN], []).append(name)
    out: dict[str, str] = {}
    for m in memories:
        stem = summary_stem(m)
        if stem not in existing:
            prefix = rollout_summary_file_stem(m.thread_id, m.source_updated_at, None)
            same = [e for e in by_prefix.get(prefix, ()) if e == prefix or e.startswith(prefix + "-")]
            if len(same) == 1 and _file_thread(folder / f"{same[0]}.md") == m.thread_id:
                stem = same[0]
        out[m.thread_id] = stem
    return out


def _file_thread(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline().decode("utf-8", "replace").strip()
    except OSError:
        return None
    return first.removeprefix("thread_id: ") if first.startswith("thread_id: ") else None


def render_raw_memories(memories: Iterable[Stage1Output], stems: dict[str, str] | None = None) -> str:
    ordered = sorted(memories, key=lambda m: m.thread_id)
    if not ordered:
        return "# Raw Memories\n\nNo raw memories yet.\n"
    parts = ["# Raw Memories\n\nMerged stage-1 raw memories (stable ascending thread-id order):\n"]
    for m in ordered:
        parts.append(
            f"\n## Thread `{m.thread_id}`\n"
            f"updated_at: {clock.iso(m.source_updated_at)}\n"
            f"cwd: {m.cwd}\n"
            f"rollout_path: {m.rollout_path}\n"
            f"rollout_summary_file: {(stems or {}).get(m.thread_id) or summary_stem(m)}.md\n\n"
            f"{strip_hidden(m.raw_memory).text.strip()}\n"
        )
    return "".join(parts)


def _fingerprint(m: Stage1Output) -> str:
    """What a summary file's bytes are made of (a cheap checksum of the row, not the rendered text)."""
    head = f"{m.thread_id}|{m.source_updated_at}|{m.rollout_path}|{m.cwd}|{m.git_branch or ''}"
    return f"{zlib.crc32(head.encode())}:{zlib.crc32(m.rollout_summary.encode())}:{len(m.rollout_summary)}"


def _load_manifest(path: Path | None) -> dict[str, list[object]]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}  # missing or cut short by a kill: every file is checked by its bytes, as without a manifest
    return data if isinstance(data, dict) else {}


def sync_rollout_summaries(
    root: Path, memories: list[Stage1Output], stems: dict[str, str] | None = None, manifest: Path | None = None
) -> tuple[int, int]:
    """One file per selected row; every other ``*.md`` in ``rollout_summaries/`` goes. Returns (written, deleted).

    With ``manifest`` (a file outside the memory root), a file the last sync wrote from the same row, still of the
    size and mtime it had then, is not rendered or read again: a no-change run costs one ``stat`` per summary
    instead of a render and a read. Anything else (a file edited, replaced or touched since, a manifest lost or cut
    short) falls back to comparing the bytes, so the manifest can only save work, never skip a needed write.
    """
    folder = root / ROLLOUT_SUMMARIES
    folder.mkdir(parents=True, exist_ok=True)
    stems = stems if stems is not None else resolve_stems(root, memories)
    wanted = {stems[m.thread_id]: m for m in memories}
    known = _load_manifest(manifest)
    on_disk: dict[str, tuple[int, int]] = {}
    deleted = 0
    with os.scandir(folder) as it:
        for entry in it:
            if not entry.name.endswith(".md") or entry.is_dir(follow_symlinks=False):
                continue
            if entry.name[:-3] not in wanted:
                os.unlink(entry.path)
                deleted += 1
            elif entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                on_disk[entry.name] = (st.st_size, st.st_mtime_ns)
    written = 0
    record: dict[str, list[object]] = {}
    for stem, m in wanted.items():
        name = f"{stem}.md"
        fingerprint = _fingerprint(m)
        seen = known.get(name)
        if seen is not None and seen[0] == fingerprint and on_disk.get(name) == tuple(seen[1:]):
            record[name] = seen
            continue
        path = folder / name
        written += write_if_changed(path, render_rollout_summary(m))
        st = os.lstat(path)
        record[name] = [fingerprint, st.st_size, st.st_mtime_ns]
    if manifest is not None and record != known:
        write_if_changed(manifest, json.dumps(record, separators=(",", ":")))
    return written, deleted


def rebuild_raw_memories(root: Path, memories: list[Stage1Output], stems: dict[str, str] | None = None) -> bool:
    return write_if_changed(root / RAW_MEMORIES, render_raw_memories(memories, stems))


def prune_old_extension_resources(root: Path, retention_days: int = EXTENSION_RESOURCE_RETENTION_DAYS) -> int:
    """Delete ``extensions/<ext>/resources/<YYYY-MM-DDTHH-MM-SS…>.md`` at or before now - 7 days, Codex's retention."""
    base = root / "extensions"
    if not base.is_dir():
        return 0
    cutoff = clock.now_s() - retention_days * 86_400
    removed = 0
    for ext in sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink()):
        resources = ext / "resources"
        if not (ext / "instructions.md").is_file() or not resources.is_dir():
            continue
        for f in resources.glob("*.md"):
            m = _TS_PREFIX.match(f.name)
            if not m or not f.is_file():
                continue
            try:
                ts = datetime.strptime(m.group(1), "%Y-%m-%dT%H-%M-%S").replace(tzinfo=UTC).timestamp()
            except ValueError:
                continue
            if ts <= cutoff:
                f.unlink()
                removed += 1
    return removed


def sync_workspace(root: Path, memories: list[Stage1Output], manifest: Path | None = None) -> dict[str, int]:
    root.mkdir(parents=True, exist_ok=True)
    stems = resolve_stems(root, memories)
    written, deleted = sync_rollout_summaries(root, memories, stems, manifest)
    raw = rebuild_raw_memories(root, memories, stems)
    pruned = prune_old_extension_resources(root)
    return {"summaries_written": written, "summaries_deleted": deleted, "raw_rewritten": int(raw), "pruned": pruned}


def _char_boundary(data: bytes, limit: int) -> int:
    """Largest index <= limit that does not split a UTF-8 sequence."""
    i = min(limit, len(data))
    while i > 0 and i < len(data) and (data[i] & 0xC0) == 0x80:
        i -= 1
    return i


def render_diff_file(changes: list[tuple[str, str]], diff: str, max_bytes: int = DIFF_MAX_BYTES) -> str:
    """The 8.4 format: status lines, then the unified diff in a fence, truncated on a char boundary."""
    head = (
        "# Memory Workspace Diff\n\n"
        "Generated by memtui before Phase 2 memory consolidation. Read this file first and do not edit it.\n\n"
        "## Status\n"
    )
    if not changes:
        return head + "- none\n"
    status = "".join(f"- {s} {p}\n" for s, p in changes)
    data = diff.encode("utf-8", "replace")
    if len(data) > max_bytes:
        cut = _char_boundary(data, max_bytes)
        body = data[:cut].decode("utf-8", "replace") + f"\n[workspace diff truncated at {max_bytes} bytes]\n"
    else:
        body = diff if diff.endswith("\n") or not diff else diff + "\n"
    return head + status + "\n## Diff\n\n```diff\n" + body + "```\n"


def validate_artifacts(root: Path) -> str | None:
    """None when MEMORY.md is a file and memory_summary.md's first line is exactly ``v1``; else why not."""
    memory = root / MEMORY_MD
    if not memory.is_file():
        return "MEMORY.md is missing or not a file"
    summary = root / MEMORY_SUMMARY
    if not summary.is_file():
        return "memory_summary.md is missing or not a file"
    try:
        with summary.open("rb") as fh:
            first = fh.readline()
    except OSError as exc:
        return f"memory_summary.md cannot be read: {exc}"
    return validate_artifact_texts("", first.decode("utf-8", "replace"))


def validate_artifact_texts(memory: str | None, summary: str | None) -> str | None:
    """``validate_artifacts`` for a tree not on disk (a partial approve's planned tree): None when valid."""
    if memory is None:
        return "MEMORY.md is missing or not a file"
    if summary is None:
        return "memory_summary.md is missing or not a file"
    if summary.split("\n", 1)[0].rstrip("\r") != "v1":
        return "memory_summary.md does not start with the line `v1`"
    return None


def remove_diff_file(root: Path) -> None:
    try:
        (root / DIFF_FILENAME).unlink()
    except FileNotFoundError:
        pass
