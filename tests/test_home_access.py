"""A home memtui cannot write is said to be read-only (never a damaged database, nothing changed, no traceback);
a home that does not exist is created only by a first step, which says so; ``doctor --reset-state`` never acts
unasked. Each case runs the real ``memtui`` in a subprocess (issue 33.7).

Read-only is made as a person makes it: ``chmod a-w``. Root ignores mode bits, so as root the same commands run
under ``unshare -rm`` with the path bind-mounted read-only (a real read-only file system, which binds root too).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.waiting import HANG_GUARD

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
    b'"clientInfo":{"name":"test","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)
SEARCH = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"x"}}}\n'
BIND_RO = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "MEMTUI_HOME": str(home)}


def memtui(
    *args: str, home: Path, prefix: list[str] | None = None, stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    """Run ``memtui ARGS`` with stdin a pipe (not a terminal) carrying ``stdin``."""
    done = subprocess.run(
        [*(prefix or []), sys.executable, "-m", "memtui", *args],
        input=stdin,
        capture_output=True,
        env=_env(home),
        timeout=HANG_GUARD,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def _tree(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home made by ``memtui ingest`` (no rollouts), its WAL folded in: what a person has after a first run."""
    home = tmp_path / "home"
    assert memtui("ingest", home=home).returncode == 0
    conn = sqlite3.connect(home / "state.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return home


@pytest.fixture(params=["home folder", "database file"])
def read_only(request: pytest.FixtureRequest, home: Path) -> Iterator[tuple[Path, list[str]]]:
    """(the home, a command prefix) with the home folder or only its state.sqlite made read-only."""
    target = home if request.param == "home folder" else home / "state.sqlite"
    if os.geteuid() != 0:
        paths = [target, *(target.rglob("*") if target.is_dir() else [])]
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            yield home, []
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    prefix = ["unshare", "-rm", "sh", "-c", BIND_RO, str(target)]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("running as root (chmod does not stop root's writes) and no user namespace for a read-only mount")
    yield home, prefix


SLOW = pytest.mark.slow  # a subprocess each; status, mcp and the reset stay in the quick tier
COMMANDS = [
    pytest.param(("status",), id="status"),
    pytest.param(("health",), id="health", marks=SLOW),
    pytest.param(("ingest",), id="ingest", marks=SLOW),
    pytest.param(("phase1", "--offline"), id="phase1", marks=SLOW),
    pytest.param(("phase2", "--offline"), id="phase2", marks=SLOW),
    pytest.param(("review", "show"), id="review", marks=SLOW),
    pytest.param(("doctor",), id="doctor", marks=SLOW),
    pytest.param(("doctor", "--reset-state", "--yes"), id="reset-state"),
    pytest.param(("mcp",), id="mcp"),
    pytest.param((), id="tui", marks=SLOW),  # the terminal UI: refused before the screen opens
]


@pytest.mark.parametrize("args", COMMANDS)
def test_a_read_only_home_is_said_to_be_read_only_and_nothing_changes(
    read_only: tuple[Path, list[str]], args: tuple[str, ...]
) -> None:
    home, prefix = read_only
    before = _files(home)
    out = memtui(*args, home=home, prefix=prefix, stdin=INITIALIZE if args == ("mcp",) else b"")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    assert f"the memtui home {home}" in out.stderr and "read-only" in out.stderr, out.stderr
    assert "--home" in out.stderr  # what to do: make it writable, or use another home
    assert "not a usable" not in out.stderr and "doctor --reset-state" not in out.stderr  # never "corrupt"
    assert _files(home) == before


def _corrupt(home: Path) -> bytes:
    db = home / "state.sqlite"
    data = bytes(b ^ 0x5A for b in db.read_bytes())
    db.write_bytes(data)
    return data


def test_reset_state_without_a_terminal_asks_for_yes_and_changes_nothing(home: Path) -> None:
    broken = _corrupt(home)
    tree = _tree(home)
    out = memtui("doctor", "--reset-state", home=home)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "--reset-state --yes" in out.stderr and "nothing changed" in out.stderr
    assert _tree(home) == tree and (home / "state.sqlite").read_bytes() == broken
    done = memtui("doctor", "--reset-state", "--yes", home=home)
    assert done.returncode == 0, done.stderr
    aside = [p for p in home.iterdir() if p.name.startswith("state.sqlite.broken-") and p.suffix != ".sqlite-wal"]
    assert [p.read_bytes() for p in aside if not p.name.endswith(("-wal", "-shm"))] == [broken]
    assert memtui("status", home=home).returncode == 0


# ---- a home that does not exist -------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("health",), ("phase1", "--offline"), ("retention",), ("doctor", "--reset-state")])
def test_commands_that_only_use_a_home_never_create_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    home = tmp_path / "no-such-home"
    out = memtui(*args, home=home)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert f"no memtui home at {home}" in out.stderr and "`memtui ingest` creates it" in out.stderr
    assert "Traceback" not in out.stderr
    assert not home.exists()


def test_mcp_serves_an_empty_memory_that_says_why_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "no-such-home"
    out = memtui("mcp", home=home, stdin=INITIALIZE + SEARCH)
    assert out.returncode == 0, out.stderr
    assert "serving an empty memory" in out.stderr and str(home) in out.stderr
    answer = next(line for line in out.stdout.splitlines() if '"id":2' in line)
    assert '"isError":false' in answer and '"hits":[]' in answer
    assert f"there is no memtui home at {home}" in answer and "memtui ingest" in answer
    assert not home.exists()


def test_ingest_says_it_creates_a_new_home(tmp_path: Path) -> None:
    home = tmp_path / "new-home"
    out = memtui("ingest", home=home)
    assert out.returncode == 0, out.stderr
    assert f"no memtui home at {home} yet: creating it" in out.stderr
    assert (home / "state.sqlite").is_file()
    again = memtui("ingest", home=home)
    assert "creating" not in again.stderr


def test_the_rule_lives_in_the_context(tmp_path: Path) -> None:
    """One place decides: a context that may not create a home refuses; one that may says so, once."""
    from memtui.services.context import NoHome, open_context

    missing = tmp_path / "missing"
    with pytest.raises(NoHome, match=str(missing)):
        open_context(home=missing, creates_home=False).conn  # noqa: B018
    assert not missing.exists()
    said: list[str] = []
    ctx = open_context(home=missing, creates_home=True, announce=said.append)
    ctx.conn  # noqa: B018
    ctx.new_conn().close()
    ctx.close()
    assert said == [f"no memtui home at {missing} yet: creating it (--home PATH or MEMTUI_HOME choose another)"]


def test_a_wal_file_removed_while_it_is_checked_is_no_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite removes -shm and -wal when the last connection closes: another thread's close between "does it
    exist" and "may I write it" once made a writable home "read-only" (a TUI worker's notification, under load)."""
    from memtui.state import db

    home = tmp_path / "home"
    home.mkdir()
    state = home / "state.sqlite"
    state.touch()
    shm = home / "state.sqlite-shm"
    shm.touch()
    real = os.access

    def racing_access(path: object, mode: int) -> bool:
        if Path(str(path)) == shm and shm.exists():
            shm.unlink()  # the last connection closed just now
            return False  # what access says of a file that is gone
        return real(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(db.os, "access", racing_access)
    assert db.unwritable(state) is None


def test_a_wal_file_made_while_it_is_checked_is_no_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other way round: another thread's first open makes -wal between "may I write it" (no: it is not there)
    and "does it exist" (yes, now); concurrent first opens of one home once read that as a read-only home."""
    from memtui.state import db

    home = tmp_path / "home"
    home.mkdir()
    state = home / "state.sqlite"
    state.touch()
    wal = home / "state.sqlite-wal"
    real = os.access

    def racing_access(path: object, mode: int) -> bool:
        if Path(str(path)) == wal and not wal.exists():
            wal.touch()  # another connection opened just now
            return False  # what access says of a file that was not there yet
        return real(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(db.os, "access", racing_access)
    assert db.unwritable(state) is None
