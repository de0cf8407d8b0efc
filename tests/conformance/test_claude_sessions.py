"""What the real Claude Code writes, read back by memtui: a sub-agent's transcript, spawned by the real ``claude``
through its ``Agent`` tool (the name and input schema read from the request's ``tools``), starts with the parent
model's prompt as a user-role line. memtui labels it the parent agent's, never the user's: not in the Phase 1
input as ``user``, not a user-role search document (what health reads), while the person's own prompt in the main
session stays exact."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memtui.adapters.rollouts.model import Origin, Transcript
from memtui.adapters.sources import memory_items
from memtui.domain.render import render_items
from memtui.services import views
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.search import refresh
from memtui.state.threads import get_thread
from tests.conformance.conftest import ClaudeAgent
from tests.support.agent_apis import AgentReply, Request, ToolCall, text

USER_PROMPT = "Where is the sitemap generated? Use a sub-agent for the search."
PARENT_PROMPT = "Look through the repository for the sitemap code and report the file that builds it."
SPAWN_TOOLS = ("Agent", "Task")  # Claude Code 2.1 calls it Agent; older versions Task


def spawning_model(req: Request) -> AgentReply:
    """The main session's first turn spawns a sub-agent (synchronously); the sub-agent answers; the main turn
    that gets the sub-agent's result ends. A request without the person's prompt is the sub-agent's."""
    messages = req.body.get("messages", [])
    if not req.body.get("stream") or USER_PROMPT not in json.dumps(messages):
        return text("src/sitemap.ts builds the sitemap.")
    if len(messages) > 1:
        return text("The sitemap is built in src/sitemap.ts.")
    tools = {t.get("name"): t for t in req.body.get("tools", [])}
    name = next(n for n in SPAWN_TOOLS if n in tools)
    props = tools[name].get("input_schema", {}).get("properties", {})
    args = {"description": "find the sitemap code", "prompt": PARENT_PROMPT, "subagent_type": "general-purpose"}
    if "run_in_background" in props:
        args["run_in_background"] = False
    return AgentReply(tool_calls=[ToolCall(name, {k: v for k, v in args.items() if k in props or k == "prompt"})])


def test_a_sub_agents_first_item_is_the_parent_agents_not_the_users(claude: ClaudeAgent, project: Path) -> None:
    claude.api.set_handler(spawning_model)
    run = claude.print(USER_PROMPT, project)
    assert run.returncode == 0, run.stderr
    assert any(PARENT_PROMPT in r.raw and USER_PROMPT not in r.raw for r in claude.api.model_requests())
    subs = sorted(claude.home.glob("projects/*/*/subagents/agent-*.jsonl"))
    assert len(subs) == 1, sorted(claude.home.rglob("*.jsonl"))
    first_line = json.loads(subs[0].read_text().splitlines()[0])
    assert first_line["isSidechain"] is True and first_line["type"] == "user"  # what Claude Code writes

    ctx = open_context()
    try:
        run_ingest(ctx)
        [main_path] = claude.transcripts()
        session = main_path.stem
        sub_id = f"{session}:{subs[0].stem}"
        sub = get_thread(ctx.conn, sub_id)
        assert sub is not None and sub.session_source == "subagent" and sub.parent_thread_id == session

        sub_items = Transcript(memory_items(subs[0], "claude"))
        first = sub_items[0]
        assert (first.origin, first.author, first.text) == (Origin.AGENT, "parent agent", PARENT_PROMPT)
        assert sub_items.user_texts() == []
        assert "[item 1] agent message from parent agent: " in render_items(sub_items)
        assert "] user: " not in render_items(sub_items)

        main_items = Transcript(memory_items(main_path, "claude"))
        assert main_items.user_texts() == [USER_PROMPT]  # exact: no reminder, notification or sub-agent text

        refresh(ctx.conn, ctx.paths.memory_root)
        roles = ctx.conn.execute(
            "SELECT role FROM search_docs WHERE kind = 'message' AND source = ?", (sub_id,)
        ).fetchall()
        assert "user" not in {r[0] for r in roles}
    finally:
        ctx.close()


# ---- /rename, in the real interactive claude (tmux) ---------------------------------------------------------------

RENAMED = "Sitemap hunt"
TYPED = "Always build the sitemap with pnpm here."


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False)


