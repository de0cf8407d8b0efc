"""Tasks in MEMORY.md: ``## Task <id>: title`` headings and the ``[Task <id>]`` tags that point at them.

One definition for every module that reads them (scope, health blocks, review evidence and references, forget,
tombstones). An id is a number (what an agent writes: ``## Task 3``) or memtui's stable id of the session the task
came from (``task_id``: what the offline consolidator writes), so a task keeps its id when another task is added,
dropped or left out of a review, and leaving one hunk out never renumbers the rest.
"""

from __future__ import annotations

import re

TASK_HEADING = re.compile(r"^##\s+Task\s+([0-9A-Za-z]+)\b")
TASK_REF = re.compile(r"\[Task\s+([0-9A-Za-z]+)\]")
TASK_REF_SPACED = re.compile(r"\s*\[Task\s+[0-9A-Za-z]+\]")  # a tag with the space before it (to remove it)
TASK_REFS_AT_END = re.compile(r"(?:\s*\[Task\s+[0-9A-Za-z]+\])+\s*$")
STABLE_ID_CHARS = 8


def task_id(thread_id: str, taken: set[str] | None = None) -> str:
    """A short id for the task of one session that does not change with the tasks around it: the end of its thread
    id (a UUIDv7 ends in random bits), longer when another task already has that end."""
    hexed = "".join(c for c in thread_id.lower() if c.isalnum())
    size = STABLE_ID_CHARS
    while taken is not None and hexed[-size:] in taken and size < len(hexed):
        size += 4
    return hexed[-size:] or "0"
