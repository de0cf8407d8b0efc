"""Private by default: the home, the memory root and its .git are 0700; every file memtui writes is 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memtui.adapters.memroot.files import write_if_changed
from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.core.private import tighten_home
from memtui.state.db import connect
from tests.conftest import approve_root
from tests.fixtures.rollouts import write_codex_rollout


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def loose_entries(top: Path) -> list[str]:
    """Everything under ``top`` (itself included) that a group or other user could read."""
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [".", *dirnames, *filenames]:
            path = Path(dirpath) / name if name != "." else Path(dirpath)
            if not path.is_symlink() and mode(path) & 0o077:
                out.append(f"{path.relative_to(top)} {mode(path):04o}")
    return out


@pytest.fixture
def fresh_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "new-home" / "memtui"  # neither the home nor its parent exists yet
    monkeypatch.setenv("MEMTUI_HOME", str(home))
    os.umask(0o022)  # the usual umask: memtui must not rely on the user's
    return home


def test_a_new_home_and_everything_in_it_is_private(fresh_home, isolated_env, capsys):
    write_codex_rollout(isolated_env["CODEX_HOME"], mtime=1_700_000_000, cwd="/work/proj")
    assert main(["ingest"]) == 0
    assert main(["phase1", "--all", "--offline"]) == 0
    # a person's line, so Phase 2 has something to consolidate whatever the offline extractor made of the rollout
    (resolve_paths().memory_root / "MEMORY.md").write_text("# Memory\n- use uv\n")
    assert main(["phase2", "--offline", "--force"]) == 0
    assert main(["review", "approve"]) == 0
    paths = resolve_paths()
    assert mode(paths.home) == 0o700 and mode(paths.memory_root) == 0o700 and mode(paths.memory_root / ".git") == 0o700
    db = paths.state_db
    assert mode(db) == 0o600
    conn = connect(db)  # the WAL and SHM files exist while a connection is open
    try:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('probe', '1')")
        wal = db.with_name(db.name + "-wal")
        shm = db.with_name(db.name + "-shm")
        assert wal.exists() and shm.exists() and mode(wal) == 0o600 and mode(shm) == 0o600
    finally:
        conn.close()
    assert (paths.memory_root / "MEMORY.md").is_file() and mode(paths.memory_root / "MEMORY.md") == 0o600
    objects = [p for p in (paths.memory_root / ".git" / "objects").rglob("*") if p.is_file()]
    assert objects  # the baseline commit's objects exist, and none is readable by others
    assert loose_entries(paths.home) == []
    assert "readable by other users" not in capsys.readouterr().err  # nothing to tighten in a home memtui made


def test_memory_files_are_private_even_without_the_cli_umask(tmp_path):
    os.umask(0o022)
    target = tmp_path / "m" / "MEMORY.md"
    assert write_if_changed(target, "x\n")
    assert mode(target) == 0o600


def test_an_existing_loose_home_is_tightened_once_and_the_user_is_told(isolated_env, capsys):
    home = isolated_env["MEMTUI_HOME"]
    os.chmod(home, 0o755)
    (home / "memories").mkdir(mode=0o755)
    os.chmod(home / "memories", 0o755)
    (home / "memories" / "MEMORY.md").write_text("notes\n")
    os.chmod(home / "memories" / "MEMORY.md", 0o644)
    (home / "state.sqlite").touch()
    os.chmod(home / "state.sqlite", 0o644)
    os.remove(home / "state.sqlite")  # an empty file is not a database; let memtui create it
    assert main(["status"]) == 0
    err = capsys.readouterr().err
    assert "was readable by other users; made it private" in err
    assert loose_entries(home) == []
    assert main(["status"]) == 0
    assert "readable by other users" not in capsys.readouterr().err  # the second run has nothing to say


def test_tighten_home_reports_each_change_and_skips_symlinks(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    os.chmod(home, 0o755)
    outside = tmp_path / "outside.txt"
    outside.write_text("not memtui's")
    os.chmod(outside, 0o644)
    (home / "link").symlink_to(outside)
    changed = tighten_home(home, home / "memories")
    assert changed == [f"{home} 0755 -> 0700"]
    assert mode(outside) == 0o644  # a symlink's target is not memtui's to change
    assert tighten_home(home, home / "memories") == []


def test_export_creates_private_files_and_keeps_the_mode_of_existing_ones(isolated_env, tmp_path):
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "memory_summary.md").write_text("v1\nsummary\n")
    approve_root(root)
    os.umask(0o022)
    created = tmp_path / "notes" / "CLAUDE.md"
    assert main(["export", "agents-md", "--scope", "global", str(created)]) == 0
    assert mode(created) == 0o600
    existing = tmp_path / "shared" / "AGENTS.md"
    existing.parent.mkdir()
    existing.write_text("# Team rules\n")
    os.chmod(existing, 0o644)
    assert main(["export", "agents-md", "--scope", "global", str(existing)]) == 0
    assert mode(existing) == 0o644 and "summary" in existing.read_text()
