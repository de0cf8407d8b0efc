"""A broken environment: corrupt state, broken .git, read-only or full disk, no model server, a garbage server."""

from __future__ import annotations

import errno
import hashlib
import os
import pathlib
import random
import socket
import sqlite3
from pathlib import Path

import pytest

from memtui.adapters.memroot import baseline
from memtui.cli import main
from memtui.services import context as context_module
from memtui.services.ingest import run_ingest
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from tests.fixtures.rollouts import write_codex_rollout
from tests.reliability import figures
from tests.reliability.harness import (
    IDLE,
    LEASE,
    NOW,
    Home,
    baseline_problems,
    frozen,
    head_file,
    integrity_ok,
    run_cli,
)
from tests.reliability.trials import THREADS, seed_phase2, seed_rollouts
from tests.support.chat_server import ChatServer, reply_garbage


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rollout_home(tmp_path: Path) -> Home:
    from memtui.services.ingest import run_ingest

    home = Home(tmp_path).make()
    seed_rollouts(home, random.Random(3))
    with frozen(NOW):
        ctx = home.context()
        run_ingest(ctx)
        ctx.close()
    return home


# --- corrupt state.sqlite ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["garbage", "torn_pages"])
def test_corrupt_state_is_a_clear_error_never_silent_loss_and_doctor_is_the_way_out(tmp_path, damage):
    with figures.trial("broken environment"):
        home = _rollout_home(tmp_path)
        db = home.memtui / "state.sqlite"
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        data = bytearray(db.read_bytes())
        if damage == "garbage":
            data = bytearray(os.urandom(len(data)))
        else:  # a valid header, the rest of the pages torn
            for i in range(100, len(data)):
                data[i] = (data[i] * 31 + 7) % 256
        db.write_bytes(bytes(data))
        before = _sha(db)
        env = home.env()
        for args in (["status"], ["ingest"], ["phase1", "--offline"], ["phase2", "--offline"]):
            done = run_cli(home, args, env)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            assert "doctor --reset-state" in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
            assert _sha(db) == before, f"{args} changed the broken database"
        done = run_cli(home, ["doctor", "--reset-state", "--yes"], env)
        assert done.returncode == 0, done.stderr
        aside = [
            p
            for p in db.parent.iterdir()
            if p.name.startswith("state.sqlite.broken-") and not p.name.endswith(("-wal", "-shm"))
        ]
        assert len(aside) == 1 and _sha(aside[0]) == before  # moved aside byte for byte: nothing lost
        assert run_cli(home, ["ingest"], env).returncode == 0
        assert integrity_ok(db)


# --- the memory root's .git ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "head_garbage", "objects_gone", "empty_dir", "file_not_dir"])
def test_broken_git_is_reinitialised_as_a_baseline_of_the_current_files(tmp_path, damage):
    with figures.trial("broken environment"):
        home = Home(tmp_path).make()
        with ChatServer() as server:
            seed_phase2(home, server)
        git = home.root / ".git"
        memory = (home.root / "MEMORY.md").read_bytes()
        (home.root / "notes.md").write_text("a person's own file\n")
        import shutil

        if damage == "missing":
            shutil.rmtree(git)
        elif damage == "head_garbage":
            (git / "HEAD").write_bytes(b"\x00garbage\xff")
        elif damage == "objects_gone":
            for sub in (git / "objects").iterdir():
                if len(sub.name) == 2:
                    shutil.rmtree(sub)
        elif damage == "empty_dir":
            shutil.rmtree(git)
            git.mkdir()
        else:
            shutil.rmtree(git)
            git.write_text("gitdir: /nowhere\n")
        with frozen(NOW + 10):
            ctx = home.context()
            result = run_phase2(ctx, offline=True, force=True)
            assert result.outcome == "awaiting_review", result.reason
            assert baseline_problems(home.root) == []
            assert head_file(home.root, "notes.md") == b"a person's own file\n"  # the current files are the baseline
            assert head_file(home.root, "MEMORY.md") == memory
            review.approve(ctx)
            ctx.close()
        assert baseline_problems(home.root) == []
        assert (home.root / "notes.md").read_text() == "a person's own file\n"


# --- read-only memory root -------------------------------------------------------------------------------------------


