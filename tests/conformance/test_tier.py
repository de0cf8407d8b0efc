"""The tier itself: the pinned real binaries run against the loopback fakes and write real sessions."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.conftest import ClaudeAgent, CodexAgent, pinned
from tests.support.agent_apis import text


def test_the_pinned_codex_runs_against_the_loopback_responses_api(codex: CodexAgent, project: Path) -> None:
    codex.api.script(text("noted"))
    run = codex.exec("Always use pnpm in this repo.", project)
    assert run.returncode == 0, run.stderr
    version = codex.run(["--version"], project).stdout
    assert pinned("@openai/codex") in version
    turns = codex.api.model_requests()
    assert len(turns) == 1
    assert "Always use pnpm in this repo." in turns[0].raw
    [session] = codex.sessions()
    first = json.loads(session.read_text().splitlines()[0])
    assert first["type"] == "session_meta"
    assert first["payload"]["cli_version"] == pinned("@openai/codex")


def test_the_pinned_claude_runs_against_the_loopback_messages_api(claude: ClaudeAgent, project: Path) -> None:
    claude.api.script(text("noted"))
    run = claude.print("Always use pnpm in this repo.", project)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["result"] == "noted"
    assert pinned("@anthropic-ai/claude-code") in claude.run(["--version"], project).stdout
    turns = claude.api.model_requests()
    assert any("Always use pnpm in this repo." in t.raw for t in turns)
    [transcript] = claude.transcripts()
    assert result["session_id"] in transcript.name
