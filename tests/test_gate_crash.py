"""The gate under relative homes, killed processes and contention: nothing a person wrote is lost, nothing sticks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memtui.context import open_context
from memtui.phase2.baseline import head_commit
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"


def cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "MEMTUI_FROZEN_TIME": str(FROZEN_NOW), **env}
    return subprocess.run(
        [sys.executable, "-m", "memtui", *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_a_relative_memtui_home_keeps_the_baseline_and_phase2_works(tmp_path, frozen_clock):
    home = tmp_path / "rel" / "home"
    ctx = open_context(home=home)
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    ctx.close()
    first = cli("phase2", "--offline", "--auto-approve", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert first.returncode == 0 and "approved" in first.stdout, first.stdout + first.stderr
    root = home / "memories"
    base = head_commit(root)
    assert (root / ".git").is_dir() and not (tmp_path / "rel" / "home" / "memories" / "home").exists()
    ctx = open_context(home=home)
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    ctx.close()
    second = cli("phase2", "--offline", "--force", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert second.returncode == 0 and "awaiting review" in second.stdout, second.stdout + second.stderr
    assert (root / ".git").is_dir() and head_commit(root) == base
    shown = cli("review", "show", "--stat", cwd=tmp_path / "rel", MEMTUI_HOME="home")
    assert shown.returncode == 0 and "MEMORY.md" in shown.stdout, shown.stdout + shown.stderr