def _make_read_only(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod a-w when that binds us; as root (it does not), refuse every write under the root at the I/O calls."""
    if os.geteuid() != 0:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o444)
            os.chmod(dirpath, 0o555)
        return
    real = str(root.resolve())

    def inside(p) -> bool:
        return str(Path(os.fspath(p)).resolve()).startswith(real)

    def refuse(p):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(p))

    orig_write, orig_replace, orig_unlink, orig_mkdir = (
        pathlib.Path.write_bytes,
        os.replace,
        os.unlink,
        pathlib.Path.mkdir,
    )
    monkeypatch.setattr(pathlib.Path, "write_bytes", lambda s, d: refuse(s) if inside(s) else orig_write(s, d))
    monkeypatch.setattr(os, "replace", lambda a, b, **k: refuse(b) if inside(b) else orig_replace(a, b, **k))
    monkeypatch.setattr(os, "unlink", lambda p, **k: refuse(p) if inside(p) else orig_unlink(p, **k))
    monkeypatch.setattr(
        pathlib.Path,
        "mkdir",
        lambda s, *a, **k: (
            (None if s.is_dir() and k.get("exist_ok") else refuse(s)) if inside(s) else orig_mkdir(s, *a, **k)
        ),
    )
    orig_git = baseline.run_git
    readonly = {"add", "commit", "commit-tree", "update-ref", "init", "read-tree", "prune", "write-tree", "reflog"}

    def git(root_, *args, check=True):
        if args and args[0] in readonly:
            raise baseline.BaselineError(f"git {args[0]} failed (128): fatal: Unable to create index.lock: Read-only")
        return orig_git(root_, *args, check=check)

    monkeypatch.setattr(baseline, "run_git", git)


def _restore_writable(root: Path) -> None:
    if os.geteuid() != 0:
        for dirpath, _dirs, files in os.walk(root):
            os.chmod(dirpath, 0o755)
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)


def test_read_only_memory_root_is_a_clear_failure_and_nothing_is_lost(tmp_path, monkeypatch):
    with figures.trial("broken environment"):
        home = Home(tmp_path).make()
        with ChatServer() as server:
            seed_phase2(home, server)
        before = {p: p.read_bytes() for p in home.root.rglob("*") if p.is_file()}
        _make_read_only(home.root, monkeypatch)
        try:
            with frozen(NOW + 10):
                ctx = home.context()
                result = run_phase2(ctx, offline=True, force=True)
                assert result.outcome == "failed"
                assert "Read-only" in result.reason or "Permission denied" in result.reason, result.reason
                job = ctx.conn.execute("SELECT * FROM jobs WHERE kind='memory_consolidate_global'").fetchone()
                assert job["status"] == "error" and job["retry_at"] > NOW + 10  # backs off
                assert ctx.conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 3
                ctx.close()
        finally:
            monkeypatch.undo()
            _restore_writable(home.root)
        after = {p: p.read_bytes() for p in home.root.rglob("*") if p.is_file()}
        assert {p: b for p, b in after.items() if ".git" not in p.parts} == {
            p: b for p, b in before.items() if ".git" not in p.parts
        }
        assert baseline_problems(home.root) == []
        with frozen(NOW + 10 + 3600 + 1):  # writable again, after the backoff: the run goes through
            ctx = home.context()
            assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
            review.approve(ctx)
            ctx.close()


# --- disk full ---------------------------------------------------------------------------------------------------------


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, n: int) -> list[int]:
    """The n-th ``Path.write_bytes`` (and every later one) writes half its bytes, then fails with ENOSPC."""
    calls = [0]
    orig = pathlib.Path.write_bytes

    def write_bytes(self, data):
        calls[0] += 1
        if calls[0] >= n:
            with open(self, "wb") as fh:
                fh.write(bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return orig(self, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)
    return calls


def test_disk_full_while_phase2_writes_fails_cleanly_at_every_write(tmp_path, monkeypatch):
    with figures.trial("broken environment") as trial:
        tried = 0
        for n in range(1, 7):
            home = Home(tmp_path / f"n{n}").make()
            with ChatServer() as server:
                old = seed_phase2(home, server)
            with monkeypatch.context() as m:
                calls = _disk_full_after(m, n)
                with frozen(NOW + 10):
                    ctx = home.context()
                    result = run_phase2(ctx, offline=True, force=True)
                    ctx.close()
            if calls[0] < n:
                assert result.outcome == "awaiting_review"  # fewer writes than n: no fault
                break
            tried += 1
            trial.faults = trial.trials = tried
            assert result.outcome == "failed" and "No space left" in result.reason, (n, result)
            if "undo incomplete" not in result.reason:  # else the disk was still full for the undo: the rerun does it
                assert (home.root / "MEMORY.md").read_bytes() == old, n
            strays = [p.name for p in home.root.rglob("*") if ".tmp-" in p.name]
            assert strays == [], (n, strays)
            assert baseline_problems(home.root) == []
            with frozen(NOW + 10 + 3600 + 1):  # space is back, the backoff is over: the rerun recovers
                ctx = home.context()
                assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
                run = review.pending_run(ctx.conn)
                assert "MEMORY.md" not in run.input_diff  # the failed run's writes never pose as a person's edit
                review.approve(ctx)
                assert THREADS[2] in (home.root / "raw_memories.md").read_text()
                ctx.close()
            trial.passed = tried
        assert tried >= 2


def test_disk_full_in_the_state_database_is_a_clear_error_and_loses_nothing(tmp_path, monkeypatch, capsys):
    with figures.trial("broken environment"):
        home = Home(tmp_path).make()
        for i in range(30):
            write_codex_rollout(
                home.codex, user_messages=[f"Task {i}: " + "fix the flaky checkout test " * 20], mtime=IDLE
            )
        with frozen(NOW):
            ctx = home.context()
            run_ingest(ctx)
            ctx.close()
        db = home.memtui / "state.sqlite"
        before = sqlite3.connect(db).execute("SELECT COUNT(*) FROM threads").fetchone()[0]
        real_connect = context_module.connect

        def full_connect(path):
            conn = real_connect(path)
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
            return conn

        monkeypatch.setattr(context_module, "connect", full_connect)
        for k, v in home.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
        with frozen(NOW):
            code = main(["phase1", "--offline"])
        err = capsys.readouterr().err
        assert code == 2 and "full" in err and "Traceback" not in err, (code, err)
        monkeypatch.setattr(context_module, "connect", real_connect)
        assert integrity_ok(db)
        assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM threads").fetchone()[0] == before
        with frozen(NOW + LEASE + 1):
            ctx = home.context()
            summary = run_phase1(ctx, offline=True)
            assert summary.failed == 0 and summary.succeeded + summary.noop == summary.candidates > 0
            ctx.close()


# --- the model server ----------------------------------------------------------------------------------------------------


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("server_kind", ["unreachable", "garbage"])
def test_no_model_server_or_a_garbage_one_is_a_clear_failure_and_jobs_back_off(tmp_path, server_kind):
    with figures.trial("broken environment", faults=2):
        home = _rollout_home(tmp_path)
        with ChatServer(default=reply_garbage()) as garbage:
            url = f"http://127.0.0.1:{_closed_port()}/v1" if server_kind == "unreachable" else garbage.base_url
            with frozen(NOW):
                ctx = home.context(url)
                s = run_phase1(ctx)
                assert s.candidates > 0 and s.failed == s.candidates and s.succeeded == 0
                reason = next(iter(s.failures))
                expected = "cannot reach the model server" if server_kind == "unreachable" else "model"
                assert expected in reason, reason
                again = run_phase1(ctx)  # right away: every job is backing off, no request is sent
                assert again.claimed == 0 and again.skipped.get("retry_backoff") == s.candidates
                sent = len(garbage.requests)
                ctx.close()
            done = run_cli(home, ["phase1"], home.env(url, frozen=NOW + 3600 + 1))
            assert done.returncode == 1 and "failed" in done.stdout and "Traceback" not in done.stderr, done
            # Phase 2 through the agent: a failed run, its writes undone, the lock backing off.
            with frozen(NOW + 7200):
                ctx = home.context(url)
                from tests.test_phase2_support import add_output

                add_output(ctx.conn, THREADS[0], NOW - 3600)
                result = run_phase2(ctx, force=True)
                assert result.outcome == "failed" and "model call failed" in result.reason, result.reason
                assert not (home.root / "MEMORY.md").exists()
                # an automatic run waits out the backoff; a person's (--force, --retry) runs at once
                assert run_phase2(ctx).reason.startswith("retry backoff")
                ctx.close()
            assert server_kind == "unreachable" or len(garbage.requests) > sent
