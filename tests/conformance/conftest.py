"""The real-agent conformance tier: the real ``codex`` and ``claude`` from the npm registry (pinned in agents.json,
installed by ``python scripts/agents.py install``, which .ci/run calls), driven against loopback fakes of their model
APIs (tests/support/agent_apis.py).

Each test gets the suite's isolated homes (HOME, CODEX_HOME, CLAUDE_CONFIG_DIR, MEMTUI_HOME under tmp_path) and:

- ``codex``: a ``CodexAgent`` whose ``CODEX_HOME/config.toml`` points a custom provider at a ``ResponsesServer``;
- ``claude``: a ``ClaudeAgent`` whose ``ANTHROPIC_BASE_URL`` is a ``MessagesServer``;
- ``agent_path``: a bin folder holding ``codex`` and ``claude``, first on PATH, so memtui's own backends and hooks
  find the real binaries as they would on a user's machine.

Nothing leaves 127.0.0.1: every proxy variable points at a closed loopback port (an agent's telemetry or update
check fails at once, locally), and ``NO_PROXY`` lets loopback through.

Outside CI a machine without the binaries skips the tier with the command that installs them; in CI (``CI`` set)
a missing binary fails, so the tier can never pass by running nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.agent_apis import MessagesServer, ResponsesServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import agents as _agents  # noqa: E402  (scripts/agents.py: the pins and where the binaries are)

# The model names the fakes answer as. Codex has no metadata for a fake name and falls back; that is fine.
CODEX_MODEL = "gpt-5.4"
CLAUDE_MODEL = "claude-sonnet-4-5"
# A closed loopback port: any request an agent makes through a proxy fails here, at once.
DEAD_PROXY = "http://127.0.0.1:9"


def _binary(name: str) -> Path:
    path = _agents.binary(name)
    if path is None:
        message = f"the real {name} is not installed: run `python scripts/agents.py install`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def pinned(package: str) -> str:
    return _agents.pins()[package]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]


@dataclass
class Agent:
    bin: Path
    env: dict[str, str]
    runs: list[Run] = field(default_factory=list)

    def run(self, args: list[str], cwd: Path, *, stdin: str | None = None, timeout: float = 180) -> Run:
        proc = subprocess.run(
            [str(self.bin), *args],
            cwd=cwd,
            env=self.env,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        run = Run(proc.returncode, proc.stdout, proc.stderr)
        self.runs.append(run)
        return run


@dataclass
class CodexAgent(Agent):
    api: ResponsesServer = field(default_factory=ResponsesServer)
    home: Path = Path()

    def exec(self, prompt: str, cwd: Path, *args: str, timeout: float = 180) -> Run:
        """``codex exec`` as a person runs it (their config, their session written under CODEX_HOME)."""
        return self.run(["exec", "--skip-git-repo-check", *args, prompt], cwd, timeout=timeout)

    def sessions(self) -> list[Path]:
        return sorted(self.home.glob("sessions/**/*.jsonl")) + sorted(self.home.glob("archived_sessions/*.jsonl"))


@dataclass
class ClaudeAgent(Agent):
    api: MessagesServer = field(default_factory=MessagesServer)
    home: Path = Path()

    def print(self, prompt: str, cwd: Path, *args: str, timeout: float = 180) -> Run:
        """``claude -p`` as a person runs it (their settings, a transcript under CLAUDE_CONFIG_DIR/projects)."""
        return self.run(["-p", prompt, "--output-format", "json", *args], cwd, timeout=timeout)

    def transcripts(self) -> list[Path]:
        return sorted(self.home.glob("projects/*/*.jsonl"))


def agent_base_env(isolated_env: dict[str, Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "CODEX_", "OPENAI_"))}
    env.update({name: str(path) for name, path in isolated_env.items()})
    env.update(
        {
            "HTTP_PROXY": DEAD_PROXY,
            "HTTPS_PROXY": DEAD_PROXY,
            "ALL_PROXY": DEAD_PROXY,
            "http_proxy": DEAD_PROXY,
            "https_proxy": DEAD_PROXY,
            "all_proxy": DEAD_PROXY,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_COLOR": "1",
        }
    )
    return env


@pytest.fixture
def agent_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bin folder with the real ``codex`` and ``claude``, first on PATH (for memtui's backends and hooks)."""
    bin_dir = tmp_path / "agent-bin"
    bin_dir.mkdir()
    for name in ("codex", "claude"):
        (bin_dir / name).symlink_to(_binary(name))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name, value in agent_base_env({}).items():
        if "PROXY" in name.upper() or name.startswith("DISABLE") or name.startswith("CLAUDE_CODE_DISABLE"):
            monkeypatch.setenv(name, value)
    return bin_dir


def write_codex_config(home: Path, api: ResponsesServer, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "loopback"\n'
        f"{extra}\n"
        "[model_providers.loopback]\n"
        'name = "loopback"\n'
        f'base_url = "{api.base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "LOOPBACK_API_KEY"\n'
    )


@pytest.fixture
def codex(isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[CodexAgent]:
    env = agent_base_env(isolated_env)
    env["LOOPBACK_API_KEY"] = "sk-loopback-codex"
    monkeypatch.setenv("LOOPBACK_API_KEY", "sk-loopback-codex")
    with ResponsesServer() as api:
        home = isolated_env["CODEX_HOME"]
        write_codex_config(home, api)
        yield CodexAgent(bin=_binary("codex"), env=env, api=api, home=home)


@pytest.fixture
def claude(isolated_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeAgent]:
    env = agent_base_env(isolated_env)
    with MessagesServer() as api:
        env.update(
            {
                "ANTHROPIC_BASE_URL": api.base_url,
                "ANTHROPIC_API_KEY": "sk-ant-loopback",
                "ANTHROPIC_MODEL": CLAUDE_MODEL,
            }
        )
        for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"):
            monkeypatch.setenv(name, env[name])
        yield ClaudeAgent(bin=_binary("claude"), env=env, api=api, home=isolated_env["CLAUDE_CONFIG_DIR"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository to run the agents in."""
    path = tmp_path / "proj"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path
