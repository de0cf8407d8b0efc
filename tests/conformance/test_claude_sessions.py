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


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux drives the interactive claude")
def test_a_rename_in_the_real_claude_is_the_title_memtui_shows(claude: ClaudeAgent, project: Path) -> None:
    claude.api.script(text("noted"))
    key = claude.env["ANTHROPIC_API_KEY"]
    # Claude Code asks once whether to use an API key from the environment (remembered by its last 20 characters),
    # and whether to trust a folder: both answered in its config, as a person's first run leaves them.
    (claude.home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                "projects": {str(project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
            }
        )
    )
    session = f"memtui-rename-{os.getpid()}"
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**claude.env, "TERM": "xterm-256color"}.items())
    started = _tmux(
        "new-session", "-d", "-s", session, "-x", "120", "-y", "36", "-c", str(project),
        f"env -i {env} {shlex.quote(str(claude.bin))}",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        pane = lambda: _tmux("capture-pane", "-p", "-t", session).stdout  # noqa: E731
        _poll(lambda: "shortcuts" in pane(), "the prompt")
        _tmux("send-keys", "-t", session, "-l", TYPED)
        _tmux("send-keys", "-t", session, "Enter")
        _poll(lambda: any(TYPED in r.raw for r in claude.api.model_requests()), "the prompt to reach the model")
        _poll(lambda: "noted" in pane(), "the answer")
        _tmux("send-keys", "-t", session, "-l", f"/rename {RENAMED}")
        _poll(lambda: f"/rename {RENAMED}" in pane(), "the typed command")
        _tmux("send-keys", "-t", session, "Enter")
        _poll(lambda: any(b"custom-title" in p.read_bytes() for p in claude.transcripts()), "the custom-title line")
    finally:
        _tmux("kill-session", "-t", session)
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
