"""ONE rule set for what a consolidation agent may read and write, whatever its kind.

The HTTP agent's tools (``tools.py``) refuse a path before each call; a CLI agent (``cli_agent.py``) edits with its
own tools, so memtui compares the tree after its run and undoes everything when a change breaks these rules. Both
ask the same two functions, so the two kinds can never drift apart again.

Writable: ``MEMORY.md``, ``memory_summary.md`` and files under ``skills/``, except hidden ones (a name starting with
``.``): a ``.gitignore`` or a dotfile is no memory, and the review must show every byte the agent wrote. Readable:
everything in the memory root except ``.git``.
"""

from __future__ import annotations

from memtui.adapters.memroot.files import (
    DIFF_FILENAME,
    MEMORY_MD,
    MEMORY_SUMMARY,
    RAW_MEMORIES,
    ROLLOUT_SUMMARIES,
    TOMBSTONES,
)

WRITABLE_FILES = frozenset({MEMORY_MD, MEMORY_SUMMARY})
WRITABLE_FOLDER = "skills"
_READ_ONLY = {
    DIFF_FILENAME: "memtui's record of what changed since the last approved memory",
    RAW_MEMORIES: "generated input (the selected raw memories)",
    TOMBSTONES: "a person's deletions",
    ROLLOUT_SUMMARIES: "generated input (one summary per session)",
}
RULE = f"the agent may write only {MEMORY_MD}, {MEMORY_SUMMARY} and files under {WRITABLE_FOLDER}/"


def read_refusal(rel: str) -> str | None:
    """Why the agent may not read ``rel`` (posix, relative to the memory root, symlinks resolved), or None."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if parts and parts[0].lower() == ".git":
        return "the .git folder is private to memtui"
    return None


def write_refusal(rel: str) -> str | None:
    """Why the agent may not create, change or delete ``rel``, or None when it may."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        return "cannot write the memory root itself"
    if why := read_refusal(rel):
        return why
    if hidden := next((p for p in parts if p.startswith(".")), None):
        return f"{hidden!r} is hidden (its name starts with '.'): no .gitignore or dotfile, the review shows every byte"
    if why := _READ_ONLY.get(parts[0]):
        return f"{parts[0]} is read-only: {why}"
    if "/".join(parts) in WRITABLE_FILES or (parts[0] == WRITABLE_FOLDER and len(parts) > 1):
        return None
    return RULE
