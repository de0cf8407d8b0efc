"""Shared helpers for the Phase 2 tests (no tests here): rows inserted with plain SQL, as Phase 1 would leave them."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from memtui.services.context import Context, open_context

DAY = 86_400


def add_thread(
    conn: sqlite3.Connection,
    thread_id: str,
    *,
    cwd: str = "/work/proj",
    updated_at: int = 0,
    memory_mode: str = "enabled",
    history_mode: str = "legacy",
    git_branch: str | None = None,
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO threads (id, source_kind, path, cwd, session_source, memory_mode, history_mode,"
        " git_branch, updated_at, ingested_at) VALUES (?, 'codex', ?, ?, 'cli', ?, ?, ?, ?, ?)",
        (thread_id, f"/rollouts/{thread_id}.jsonl", cwd, memory_mode, history_mode, git_branch, updated_at, updated_at),
    )


def add_output(
    conn: sqlite3.Connection,
    thread_id: str,
    source_updated_at: int,
    *,
    raw: str | None = None,
    summary: str | None = None,
    slug: str | None = "fix_ci",
    usage_count: int | None = None,
    last_usage: int | None = None,
    cwd: str = "/work/proj",
    thread: bool = True,
    memory_mode: str = "enabled",
) -> None:
    if thread:
        add_thread(conn, thread_id, cwd=cwd, updated_at=source_updated_at, memory_mode=memory_mode)
    conn.execute(
        "INSERT OR REPLACE INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary,"
        " rollout_slug, generated_at, usage_count, last_usage) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            thread_id,
            source_updated_at,
            raw if raw is not None else f"- learned something in {thread_id}\n- the user prefers uv over pip",
            summary if summary is not None else f"# Fixed CI in {thread_id}\nDetails of the session.",
            slug,
            source_updated_at,
            usage_count,
            last_usage,
        ),
    )


def context() -> Context:
    return open_context()


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    """A git command on the memory root's repository, with no user or system config."""
    env = {"GIT_DIR": str(root / ".git"), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    env["PATH"] = "/usr/bin:/bin"
    return subprocess.run(["git", *args], input=stdin, env=env, capture_output=True, text=True, check=True).stdout


def _object_ids(root: Path, kind: str) -> list[str]:
    listing = _git(root, "cat-file", "--batch-all-objects", "--batch-check")
    return [line.split()[0] for line in listing.splitlines() if line.split()[1] == kind]


def git_objects(root: Path) -> str:
    """The contents of every blob in the repository, reachable or not."""
    blobs = _object_ids(root, "blob")
    return _git(root, "cat-file", "--batch", stdin="\n".join(blobs) + "\n") if blobs else ""


def git_commits(root: Path) -> list[str]:
    return _object_ids(root, "commit")
