"""Sessions the real Gemini CLI (pinned in agents.json) writes against a loopback fake of the Gemini API, read by
memtui's own commands (``memtui ingest``, ``memtui phase1 --all --offline``): every session found, the person's
words exact, and nothing Gemini CLI put into a user-role record (the ``<session_context>`` with GEMINI.md, an
``@file``'s text, a BeforeAgent hook's ``<hook_context>``, a tool's output) taken for them. A session Gemini CLI
deletes (its retention) is marked missing and what was extracted from it stays."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memtui.adapters.rollouts.model import Origin
from memtui.adapters.sources import read_transcript
from memtui.cli import main
from memtui.core.settings import Settings
from memtui.services.context import open_context
from memtui.services.phase1.eligibility import select_candidates
from memtui.state.threads import get_thread
from tests.conformance.conftest import Agent, Run, _binary, agent_base_env
from tests.support.agent_apis import AgentReply, GeminiServer, Request, text, tool

GEMINI_MD = "PROJECT-CONTEXT-MARKER: indent with tabs."
FILE_TEXT = "FILE-CONTENT-MARKER: the port is 4000."
HOOK_TEXT = "HOOK-CONTEXT-MARKER from a BeforeAgent hook"
FIRST = "Always use pnpm in this repo. Read @notes.txt and summarise it."
SECOND = "The dev server runs on port 4000."
OTHER = "Always run the tests with pytest -q in this repo."
DELEGATE = "Where is the build script? Use a sub-agent."
PARENT_PROMPT = "Find the build script in this folder and report its path."
INJECTED = ("PROJECT-CONTEXT-MARKER", "FILE-CONTENT-MARKER", "HOOK-CONTEXT-MARKER", "<session_context>")


@dataclass
class GeminiAgent(Agent):
    api: GeminiServer = field(default_factory=GeminiServer)
    home: Path = Path()  # the folder holding .gemini (HOME)

    def prompt(self, prompt: str, cwd: Path, *args: str, timeout: float = 240) -> Run:
        """``gemini -p`` as a person runs it (their settings, a session written under ~/.gemini/tmp)."""
        return self.run(["-p", prompt, *args], cwd, timeout=timeout)

    def sessions(self) -> list[Path]:
        return sorted((self.home / ".gemini" / "tmp").glob("*/chats/**/*.jsonl"))


def model(req: Request) -> AgentReply:
    """The first turn of the @notes prompt reads the file with Gemini CLI's ``read_file``; the first turn of the
    delegating prompt invokes the ``generalist`` sub-agent (``invoke_agent``), which finishes with ``complete_task``
    (its schema read from the request); every other turn answers. Side calls (the router's classifier, which wants
    JSON) get what they ask for."""
    raw = req.raw
    if "complexity_score" in raw:
        return text(json.dumps({"complexity_reasoning": "simple", "complexity_score": 10}))
    if "next_speaker" in raw:
        return text(json.dumps({"reasoning": "answered", "next_speaker": "user"}))
    if ":generateContent" in req.path:
        return text("{}")
    parts = [p for c in req.body.get("contents", []) for p in c.get("parts", [])]
    names = {d["name"] for t in req.body.get("tools", []) for d in t.get("functionDeclarations", [])}
    if "complete_task" in names:  # the sub-agent's turn
        return tool("complete_task", result={"response": "scripts/build.sh"})
    if DELEGATE in raw and not any("functionResponse" in p for p in parts):
        return tool("invoke_agent", agent_name="generalist", prompt=PARENT_PROMPT)
    if "Read @notes.txt" in raw and not any("functionResponse" in p for p in parts):
        return tool("read_file", file_path="notes.txt")
    return text("Noted.")


@pytest.fixture
def gemini(isolated_env: dict[str, Path], tmp_path: Path) -> Iterator[GeminiAgent]:
    env = agent_base_env(isolated_env)
    home = isolated_env["HOME"]
    hook = tmp_path / "before_agent.py"
    hook.write_text(
        "import json, sys\nsys.stdin.read()\n"
        f"print(json.dumps({{'hookSpecificOutput': {{'hookEventName': 'BeforeAgent', 'additionalContext': {HOOK_TEXT!r}}}}}))\n"
    )
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "hooks": {
            "BeforeAgent": [{"hooks": [{"type": "command", "command": f"{shlex.quote(sys.executable)} {hook}"}]}]
        },
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    with GeminiServer(model) as api:
        env.update(
            {
                "GEMINI_API_KEY": "loopback-gemini-key",
                "GOOGLE_GEMINI_BASE_URL": api.base_url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",  # a fresh folder is otherwise untrusted (restricted mode)
            }
        )
        yield GeminiAgent(bin=_binary("gemini"), env=env, api=api, home=home)


def _eligible() -> tuple[set[str], dict[str, int]]:
    ctx = open_context()
    try:
        candidates, skipped = select_candidates(ctx.conn, Settings(), all_threads=True)
    finally:
        ctx.close()
    return {c.thread_id for c in candidates}, skipped


def _outputs() -> set[str]:
    ctx = open_context()
    try:
        return {r[0] for r in ctx.conn.execute("SELECT thread_id FROM stage1_outputs")}
    finally:
        ctx.close()


def test_gemini_sessions_are_found_with_the_users_words_exact_and_phase1_takes_them(
    gemini: GeminiAgent, project: Path
) -> None:
    (project / "GEMINI.md").write_text(GEMINI_MD + "\n")
    (project / "notes.txt").write_text(FILE_TEXT + "\n")
    first = gemini.prompt(FIRST, project)
    assert first.returncode == 0, first.stderr
    resumed = gemini.prompt(SECOND, project, "--resume", "latest")
    assert resumed.returncode == 0, resumed.stderr
    other = gemini.prompt(OTHER, project)
    assert other.returncode == 0, other.stderr
    delegated = gemini.prompt(DELEGATE, project)
    assert delegated.returncode == 0, delegated.stderr
    sent = [r.raw for r in gemini.api.model_requests() if ":streamGenerateContent" in r.path]
    assert any(HOOK_TEXT in r and FILE_TEXT in r and GEMINI_MD in r for r in sent)  # what the model was sent

    every = gemini.sessions()
    subs = [p for p in every if p.parent.name != "chats"]
    files = [p for p in every if p.parent.name == "chats"]
    assert len(files) == 3 and len(subs) == 1, every  # the resumed session appends to its own file
    records = [json.loads(line) for path in files for line in path.read_text().splitlines()]
    typed = [r for r in records if r.get("type") == "user" and r.get("displayContent")]
    assert typed, "Gemini CLI wrote no displayContent: the format changed"

    assert main(["ingest"]) == 0
    eligible, skipped = _eligible()
    ctx = open_context()
    try:
        sub_header = json.loads(subs[0].read_text().splitlines()[0])
        assert sub_header["kind"] == "subagent"  # what Gemini CLI writes
        parent_id = subs[0].parent.name
        sub = get_thread(ctx.conn, f"{parent_id}:{sub_header['sessionId']}")
        assert sub is not None and sub.session_source == "subagent" and sub.parent_thread_id == parent_id
        threads = {}
        for path in files:
            session_id = json.loads(path.read_text().splitlines()[0])["sessionId"]
            thread = get_thread(ctx.conn, session_id)
            assert thread is not None and thread.source_kind == "gemini" and thread.ingest_status == "indexed"
            assert thread.cwd == str(project) and thread.session_source == "cli"
            assert thread.created_at is not None and thread.updated_at >= thread.created_at
            threads[session_id] = thread
    finally:
        ctx.close()
    assert eligible == set(threads) and skipped == {"not_interactive": 1}  # the sub-agent is not a person's
    sub_items = read_transcript(Path(sub.path), "gemini")
    assert sub_items.user_texts() == [] and (sub_items[0].origin, sub_items[0].text) == (Origin.AGENT, PARENT_PROMPT)

    said = {tid: read_transcript(Path(t.path), "gemini") for tid, t in threads.items()}
    assert sorted(tuple(t.user_texts()) for t in said.values()) == sorted([(FIRST, SECOND), (OTHER,), (DELEGATE,)])
    for transcript in said.values():
        for words in transcript.user_texts():
            assert not any(marker in words for marker in INJECTED), words
    [main_session] = [t for t in said.values() if FIRST in t.user_texts()]
    hooked = [i for i in main_session if i.origin is not Origin.USER and HOOK_TEXT in i.text]
    assert hooked, "the hook's context is kept, labelled, never as the user's"
    assert any(FILE_TEXT in i.text for i in main_session if i.origin is not Origin.USER)  # the read_file result

    assert main(["phase1", "--all", "--offline"]) == 0
    assert _outputs() == {tid for tid, t in said.items() if DELEGATE not in t.user_texts()}  # no durable words there

    # Gemini CLI's retention deletes a session file: ingest marks it missing, its extraction stays.
    gone = next(p for p in files if OTHER in p.read_text())
    gone_id = json.loads(gone.read_text().splitlines()[0])["sessionId"]
    gone.unlink()
    assert main(["ingest"]) == 0
    ctx = open_context()
    try:
        thread = get_thread(ctx.conn, gone_id)
        assert thread is not None and thread.ingest_status == "missing"
    finally:
        ctx.close()
    assert gone_id in _outputs()
