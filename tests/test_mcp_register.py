"""``memtui mcp install|uninstall|status`` on temporary homes: the server registered with the home it must serve and
this Python, Claude's read-only tools allowed, nothing in a project's shared ``.mcp.json``, files put back."""

from __future__ import annotations

import asyncio
import json
import sys
import tomllib

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.hooks import mcp_register as reg
from tests.support import fake_agents

CODEX_BEFORE = b'# mine\nmodel = "gpt-5.5"  # keep\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
CLAUDE_SETTINGS = b'{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(git status)"]}\n}\n'


@pytest.fixture
def paths(isolated_env, tmp_path, monkeypatch):
    fake_agents.install(tmp_path / "bin")
    monkeypatch.setenv("PATH", fake_agents.path_with(tmp_path / "bin"))
    return resolve_paths()


def test_codex_gets_the_server_with_its_home_and_uninstall_restores_the_file(paths, capsys):
    config = paths.codex_home / "config.toml"
    config.write_bytes(CODEX_BEFORE)
    assert main(["mcp", "install", "--codex"]) == 0
    entry = tomllib.loads(config.read_text())["mcp_servers"]["memtui"]
    assert entry["command"] == sys.executable and entry["args"] == ["-m", "memtui", "mcp"]
    assert entry["env"] == {"MEMTUI_HOME": str(paths.home)}  # the agent's environment need not carry it
    assert entry["startup_timeout_sec"] > 10  # Codex's default, which a busy machine's start-up can pass
    assert config.read_text().startswith(CODEX_BEFORE.decode())  # the rest kept as it was, comments and all
    assert main(["mcp", "install", "--codex"]) == 0 and "already installed" in capsys.readouterr().out
    (status,) = [s for s in reg.status(paths) if s.agent == "codex"]
    assert status.installed and status.detail == f"serves {paths.home}"
    assert main(["mcp", "uninstall", "--codex"]) == 0
    assert config.read_bytes() == CODEX_BEFORE


def test_the_old_documented_line_is_replaced_and_a_foreign_entry_is_refused(paths, capsys):
    config = paths.codex_home / "config.toml"
    config.write_text(
        '[mcp_servers.memtui]\ncommand = "memtui"\nargs = ["mcp"]\n'
    )  # `codex mcp add memtui -- memtui mcp`
    (status,) = [s for s in reg.status(paths) if s.agent == "codex"]
    assert "without MEMTUI_HOME" in status.detail
    result = reg.install_codex(paths)
    assert result.outcome == "installed" and "replaced" in result.detail
    assert tomllib.loads(config.read_text())["mcp_servers"]["memtui"]["env"]["MEMTUI_HOME"] == str(paths.home)
    config.write_text('[mcp_servers.memtui]\ncommand = "someone-elses-server"\n')
    assert main(["mcp", "install", "--codex"]) == 2
    assert "runs something else" in capsys.readouterr().err
    assert config.read_text() == '[mcp_servers.memtui]\ncommand = "someone-elses-server"\n'


def test_claude_gets_a_user_scope_server_and_the_permission_rules(paths, tmp_path, monkeypatch):
    settings = paths.claude_dir / "settings.json"
    settings.write_bytes(CLAUDE_SETTINGS)
    project = tmp_path / "repo"
    project.mkdir()
    monkeypatch.chdir(project)
    assert main(["mcp", "install", "--claude"]) == 0
    state = json.loads((paths.claude_dir / ".claude.json").read_text())
    assert state["mcpServers"]["memtui"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "memtui", "mcp"],
        "env": {"MEMTUI_HOME": str(paths.home)},
    }
    allow = json.loads(settings.read_text())["permissions"]["allow"]
    assert allow == ["Bash(git status)", *(f"mcp__memtui__{t}" for t in reg.READ_ONLY_TOOLS)]
    assert not (project / ".mcp.json").exists()  # never the project's shared file
    (status,) = [s for s in reg.status(paths) if s.agent == "claude"]
    assert status.installed and "its tools are allowed" in status.detail
    assert main(["mcp", "uninstall", "--claude"]) == 0
    assert json.loads((paths.claude_dir / ".claude.json").read_text())["mcpServers"] == {}
    assert settings.read_bytes() == CLAUDE_SETTINGS


def test_claude_project_scope_is_the_local_unshared_entry(paths, tmp_path):
    project = (tmp_path / "repo").resolve()
    project.mkdir()
    assert main(["mcp", "install", "--claude", "--project", str(project)]) == 0
    state = json.loads((paths.claude_dir / ".claude.json").read_text())
    entry = state["projects"][str(project)]["mcpServers"]["memtui"]
    assert entry["args"] == ["-m", "memtui", "mcp", "--project", str(project)]
    assert "memtui" not in state.get("mcpServers", {}) and not (project / ".mcp.json").exists()
    assert main(["mcp", "uninstall", "--claude"]) == 0
    assert json.loads((paths.claude_dir / ".claude.json").read_text())["projects"][str(project)]["mcpServers"] == {}


