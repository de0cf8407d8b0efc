"""Building blocks of the reliability suite, shared by the CI tests and ``benchmarks/soak.py``.

A ``Home`` is a throwaway set of folders (memtui home, CODEX_HOME, CLAUDE_CONFIG_DIR, HOME) with the environment a
``python -m memtui`` subprocess needs; in-process calls get the same folders through ``open_context`` overrides, so
many homes can live side by side inside one test. Subprocesses are always killed and reaped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtui.adapters.memroot.baseline import run_git
from memtui.core import clock
from memtui.services.context import Context, open_context
from tests.support.waiting import HANG_GUARD

NOW = 1_783_684_800  # 2026-07-10T12:00:00Z, the frozen "now" of every trial
IDLE = NOW - 7 * 3600  # old enough to be idle, young enough to be in the age window
LEASE = 60  # seconds: the lease of every subprocess; a rerun happens at NOW + LEASE + 1

VALID = {
    "rollout_summary": "# Fixed the timezone-dependent CI failure\n\nRollout context: shop-api\n",
    "rollout_slug": "fix-ci-timezone",
    "raw_memory": "---\ndescription: CI runs in UTC\ntask: fix ci\ntask_group: shop-api\ntask_outcome: success\n"
    "cwd: /home/ana/src/shop-api\nkeywords: ci, tz\n---\n### Task 1: fix ci\n- run tests with TZ=UTC\n",
}


@dataclass(frozen=True)
class Home:
    base: Path

    @property
    def memtui(self) -> Path:
        return self.base / "memtui-home"

    @property
    def codex(self) -> Path:
        return self.base / "codex-home"

    @property
    def claude(self) -> Path:
        return self.base / "claude-home"

    @property
    def user(self) -> Path:
        return self.base / "user-home"

    @property
    def root(self) -> Path:
        return self.memtui / "memories"

    def make(self) -> Home:
        for p in (self.memtui, self.codex, self.claude, self.user):
            p.mkdir(parents=True, exist_ok=True)
        return self

    def env(self, base_url: str | None = None, frozen: int | None = NOW, **extra: str) -> dict[str, str]:
        """The environment of a subprocess on this home (no MEMTUI_/OPENAI_ variable leaks in)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTUI_", "OPENAI_"))}
        env.update(
            MEMTUI_HOME=str(self.memtui),
            CODEX_HOME=str(self.codex),
            CLAUDE_CONFIG_DIR=str(self.claude),
            HOME=str(self.user),
            XDG_CONFIG_HOME=str(self.user / ".config"),
            MEMTUI_JOB_LEASE_SECONDS=str(LEASE),
        )
        if frozen is not None:
            env["MEMTUI_FROZEN_TIME"] = str(frozen)
        if base_url:
            env.update(
                OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-test-loopback-000000000000", MEMTUI_PROVIDER="openai"
            )
        env.update(extra)
        return env

    def context(self, base_url: str | None = None, **overrides: Any) -> Context:
        """An in-process context on this home; with ``base_url`` the model is the loopback server."""
        flags: dict[str, Any] = {"codex_home": self.codex, "claude_dir": self.claude, "job_lease_seconds": LEASE}
        if base_url:
            flags.update(provider="openai", base_url=base_url, api_key="sk-test-loopback-000000000000")
        flags.update(overrides)
        return open_context(flags, home=self.memtui)


@contextlib.contextmanager
def frozen(ts: float) -> Iterator[None]:
    clock.freeze(ts)
    try:
        yield
    finally:
        clock.reset()


def memtui_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "memtui", *args]


