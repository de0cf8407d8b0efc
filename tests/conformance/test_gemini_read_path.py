"""Gemini CLI's read path, proved against the real ``gemini -p`` (pinned in agents.json) and a loopback fake of the
Gemini API: ``memtui export gemini-md`` puts the approved memory (and only it) into ~/.gemini/GEMINI.md, which
Gemini CLI sends to the model; ``memtui mcp install --gemini`` registers memtui's server so the model request
carries its tools as function declarations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memtui.adapters.sources.gemini import gemini_dir
from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.hooks.mcp_register import READ_ONLY_TOOLS
from tests.conformance.conftest import Agent, Run, _binary, agent_base_env
from tests.conftest import approve_root
from tests.support.agent_apis import AgentReply, GeminiServer, Request, text, tool

APPROVED = "the heron build needs --frozen-lockfile (approved memory 4b2e)"
PENDING = "the pelican cache lives in /var/pelican (pending memory 9d1a)"
PERSONS_TEXT = "# My own Gemini notes\n\nPrefer short answers.\n"


@dataclass
class GeminiAgent(Agent):
    api: GeminiServer = field(default_factory=GeminiServer)

    def prompt(self, prompt: str, cwd: Path, timeout: float = 240) -> Run:
        return self.run(["-p", prompt], cwd, timeout=timeout)

    def turns(self) -> list[Request]:
        """The model requests of the conversation (not the router's or the next-speaker side calls)."""
        return [r for r in self.api.model_requests() if ":streamGenerateContent" in r.path]


def model(req: Request) -> AgentReply:
    if "complexity_score" in req.raw:
        return text(json.dumps({"complexity_reasoning": "simple", "complexity_score": 10}))
    if "next_speaker" in req.raw:
        return text(json.dumps({"reasoning": "answered", "next_speaker": "user"}))
    if ":generateContent" in req.path:
        return text("{}")
    return text("Noted.")


@pytest.fixture
def gemini(isolated_env: dict[str, Path]) -> Iterator[GeminiAgent]:
    env = agent_base_env(isolated_env)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    gemini_dir().mkdir(parents=True, exist_ok=True)
    (gemini_dir() / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    with GeminiServer(model) as api:
        env.update(
            {
                "GEMINI_API_KEY": "loopback-gemini-key",
                "GOOGLE_GEMINI_BASE_URL": api.base_url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            }
        )
        yield GeminiAgent(bin=_binary("gemini"), env=env, api=api)


def _approved_and_pending() -> None:
    """An approved summary holding APPROVED, then PENDING written after it and not approved (awaiting review)."""
    root = resolve_paths().ensure().memory_root
    (root / "MEMORY.md").write_text(f"# Task Group: builds\napplies_to: global\n- {APPROVED}\n")
    (root / "memory_summary.md").write_text(f"v1\n## What's in Memory\n- {APPROVED}\n")
    approve_root(root)
    with (root / "memory_summary.md").open("a") as fh:
        fh.write(f"- {PENDING}\n")
    with (root / "MEMORY.md").open("a") as fh:
        fh.write(f"- {PENDING}\n")


def test_an_exported_approved_memory_reaches_gemini_s_request_and_a_pending_one_does_not(
    gemini: GeminiAgent, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _approved_and_pending()
    context = gemini_dir() / "GEMINI.md"
    context.write_text(PERSONS_TEXT)
    assert main(["export", "gemini-md"]) == 0
    assert "scope global" in capsys.readouterr().err  # the user-level context file: the whole block
    written = context.read_text()
    assert written.startswith(PERSONS_TEXT) and APPROVED in written and PENDING not in written
    run = gemini.prompt("How do I build the heron project?", project)
    assert run.returncode == 0, run.stderr
    [first, *_] = gemini.turns()
    assert APPROVED in first.raw and "Prefer short answers." in first.raw  # Gemini CLI loaded the context file
    assert all(PENDING not in r.raw for r in gemini.api.model_requests())


def test_after_mcp_install_gemini_s_request_declares_memtui_s_tools_and_they_serve_the_approved_memory(
    gemini: GeminiAgent, project: Path
) -> None:
    _approved_and_pending()
    assert main(["mcp", "install", "--gemini"]) == 0
    settings = json.loads((gemini_dir() / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"  # the person's keys kept
    gemini.env.pop("MEMTUI_HOME")  # an agent's environment rarely carries memtui's home: the entry pins it
    gemini.api.set_handler(_reads_memory)
    run = gemini.prompt("What do you remember about the heron build?", project)
    assert run.returncode == 0, run.stderr
    first, *later = gemini.turns()
    # Gemini CLI 0.61 declares an MCP server's tools as mcp_<server>_<tool>.
    assert {f"mcp_memtui_{t}" for t in READ_ONLY_TOOLS} <= _declared(first), sorted(_declared(first))
    responses = [p for r in later for c in r.body.get("contents", []) for p in c.get("parts", [])]
    answered = [p for p in responses if "functionResponse" in p]
    assert answered, "the tool's result never came back to the model (gemini -p ran it?)"
    assert APPROVED in json.dumps(answered) and PENDING not in json.dumps(answered)


def _declared(request: Request) -> set[str]:
    return {d["name"] for t in request.body.get("tools", []) for d in t.get("functionDeclarations", [])}


def _reads_memory(req: Request) -> AgentReply:
    """The first turn reads MEMORY.md through memtui's tool; the next answers."""
    parts = [p for c in req.body.get("contents", []) for p in c.get("parts", [])]
    first = ":streamGenerateContent" in req.path and not any("functionResponse" in p for p in parts)
    if first and "mcp_memtui_memory_read" in _declared(req):
        return tool("mcp_memtui_memory_read", path="MEMORY.md")
    return model(req)


def test_gemini_s_session_end_hook_ingests_the_session_after_gemini_p(
    gemini: GeminiAgent, agent_path: Path, project: Path
) -> None:
    from tests.conformance.test_setup_real import _ingested, _wait_for, _worker_done

    assert main(["hooks", "install", "--gemini"]) == 0
    run = gemini.prompt("Always run the linter before committing.", project)
    assert run.returncode == 0, run.stderr
    [session] = sorted((gemini_dir() / "tmp").glob("*/chats/session-*.jsonl"))
    thread = json.loads(session.read_text().splitlines()[0])["sessionId"]
    _wait_for(_ingested(thread), f"gemini session {thread} to be ingested by the SessionEnd hook")
    _wait_for(_worker_done, "the hook's worker to finish")
