"""Codex's session-end hook where the installed codex has it (read from its program, not assumed), the per-turn
``notify`` program otherwise, and ``memtui hooks status`` saying which is installed and when it last fired."""

from __future__ import annotations

import json
import shlex
import subprocess

from memtui.hooks import codex_probe
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


# --- the codex on PATH, whatever its install method ---------------------------------------------------------------


def _fake_native(path, events: tuple[str, ...], *, runnable: bool) -> None:
    """A codex program in a vendor folder: runnable (answers the protocol-schema question like the real one) or an
    opaque binary that only names its hook events."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if runnable:
        fake_agents.install(path.parent, codex_hook_events=events)  # writes <bin>/codex (and claude)
    else:
        path.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 64 + ",".join(events).encode() + b"\0" * 64)
        path.chmod(0o755)  # executable, but not a program this machine can run


def _npm_launcher(package) -> None:
    (package / "bin").mkdir(parents=True, exist_ok=True)
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "bin": {"codex": "bin/codex.js"}}))
    launcher = package / "bin" / "codex.js"
    launcher.write_text("#!/usr/bin/env node\n// finds the platform package and spawns its binary\n")
    launcher.chmod(0o755)


def _triple() -> str:
    return codex_probe._target_triples()[0]


def test_a_local_npm_install_is_followed_to_the_platform_packages_program(paths, tmp_path, monkeypatch):  # noqa: F811
    modules = tmp_path / "proj" / "node_modules"
    _npm_launcher(modules / "@openai" / "codex")
    native = modules / "@openai" / "codex-linux-x64" / "vendor" / _triple() / "bin" / "codex"
    _fake_native(native, ("SessionStart", "SessionEnd"), runnable=True)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    monkeypatch.setenv("PATH", fake_agents.path_with(modules / ".bin"))
    program = codex_probe.find_codex()
    assert program is not None and program.native == native.resolve()
    assert codex_probe.schema_hook_events(program) == {"sessionstart", "sessionend"}
    result = install(paths, "codex")
    assert result.path.name == "hooks.json" and "trust" in result.detail
    handler = json.loads(result.path.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]
    assert handler["timeout"] == 3  # Codex's cap for SessionEnd (its default is 1 s)


def test_a_global_npm_install_nests_the_platform_package(paths, tmp_path, monkeypatch):  # noqa: F811
    prefix = tmp_path / "prefix"
    package = prefix / "lib" / "node_modules" / "@openai" / "codex"
    _npm_launcher(package)
    native = package / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" / _triple() / "bin" / "codex"
    _fake_native(native, ("SessionEnd",), runnable=False)  # cannot answer: its bytes name the event
    (prefix / "bin").mkdir()
    (prefix / "bin" / "codex").symlink_to("../lib/node_modules/@openai/codex/bin/codex.js")
    monkeypatch.setenv("PATH", fake_agents.path_with(prefix / "bin"))
    program = codex_probe.find_codex()
    assert program is not None and program.native == native.resolve()
    assert install(paths, "codex").path.name == "hooks.json"


def test_an_npm_codex_without_the_event_keeps_notify(paths, tmp_path, monkeypatch):  # noqa: F811
    modules = tmp_path / "node_modules"
    _npm_launcher(modules / "@openai" / "codex")
    _fake_native(modules / "@openai" / "codex-linux-x64" / "vendor" / _triple() / "bin" / "codex", (), runnable=True)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "codex").symlink_to("../@openai/codex/bin/codex.js")
    monkeypatch.setenv("PATH", fake_agents.path_with(modules / ".bin"))
    assert install(paths, "codex").path.name == "config.toml"


def test_a_standalone_binary_behind_a_symlink_or_a_shell_wrapper(tmp_path, monkeypatch):
    cellar = tmp_path / "Cellar" / "codex" / "0.169.0" / "bin" / "codex"
    _fake_native(cellar, ("SessionEnd",), runnable=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(cellar)
    monkeypatch.setenv("PATH", fake_agents.path_with(bin_dir, only=True))
    program = codex_probe.find_codex()
    assert program is not None and program.native == cellar.resolve() and codex_probe.knows_session_end(program)
    (bin_dir / "codex").unlink()
    (bin_dir / "codex").write_text(f'#!/bin/sh\nexec "{cellar}" "$@"\n')
    (bin_dir / "codex").chmod(0o755)
    program = codex_probe.find_codex()
    assert program is not None and program.native == cellar.resolve() and codex_probe.knows_session_end(program)
