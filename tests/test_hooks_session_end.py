"""Codex's session-end hook where the installed codex has it (read from its program, not assumed), the per-turn
``notify`` program otherwise, and ``memtui hooks status`` saying which is installed and when it last fired."""

from __future__ import annotations

import json
import shlex
import subprocess

from memtui.hooks.install import install, status, uninstall
from tests.support import fake_agents
from tests.support.waiting import HANG_GUARD
from tests.test_hooks import paths  # noqa: F401  (fixture)


def _codex_on_path(tmp_path, monkeypatch, events: tuple[str, ...]) -> None:
    bin_dir = tmp_path / "bin"
    fake_agents.install(bin_dir, codex_hook_events=events)
    monkeypatch.setenv("PATH", fake_agents.path_with(bin_dir))


def test_a_codex_with_the_session_end_hook_gets_it(paths, tmp_path, monkeypatch):  # noqa: F811
    _codex_on_path(tmp_path, monkeypatch, ("SessionStart", "SessionEnd", "Stop"))
    config = paths.codex_home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('model = "gpt-5.5"\n')
    result = install(paths, "codex")
    assert result.outcome == "installed" and result.path == paths.codex_home / "hooks.json"
    assert config.read_text() == 'model = "gpt-5.5"\n'  # no notify program: nothing fires per turn
    data = json.loads(result.path.read_text())
    (group,) = data["hooks"]["SessionEnd"]
    command = group["hooks"][0]["command"]
    assert "--from codex" in command and "--session-end" in command
    (codex,) = [s for s in status(paths) if s.agent == "codex"]
    assert codex.installed and "session-end hook" in codex.detail and "never fired" in codex.detail

    # Codex runs the command at the end of a session, in its folder, with the event's JSON on stdin.
    done = subprocess.run(
        shlex.split(command),
        input=json.dumps({"hook_event_name": "SessionEnd", "cwd": str(tmp_path)}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert done.returncode == 0 and done.stdout == ""
    (codex,) = [s for s in status(paths) if s.agent == "codex"]
    assert "last fired" in codex.detail
    assert uninstall(paths, "codex").outcome == "restored" and not result.path.exists()


def test_an_older_codex_keeps_the_notify_fallback(paths, tmp_path, monkeypatch):  # noqa: F811
    _codex_on_path(tmp_path, monkeypatch, ())
    result = install(paths, "codex")
    assert result.path.name == "config.toml" and "notify" in result.path.read_text()
    (codex,) = [s for s in status(paths) if s.agent == "codex"]
    assert codex.installed and "notify program, after every turn" in codex.detail