def test_the_registered_names_are_the_servers_own(isolated_env):
    from memtui.cli.common import make_context
    from memtui.mcp.server import SERVER_NAME, build_server

    ctx = make_context()
    try:
        tools = asyncio.run(build_server(ctx).list_tools())
    finally:
        ctx.close()
    assert reg.SERVER == SERVER_NAME
    assert set(reg.READ_ONLY_TOOLS) == {t.name for t in tools}
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools)


GEMINI_SETTINGS = (
    b'{\n  "model": {"name": "gemini-2.5-pro"},\n  "mcpServers": {"docs": {"command": "docs-mcp"}},\n'
    b'  "context": {"fileName": "GEMINI.md"}\n}\n'
)


def _gemini_settings(paths):
    from memtui.adapters.sources.gemini import gemini_dir

    return gemini_dir() / "settings.json"


def test_gemini_gets_the_server_in_its_settings_keeping_every_other_key(paths, capsys):
    settings = _gemini_settings(paths)
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_bytes(GEMINI_SETTINGS)
    assert main(["mcp", "install", "--gemini"]) == 0
    data = json.loads(settings.read_text())
    assert data["mcpServers"]["memtui"] == {
        "command": sys.executable,
        "args": ["-m", "memtui", "mcp"],
        "env": {"MEMTUI_HOME": str(paths.home)},
        "timeout": 60_000,  # Gemini CLI's timeout is in milliseconds
        "trust": True,  # else `gemini -p` leaves the tools out of the request
        "includeTools": list(reg.READ_ONLY_TOOLS),  # ... and the trust covers the read-only tools only
    }
    before = json.loads(GEMINI_SETTINGS)
    assert data["mcpServers"]["docs"] == before["mcpServers"]["docs"]
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    written = settings.read_bytes()
    assert main(["mcp", "install", "--gemini"]) == 0 and "already installed" in capsys.readouterr().out
    assert settings.read_bytes() == written  # idempotent: the second install writes nothing
    (status,) = [s for s in reg.status(paths) if s.agent == "gemini"]
    assert status.installed and status.detail == f"serves {paths.home}"
    assert main(["mcp", "uninstall", "--gemini"]) == 0
    assert settings.read_bytes() == GEMINI_SETTINGS  # nobody changed it since: byte for byte


def test_gemini_uninstall_after_a_change_removes_only_memtui_s_entry(paths):
    settings = _gemini_settings(paths)
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_bytes(GEMINI_SETTINGS)
    assert reg.install_gemini(paths).outcome == "installed"
    data = json.loads(settings.read_text())
    data["ui"] = {"theme": "GitHub"}  # the person's change after the install
    settings.write_text(json.dumps(data))
    result = reg.uninstall_gemini(paths)
    assert result.outcome == "removed_entry"
    after = json.loads(settings.read_text())
    assert after["ui"] == {"theme": "GitHub"} and after["mcpServers"] == {"docs": {"command": "docs-mcp"}}
    assert reg.uninstall_gemini(paths).outcome == "not_installed"


def test_gemini_settings_without_a_file_and_the_project_scope(paths, tmp_path):
    settings = _gemini_settings(paths)
    assert not settings.exists()
    result = reg.install_gemini(paths, tmp_path)
    assert result.outcome == "installed"
    entry = json.loads(settings.read_text())["mcpServers"]["memtui"]
    assert entry["args"] == ["-m", "memtui", "mcp", "--project", str(tmp_path)]
    (status,) = [s for s in reg.status(paths) if s.agent == "gemini"]
    assert status.detail == f"serves {paths.home}, only {tmp_path}"
    assert reg.uninstall_gemini(paths).outcome == "restored" and not settings.exists()


@pytest.mark.parametrize(
    "text",
    [
        '{\n  // my model\n  "model": {"name": "gemini-2.5-pro"}\n}\n',
        '{"model": /* mine */ {"name": "x"}, "url": "http://a//b"}',
    ],
)
def test_gemini_settings_with_comments_are_refused_and_left_as_they_are(paths, capsys, text):
    settings = _gemini_settings(paths)
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(text)
    assert main(["mcp", "install", "--gemini"]) == 2
    err = capsys.readouterr().err
    assert "has comments" in err and '"mcpServers"' in err and sys.executable in err  # what to add by hand
    assert settings.read_text() == text
    assert main(["mcp", "uninstall", "--gemini"]) == 2 and settings.read_text() == text
    (status,) = [s for s in reg.status(paths) if s.agent == "gemini"]
    assert not status.installed and "has comments" in status.detail


def test_gemini_foreign_entry_and_broken_json_are_refused(paths, capsys):
    settings = _gemini_settings(paths)
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"mcpServers": {"memtui": {"command": "someone-elses-server"}}}')
    assert main(["mcp", "install", "--gemini"]) == 2
    assert "runs something else" in capsys.readouterr().err
    settings.write_text('{"mcpServers": ')
    assert main(["mcp", "install", "--gemini"]) == 2
    assert "not valid JSON" in capsys.readouterr().err and settings.read_text() == '{"mcpServers": '