def spawn(home: Home, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        memtui_cmd(*args), env=env, cwd=home.base, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run_cli(
    home: Home, args: list[str], env: dict[str, str], timeout: float = HANG_GUARD
) -> subprocess.CompletedProcess:
    return subprocess.run(memtui_cmd(*args), env=env, cwd=home.base, capture_output=True, text=True, timeout=timeout)


def kill_when(proc: subprocess.Popen, trigger: Callable[[], bool], timeout: float = HANG_GUARD) -> bool:
    """SIGKILL ``proc`` once ``trigger()`` is true; True if it was still running then (a fault was injected).
    ``timeout`` only stops a hang: a slow process is killed at its trigger, not early."""
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and not trigger():
            if time.monotonic() > deadline:
                break
            time.sleep(0.005)
        alive = proc.poll() is None
        if alive:
            os.kill(proc.pid, signal.SIGKILL)
        return alive
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=HANG_GUARD)


def integrity_ok(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


# --- memory root checks ----------------------------------------------------------------------------------------


def baseline_problems(root: Path) -> list[str]:
    """Why the memory root is not a valid one-commit baseline (empty list when it is)."""
    problems = []
    if not (root / ".git").is_dir():
        return [".git is missing"]
    try:
        run_git(root, "fsck", "--no-dangling", "--no-progress")
        head = run_git(root, "rev-parse", "--verify", "HEAD^{commit}").strip()
        count = int(run_git(root, "rev-list", "--count", head).strip())
        if count != 1:
            problems.append(f"baseline has {count} commits, not one")
        tracked = run_git(root, "ls-tree", "-r", "--name-only", head).splitlines()
        if "phase2_workspace_diff.md" in tracked:
            problems.append("the diff file is committed")
        if any(".tmp-" in t for t in tracked):
            problems.append("a temp file is committed")
    except Exception as exc:
        problems.append(f"git: {exc}")
    return problems


def head_file(root: Path, rel: str) -> bytes | None:
    try:
        return run_git(root, "show", f"HEAD:{rel}").encode()
    except Exception:
        return None


# --- tree snapshots --------------------------------------------------------------------------------------------


def snapshot(top: Path, exclude: tuple[Path, ...] = ()) -> dict[str, tuple[str, int, str]]:
    """{relative path: (kind, size, sha256 or link target)} of every entry under ``top`` (symlinks not followed)."""
    out: dict[str, tuple[str, int, str]] = {}
    skip = tuple(str(p) for p in exclude)
    for dirpath, dirnames, filenames in os.walk(top):
        if dirpath.startswith(skip):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            if str(path).startswith(skip):
                continue
            rel = str(path.relative_to(top))
            if path.is_symlink():
                out[rel] = ("link", 0, os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", 0, "")
            else:
                data = path.read_bytes()
                out[rel] = ("file", len(data), hashlib.sha256(data).hexdigest())
    return out


# --- finding secrets -------------------------------------------------------------------------------------------


def needles(secret: str) -> list[bytes]:
    """The byte forms a secret could be stored in: raw, JSON-escaped, and each long line of a multi-line one."""
    import json

    forms = {secret, json.dumps(secret)[1:-1]}
    if "\n" in secret:
        forms.update(line for line in secret.splitlines() if len(line) >= 24)
    return [f.encode() for f in forms if f]


def home_blobs(home: Home) -> Iterator[tuple[str, bytes]]:
    """Every byte stored under MEMTUI_HOME: files as they are (``state.sqlite`` and its ``-wal`` read raw, with no
    checkpoint first, so content left in the WAL or in free pages is found), plus every git object's content."""
    for path in sorted(home.memtui.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield str(path.relative_to(home.memtui)), path.read_bytes()
    if (home.root / ".git").is_dir():
        env = {"GIT_DIR": str(home.root / ".git"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        objects = subprocess.run(
            ["git", "cat-file", "--batch-all-objects", "--batch"], env={**os.environ, **env}, capture_output=True
        ).stdout
        yield "git objects", objects


def find_leaks(blobs: list[tuple[str, bytes]], secrets: list[str]) -> list[tuple[str, str]]:
    """(secret prefix, where) for every secret found in any blob."""
    leaks = []
    for secret in secrets:
        for where, data in blobs:
            if any(n in data for n in needles(secret)):
                leaks.append((secret[:12], where))
    return leaks
