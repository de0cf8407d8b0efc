"""memtui's own model sessions must never come back as the user's sessions (no self-learning).

Agent CLIs may persist what memtui asked them (an older Claude Code always writes a transcript). Three guards, each
enough on its own: no session in the user's folders (codex runs with memtui's private ``CODEX_HOME``, claude with
``--no-session-persistence`` where it has it; ``llm.backends.cleanroom``), a memtui-owned working directory (and the
memory root for Phase 2), and a marker on the first line of every prompt memtui sends. Ingest skips a session whose
cwd is one of those folders or whose first user message starts with the marker.
"""

from __future__ import annotations

import os
from pathlib import Path

from memtui.core.paths import Paths

MARKER = "memtui-internal-call"
MARKER_LINE = (
    f"{MARKER}: this session was started by memtui to process memories; it is not a person's session "
    "and memtui never ingests it.\n\n"
)
SKIP_REASON = "created by memtui's own model call (not a person's session)"


def work_dir(paths: Paths) -> Path:
    """The folder memtui runs agent CLIs in (created on demand); never a user project."""
    path = paths.home / "work"
    path.mkdir(parents=True, exist_ok=True)
    return path


def own_dirs(paths: Paths) -> tuple[str, ...]:
    """Real paths of every folder memtui runs a model session in."""
    return tuple(os.path.realpath(p) for p in (paths.home / "work", paths.memory_root))


def with_marker(prompt: str) -> str:
    return MARKER_LINE + prompt


def is_own_session(cwd: str | None, first_prompt: str | None, dirs: tuple[str, ...]) -> bool:
    if first_prompt and first_prompt.lstrip().startswith(MARKER):
        return True
    if not cwd:
        return False
    real = os.path.realpath(cwd)
    return any(real == d or real.startswith(d + os.sep) for d in dirs)
