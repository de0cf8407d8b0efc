"""A reader that goes away (``memtui status | head``) ends the command quietly with status 141 (128 + SIGPIPE, what
a shell reports for a C program killed by it), never with a ``BrokenPipeError`` traceback. The real ``memtui`` runs
in a subprocess whose stdout is a pipe with its read end already closed, so every write fails deterministically."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_into_closed_pipe(*args: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before memtui writes a byte
    try:
        return subprocess.run(
            [sys.executable, "-m", "memtui", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            env={**os.environ, "MEMTUI_HOME": str(home)},
            timeout=120,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [("ingest",), ("status",), ("status", "--json"), ("phase1", "--offline")])
def test_a_closed_stdout_exits_141_without_a_traceback(args: tuple[str, ...], tmp_path: Path) -> None:
    home = tmp_path / "home"
    subprocess.run(
        [sys.executable, "-m", "memtui", "ingest"],
        env={**os.environ, "MEMTUI_HOME": str(home)},
        capture_output=True,
        check=True,
        timeout=120,
    )
    out = run_into_closed_pipe(*args, home=home)
    err = out.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert out.returncode == 141  # the documented status (docs/cli.md)
