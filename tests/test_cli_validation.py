"""Bad arguments get a clear message and a non-zero exit; read-only commands never create a home; a person's
Phase 2 run is not held back by the failure backoff. Each case runs the real ``memtui`` in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memtui.demo.build import build_demo_home
from tests.support.waiting import HANG_GUARD


def memtui(*args: str, home: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env["MEMTUI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "memtui", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=HANG_GUARD
    )


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo home (a run awaiting review, extracted memories), built once for the module."""
    return build_demo_home(tmp_path_factory.mktemp("demo") / "demo").home


@pytest.fixture
def demo_home(demo_template: Path, tmp_path: Path) -> Path:
    home = tmp_path / "demo-home"
    shutil.copytree(demo_template, home, symlinks=True)
    return home


# ---- export agents-md: a folder, or a path whose folder does not exist ----------------------------------------


def test_export_to_a_folder_outside_git_says_to_name_the_file(demo_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    out = memtui("export", "agents-md", str(folder), home=demo_home)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert f"{folder} is a folder; give the file to write, e.g. {folder / 'AGENTS.md'}" in out.stderr
    assert list(folder.iterdir()) == []


def test_export_to_a_repository_folder_is_refused_the_same_way(demo_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = memtui("export", "agents-md", str(repo), home=demo_home)
    assert out.returncode == 2
    assert "is a folder" in out.stderr and "tracked by git" not in out.stderr and "Traceback" not in out.stderr


def test_export_of_nothing_to_a_missing_path_is_not_unchanged(demo_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "nope" / "deeper" / "AGENTS.md"  # a project the memory holds nothing for
    out = memtui("export", "agents-md", str(target), home=demo_home)
    assert out.returncode == 1
    assert f"nothing to export for this scope, so {target} was not created" in out.stderr
    assert "unchanged" not in out.stdout and not target.parent.exists()


def test_export_outside_git_that_exports_nothing_says_to_use_scope_global(demo_home: Path, tmp_path: Path) -> None:
    """Issue 33.7: the default scope of a file outside any git work tree is its folder's project, which the memory
    rarely names; the refusal says which flag exports something, and that flag does."""
    target = tmp_path / "notes" / "AGENTS.md"
    target.parent.mkdir()
    out = memtui("export", "agents-md", str(target), home=demo_home)
    assert out.returncode == 1 and "--scope global exports every project's memory" in out.stderr
    out = memtui("export", "agents-md", str(target), "--scope", "global", home=demo_home)
    assert out.returncode == 0 and target.is_file() and "--scope global exports" not in out.stderr


# ---- phase1, review approve, review commit -------------------------------------------------------------------


def test_phase1_with_an_unknown_thread_says_so(demo_home: Path) -> None:
    out = memtui("phase1", "--offline", "--thread", "bogus-id", home=demo_home)
    assert out.returncode == 2
    assert "no rollout with id 'bogus-id' is indexed" in out.stderr


@pytest.mark.parametrize("flag", ["--limit", "--concurrency"])
@pytest.mark.parametrize("value", ["-3", "0", "lots"])
@pytest.mark.slow
def test_phase1_counts_must_be_positive(demo_home: Path, flag: str, value: str) -> None:
    out = memtui("phase1", "--offline", flag, value, home=demo_home)
    assert out.returncode == 2
    assert f"argument {flag}:" in out.stderr
    assert ("must be at least 1" if value != "lots" else "expected a whole number") in out.stderr


def test_approve_with_an_empty_except_list_approves_nothing(demo_home: Path) -> None:
    out = memtui("review", "approve", "--except", "", home=demo_home)
    assert out.returncode == 2
    assert "--except needs hunk ids" in out.stderr and "nothing was approved" in out.stderr
    still = memtui("review", "show", "--stat", home=demo_home)
    assert "awaits review" in still.stderr


@pytest.mark.slow
def test_commit_with_nothing_to_commit_records_nothing(demo_home: Path) -> None:
    assert memtui("review", "approve", home=demo_home).returncode == 0
    root = demo_home / "memories"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout
    out = memtui("review", "commit", "-m", "nothing", home=demo_home)
    assert out.returncode == 1
    assert "nothing to commit" in out.stderr
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout == head
    history = memtui("history", home=demo_home).stdout
    assert "manual commit" not in history


# ---- a missing home; Phase 2 on an empty home ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("review", "show"),
        ("history",),
        ("search", "checkout"),
        ("lint",),
        ("export", "prompt"),
        ("batch", "status"),
        ("doctor",),
        ("phase2", "--offline"),
    ],
)
@pytest.mark.slow
def test_read_only_commands_never_create_a_home(tmp_path: Path, args: tuple[str, ...]) -> None:
    home = tmp_path / "no-such-home"
    out = memtui("--home", str(home), *args)
    assert out.returncode == 2, out.stderr
    assert f"no memtui home at {home}" in out.stderr and "memtui ingest" in out.stderr
    assert not home.exists()


@pytest.mark.slow
def test_phase2_on_an_empty_home_has_nothing_to_consolidate(tmp_path: Path) -> None:
    home = tmp_path / "empty"
    assert memtui("--home", str(home), "ingest").returncode == 0  # creates the home, finds no rollouts
    out = memtui("--home", str(home), "phase2", "--offline")
    assert out.returncode == 0
    assert out.stdout.startswith("skipped: nothing to consolidate")
    assert not (home / "memories" / "MEMORY.md").exists()
    assert "never run" in memtui("--home", str(home), "status").stdout


# ---- a person's Phase 2 run after a failure ----------------------------------------------------------------


def _fail_phase2(home: Path) -> None:
    """Leave the global job failed with a retry an hour away, as a failed run does."""
    import sqlite3
    import time

    from memtui.state.jobs import GLOBAL

    conn = sqlite3.connect(home / "state.sqlite")
    with conn:
        changed = conn.execute(
            "UPDATE jobs SET status='error', last_error='failed_agent: boom', retry_at=?, finished_at=?, "
            "lease_until=NULL WHERE kind=?",
            (int(time.time()) + 3600, int(time.time()), GLOBAL),
        ).rowcount
    conn.close()
    assert changed == 1


@pytest.mark.parametrize("flag", ["--retry", "--force"])
@pytest.mark.slow
def test_a_run_asked_for_by_hand_is_not_held_by_the_backoff(demo_home: Path, flag: str) -> None:
    assert memtui("review", "reject", "--reason", "not now", home=demo_home).returncode == 0
    _fail_phase2(demo_home)
    waits = memtui("phase2", "--offline", home=demo_home)
    assert waits.returncode == 0
    assert "retry backoff" in waits.stdout and "`memtui phase2 --retry`" in waits.stdout
    out = memtui("phase2", "--offline", flag, home=demo_home)
    assert out.returncode == 0, out.stderr
    assert "retry backoff" not in out.stdout
    assert "awaiting review" in out.stdout or out.stdout.startswith("no changes")
