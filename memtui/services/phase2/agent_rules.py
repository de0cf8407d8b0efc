"""ONE rule set for what a consolidation agent may read and write, whatever its kind.

The HTTP agent's tools (``tools.py``) refuse a path before each call; a CLI agent (``cli_agent.py``) edits with its
own tools, so memtui compares the tree after its run and undoes everything when a change breaks these rules. Both
ask the same two functions, so the two kinds can never drift apart again.

Writable: ``MEMORY.md``, ``memory_summary.md`` and Markdown files under ``skills/``, except hidden ones (a name
starting with ``.``): a ``.gitignore`` or a dotfile is no memory, and the review must show every byte the agent
wrote. Only text: hidden-character removal, trust marking and the review's reveal cover Markdown, so a script or a
binary file under ``skills/`` is refused with the reason. Readable: everything in the memory root except ``.git``.
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
WRITABLE_SUFFIX = ".md"
RULE = f"the agent may write only {MEMORY_MD}, {MEMORY_SUMMARY} and Markdown files under {WRITABLE_FOLDER}/"


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
    if "/".join(parts) in WRITABLE_FILES:
        return None
    if parts[0] == WRITABLE_FOLDER and len(parts) > 1:
        if parts[-1].endswith(WRITABLE_SUFFIX):
            return None
        return (
            f"{'/'.join(parts)} is not Markdown: under {WRITABLE_FOLDER}/ only {WRITABLE_SUFFIX} files, whose every line "
            "memtui cleans of hidden characters, marks by trust and shows in the review"
        )
    return RULE


def content_refusal(data: bytes) -> str | None:
    """Why the agent may not write ``data`` into a memory file (binary: a NUL byte, or not UTF-8), or None."""
    if b"\0" in data:
        return "binary content (a NUL byte): memory files are text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary content (not UTF-8): memory files are text"
    return None
