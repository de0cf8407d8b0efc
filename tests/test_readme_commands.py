"""Every command in the README's shell blocks runs as written from a clone, except the few listed below.

The commands run in order, each in its own bash from the repository root (where the README's set-up commands
leave ``.venv``), with the venv's bin on PATH, a fresh MEMTUI_HOME, and a HOME whose ``~/.codex`` and
``~/.claude`` hold the demo's sample sessions (what a person's agents would have left there). No model is called:
the provider is pinned to offline, and no test needs the network.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# Commands the test does not run, each with its reason. Anything else in a README shell block must exit 0.
SKIP = {
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/memtui demo": (
        "set-up: installs, then opens the terminal UI (tests/test_demo.py builds the same demo without it)"
    ),
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -n 2": (
        "set-up and the whole suite: .ci/run runs it from a clean checkout"
    ),
    "memtui": "opens the terminal UI, which waits for keys",
}


def readme_commands(text: str) -> list[str]:
    """The command lines of the README's ``bash`` blocks, in order (a trailing ``# comment`` is kept: bash reads
    it as written)."""
    blocks = re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, re.S | re.M)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def command_part(line: str) -> str:
    """The command without its trailing comment (a ``#`` after two spaces, as the README aligns them)."""
    return re.split(r"\s{2,}#", line, maxsplit=1)[0].strip()


def test_the_command_lines_and_skips_are_read_as_written():
    text = "```bash\nmemtui ingest        # index\n\nmemtui\n```\n```python\nnot_a_command()\n```\n"
    assert readme_commands(text) == ["memtui ingest        # index", "memtui"]
    assert [command_part(c) for c in readme_commands(text)] == ["memtui ingest", "memtui"]


def test_every_skipped_command_is_still_in_the_readme():
    commands = [command_part(c) for c in readme_commands(README.read_text(encoding="utf-8"))]
    assert [c for c in SKIP if c not in commands] == []


@pytest.mark.slow
def test_every_readme_command_runs_as_written(tmp_path):
    venv_bin = ROOT / ".venv" / "bin"
    if not (venv_bin / "memtui").exists():
        pytest.skip("no .venv in the clone: the README's set-up command has not run here")
    # Sample sessions where the agents keep theirs, dated a day ago by the demo builder.
    demo = tmp_path / "demo"
    built = subprocess.run(
        [sys.executable, "-m", "memtui", "demo", "--no-tui", "--dir", str(demo)],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMTUI_HOME": str(tmp_path / "unused")},
    )
    assert built.returncode == 0, built.stderr
    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(demo / "rollouts" / "codex", home / ".codex")
    shutil.copytree(demo / "rollouts" / "claude", home / ".claude")

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMTUI_", "OPENAI_")) and k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")
    }
    env.update(
        HOME=str(home),
        MEMTUI_HOME=str(tmp_path / "memtui-home"),
        MEMTUI_PROVIDER="offline",
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        XDG_CONFIG_HOME=str(home / ".config"),
    )
    ran = []
    for line in readme_commands(README.read_text(encoding="utf-8")):
        if command_part(line) in SKIP:
            continue
        done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line!r} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        ran.append((command_part(line), done.stdout))
    out = dict(ran)
    assert len(ran) >= 10, [c for c, _ in ran]
    # The workflow did real work on the sample sessions, not a no-op on an empty home.
    assert "approved run #1" in out["memtui review approve"]
    assert (home / ".claude" / "CLAUDE.md").is_file()
    assert "MEMORY.md:" in out["memtui search deploy"]