def _poll(condition: Callable[[], object], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class InteractiveClaude:
    """The real ``claude`` TUI in a tmux pane, first-run questions answered in its config as a person's first run
    leaves them (use an API key from the environment, trust this folder). Every wait is on an event: the pane's
    text, a request reaching the fake, a line in the transcript."""

    def __init__(self, claude: ClaudeAgent, project: Path, name: str) -> None:
        self.claude, self.project, self.session = claude, project, f"memtui-{name}-{os.getpid()}"

    def __enter__(self) -> InteractiveClaude:
        key = self.claude.env["ANTHROPIC_API_KEY"]
        (self.claude.home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                    "projects": {
                        str(self.project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
                    },
                }
            )
        )
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**self.claude.env, "TERM": "xterm-256color"}.items())
        started = _tmux(
            "new-session", "-d", "-s", self.session, "-x", "120", "-y", "36", "-c", str(self.project),
            f"env -i {env} {shlex.quote(str(self.claude.bin))}",
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        self.wait(lambda: "shortcuts" in self.pane(), "the prompt")
        return self

    def __exit__(self, *exc: object) -> None:
        _tmux("kill-session", "-t", self.session)

    def pane(self) -> str:
        return _tmux("capture-pane", "-p", "-t", self.session).stdout

    def wait(self, condition: Callable[[], object], what: str) -> None:
        try:
            _poll(condition, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the pane:\n{self.pane()}") from None

    def input_box(self) -> str:
        """What the input box holds: the last ``❯`` line (the transcript's prompts above it carry one too)."""
        lines = [line for line in self.pane().splitlines() if line.startswith("❯")]
        return lines[-1].removeprefix("❯").strip() if lines else ""

    def keys(self, *keys: str) -> None:
        _tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        _tmux("send-keys", "-t", self.session, "-l", text)
        self.wait(lambda: text in self.pane(), f"{text!r} typed")

    def say(self, text: str) -> None:
        """Type a prompt, send it, and wait until the model's answer to it is on screen."""
        answered = len(self.claude.api.model_requests())
        self.type(text)
        self.keys("Enter")
        self.wait(lambda: any(text in r.raw for r in self.claude.api.model_requests()[answered:]), f"{text!r} sent")
        self.wait(lambda: "shortcuts" in self.pane() and "esc to interrupt" not in self.pane(), "the turn's end")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux drives the interactive claude")
def test_a_rename_in_the_real_claude_is_the_title_memtui_shows(claude: ClaudeAgent, project: Path) -> None:
    claude.api.script(text("noted"))
    with InteractiveClaude(claude, project, "rename") as tui:
        tui.say(TYPED)
        tui.wait(lambda: "noted" in tui.pane(), "the answer")
        tui.type(f"/rename {RENAMED}")
        tui.keys("Enter")
        tui.wait(lambda: any(b"custom-title" in p.read_bytes() for p in claude.transcripts()), "the custom-title line")
    [transcript] = claude.transcripts()
    ctx = open_context()
    try:
        run_ingest(ctx)
        thread = get_thread(ctx.conn, transcript.stem)
        assert thread is not None and thread.title == RENAMED and thread.preview == TYPED
        [row] = [r for r in views.rollout_rows(ctx.conn) if r.id == transcript.stem]
        assert row.title == RENAMED  # what the Rollouts list and the detail show before the first words
    finally:
        ctx.close()


# ---- rewind and /compact, in the real interactive claude (tmux) ----------------------------------------------------

KEPT = "Always build the sitemap with pnpm here."
REWOUND = "Also, deploy only on Fridays."
INSTEAD = "Deploy only on Tuesdays."
AFTER_COMPACT = "Use Node 22 for the build."
SUMMARY = "SUMMARY-OF-CONVERSATION: pnpm for the sitemap, deploys on Tuesdays."
COMPACT_PROMPT = "Respond with TEXT ONLY"  # the start of Claude Code 2.1's compaction request


def summarising_model(req: Request) -> AgentReply:
    """Claude Code's compaction request gets a summary in the shape it asks for; every other turn, "noted"."""
    messages = req.body.get("messages", [])
    if messages and COMPACT_PROMPT in json.dumps(messages[-1]):
        return text(f"<analysis>The person stated two preferences.</analysis>\n<summary>{SUMMARY}</summary>")
    return text("noted")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux drives the interactive claude")
def test_a_rewound_turn_is_not_said_and_a_compaction_summary_is_nobodys_words(
    claude: ClaudeAgent, project: Path
) -> None:
    """In the real claude: two prompts, the second rewound (Esc Esc, "Restore conversation") and replaced, then
    ``/compact`` and one more prompt. Claude keeps the rewound branch in the file (a sibling of its replacement)
    and writes the summary as a user-role line (``isCompactSummary``) after a ``compact_boundary``, beside command
    wrappers and ``api-request-blob`` copies of what it sent. memtui's user words: exactly the three prompts on the
    branch the person kept, once each; the rewound prompt and the summary reach no Phase 1 input as the user's."""
    claude.api.set_handler(summarising_model)
    with InteractiveClaude(claude, project, "rewind") as tui:
        tui.say(KEPT)
        tui.say(REWOUND)
        tui.keys("Escape")
        tui.keys("Escape")
        tui.wait(lambda: "Rewind" in tui.pane() and "(current)" in tui.pane(), "the rewind list")
        tui.keys("Up")
        tui.keys("Enter")
        tui.wait(lambda: "Restore conversation" in tui.pane(), "the restore choices")
        tui.keys("Enter")
        tui.wait(lambda: "Restore conversation" not in tui.pane(), "the restore")
        tui.keys("C-u")  # Claude puts the rewound prompt back in the input box
        tui.wait(lambda: tui.input_box() == "", "an empty input box")
        tui.say(INSTEAD)
        tui.type("/compact")
        tui.keys("Enter")
        tui.wait(lambda: "Compacted" in tui.pane(), "the compaction")
        tui.say(AFTER_COMPACT)
    [transcript] = claude.transcripts()
    raw = transcript.read_text()
    assert REWOUND in raw and '"isCompactSummary":true' in raw and SUMMARY in raw  # what Claude Code wrote

    items = Transcript(memory_items(transcript, "claude"))
    assert items.user_texts() == [KEPT, INSTEAD, AFTER_COMPACT]
    rendered = render_items(items)
    assert REWOUND not in rendered and "continued from a previous conversation" not in rendered
    assert "<command-name>" not in rendered and "local-command" not in rendered
    ctx = open_context()
    try:
        run_ingest(ctx)
        thread = get_thread(ctx.conn, transcript.stem)
        assert thread is not None and thread.preview == KEPT
        refresh(ctx.conn, ctx.paths.memory_root)
        said = ctx.conn.execute(
            "SELECT text FROM search_docs WHERE kind = 'message' AND role = 'user' AND source = ?", (transcript.stem,)
        ).fetchall()
        assert sorted(r[0] for r in said) == sorted([KEPT, INSTEAD, AFTER_COMPACT])  # what health reads as said
    finally:
        ctx.close()
