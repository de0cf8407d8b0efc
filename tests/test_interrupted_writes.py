"""Issue 32.6: a write killed before its rename leaves a full-text temp copy; recovery and forget sweep every such
copy (a registered store), and never one a live process is still writing."""

from __future__ import annotations

import os
import subprocess
import sys

from memtui.adapters.memroot.approved import interrupted_publishes
from memtui.adapters.memroot.files import interrupted_writes, sweep_interrupted_writes, temp_name
from memtui.services import stores


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_temp_copies_of_dead_writers_are_found_and_live_ones_are_not(tmp_path):
    root = tmp_path / "memories"
    (root / "rollout_summaries").mkdir(parents=True)
    (root / ".git").mkdir()
    dead = _dead_pid()
    gone = [root / f".MEMORY.md.tmp-{dead}", root / "rollout_summaries" / f".a.md.tmp-{dead}"]
    live = root / temp_name("memory_summary.md")  # this process: alive
    inside_git = root / ".git" / f".index.tmp-{dead}"
    for path in [*gone, live, inside_git]:
        path.write_text("text")
    assert interrupted_writes(root) == sorted(gone)
    assert sweep_interrupted_writes(root) == 2
    assert live.exists() and inside_git.exists() and not any(p.exists() for p in gone)


def test_a_publish_killed_before_its_rename_is_found(tmp_path):
    root = tmp_path / "memories"
    root.mkdir()
    dead = _dead_pid()
    left = tmp_path / f".memories-approved-0123456789abcdef.tmp-{dead}-abcd1234"
    mine = tmp_path / f".memories-approved-0123456789abcdef.tmp-{os.getpid()}-efgh5678"
    left.mkdir()
    mine.mkdir()
    assert interrupted_publishes(root) == [left]


def test_the_store_registry_sweeps_temp_copies_on_forget():
    store = next(s for s in stores.STORES if s.name.startswith("temp copies of interrupted writes"))
    assert store.forget is stores.sweep_interrupted
    assert "memories/.*.tmp-*" in store.paths and ".memories-approved-*.tmp-*" in store.paths
    memory_files = next(s for s in stores.STORES if s.name.startswith("memory files"))
    assert not any(".tmp-" in p for p in memory_files.paths), "a temp copy is not a file the next run rewrites"
