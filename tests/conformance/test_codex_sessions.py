"""Sessions the real codex 0.169 writes, read by memtui's own commands (``memtui ingest``, ``memtui phase1 --all
--offline``) as Codex reads them: every session found and judged by Codex's claim rule (checked against Codex's own
``state_5.sqlite``), a fork read with its inherited turns once, a ``/memories`` opt-out honoured, the user's words
exact with nothing injected as the user's."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memtui.adapters.rollouts import codex_state
from memtui.adapters.rollouts import filter as rollout_filter
from memtui.cli import main
from memtui.core.settings import Settings
from memtui.domain.render import render_items
from memtui.services.context import open_context
from memtui.services.phase1.eligibility import Candidate, select_candidates
from memtui.services.phase1.extractor import read_items
from memtui.state.threads import get_thread
from tests.conformance.conftest import CodexAgent, write_codex_config
from tests.support.agent_apis import AgentReply, Request, text, tool

CODEX_INTERACTIVE = ("cli", "vscode")  # INTERACTIVE_SESSION_SOURCES, codex-rs rollout crate


def _thread_id(path: Path) -> str:
    return json.loads(path.read_text().splitlines()[0])["payload"]["id"]


def _codex_would_claim(home: Path) -> set[str]:
    """Codex's own Phase 1 claim rule (``claim_stage1_jobs_for_startup``, windows aside) over its own state rows:
    not archived, an interactive source, memory enabled; legacy and paginated history alike."""
    conn = codex_state._connect(codex_state.newest_state_db(home))  # type: ignore[arg-type]
    try:
        rows = conn.execute("SELECT id, source, archived, memory_mode FROM threads").fetchall()
    finally:
        conn.close()
    return {r[0] for r in rows if r[1] in CODEX_INTERACTIVE and not r[2] and r[3] == "enabled"}


def _memtui_eligible() -> tuple[set[str], dict[str, int]]:
    ctx = open_context()
    try:
        candidates, skipped = select_candidates(ctx.conn, Settings(), all_threads=True)
    finally:
        ctx.close()
    return {c.thread_id for c in candidates}, skipped


def _outputs() -> dict[str, str]:
    ctx = open_context()
    try:
        rows = ctx.conn.execute("SELECT thread_id, raw_memory || rollout_summary FROM stage1_outputs").fetchall()
    finally:
        ctx.close()
    return {r[0]: r[1] for r in rows}


def test_exec_resume_fork_archive_and_a_sub_agent_are_found_and_judged_as_codex_judges_them(
    codex: CodexAgent, project: Path
) -> None:
    (project / "AGENTS.md").write_text("Use tabs in this repo.\n")

    spawned: list[Request] = []

    def spawn_once(req: Request) -> AgentReply:
        if not spawned and "Count the files using a sub-agent." in req.raw:
            spawned.append(req)
            return tool("spawn_agent", namespace="multi_agent_v1", message="Count the files in the repo and report.")
        return text("done")

    codex.api.script(text("noted: pnpm"))
    assert codex.exec("Always use pnpm in this repo.", project).returncode == 0
    [parent_file] = codex.sessions()
    parent = _thread_id(parent_file)
    codex.api.script(text("noted: port"))
    assert codex.exec("The dev server runs on port 4000.", project, "resume", parent).returncode == 0
    codex.api.script(text("noted: staging"))
    fork_run = codex.run(
        ["exec", "--skip-git-repo-check", "fork", parent, "In this branch we always deploy to staging."], project
    )
    assert fork_run.returncode == 0, fork_run.stderr
    codex.api.script(text("second"))
    assert codex.exec("A second session, to archive.", project).returncode == 0
    second = next(_thread_id(p) for p in codex.sessions() if "A second session" in p.read_text())
    assert codex.run(["archive", second], project).returncode == 0
    codex.api.set_handler(spawn_once)
    assert codex.exec("Count the files using a sub-agent.", project).returncode == 0
    codex.api.set_handler(None)

    files = codex.sessions()
    ids = {_thread_id(p) for p in files}
    assert len(ids) == 5  # parent (resumed in place), fork, archived, spawner, sub-agent
    assert main(["ingest"]) == 0
    eligible, skipped = _memtui_eligible()
    assert eligible == _codex_would_claim(codex.home) == set()  # exec and sub-agents: not interactive
    assert skipped == {"not_interactive": 4, "archived": 1}
    assert main(["phase1", "--all", "--offline"]) == 0
    assert _outputs() == {}
    ctx = open_context()
    try:
        threads = {tid: get_thread(ctx.conn, tid) for tid in ids}
        assert all(t is not None and t.ingest_status == "indexed" for t in threads.values())
        assert all(t.history_mode == "paginated" for t in threads.values() if t is not None)
        fork = next(
            t for t in threads.values() if t is not None and t.id not in (parent, second) and "staging" in _text(t.path)
        )
        sub_agent = next(t for t in threads.values() if t is not None and t.session_source == "subagent")
        archived = threads[second]
        assert archived is not None and archived.archived
        # Codex's preview of a fork is its parent's first prompt; its Phase 1 input holds the inherited turns once.
        assert fork.preview == "Always use pnpm in this repo."
        items = read_items(Candidate(fork.id, "codex", fork.path, fork.cwd, fork.updated_at))
        assert items.user_texts() == ["In this branch we always deploy to staging."]
        rendered = render_items(items)
        assert rendered.count("Always use pnpm in this repo.") == 1
        assert f"context {rollout_filter.INHERITED}" in rendered
        # The user's words exact, in every file; AGENTS.md, the environment and a parent agent's task are not them.
        parent_thread = threads[parent]
        assert parent_thread is not None
        parent_items = read_items(Candidate(parent, "codex", parent_thread.path, None, parent_thread.updated_at))
        assert parent_items.user_texts() == ["Always use pnpm in this repo.", "The dev server runs on port 4000."]
        sub_items = read_items(Candidate(sub_agent.id, "codex", sub_agent.path, None, sub_agent.updated_at))
        assert sub_items.user_texts() == []
        for thread in threads.values():
            assert thread is not None
            for said in read_items(Candidate(thread.id, "codex", thread.path, None, thread.updated_at)).user_texts():
                assert "Use tabs" not in said and "<environment_context>" not in said
    finally:
        ctx.close()


def _text(path: str) -> str:
    return Path(path).read_text()


# --- the TUI ---------------------------------------------------------------------------------------------------


class Tui:
    """The real codex TUI in a detached tmux session; every wait is on what the screen or the fake shows."""

    def __init__(self, agent: CodexAgent, cwd: Path) -> None:
        self.agent = agent
        self.name = f"memtui-{uuid.uuid4().hex[:8]}"
        env = [f"{k}={v}" for k, v in agent.env.items()]
        command = shlex.join(["env", "-i", *env, str(agent.bin)])
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", "120", "-y", "36", "-c", str(cwd), command],
            check=True,
        )

    def screen(self) -> str:
        out = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return out.stdout

    def wait(self, predicate: object, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(predicate) and predicate():
                return
            if isinstance(predicate, str) and predicate in self.screen():
                return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def say(self, prompt: str) -> None:
        """Type a prompt and wait for its turn to end (one more "Worked for" line than before)."""
        self.wait("Ask Codex to do anything", "the composer")
        done = self.screen().count("Worked for")
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", prompt], check=True)
        self.wait(prompt[:40], "the typed prompt")
        self.keys("Enter")
        assert self.agent.api.wait_for(lambda reqs: any(prompt in r.raw for r in reqs))
        self.wait(lambda: self.screen().count("Worked for") > done, "the turn to end")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


@pytest.fixture
def tui_codex(codex: CodexAgent, project: Path) -> Iterator[CodexAgent]:
    if shutil.which("tmux") is None:
        pytest.skip("the TUI is driven in tmux, which is not installed")
    trusted = f'[projects."{project}"]\ntrust_level = "trusted"\n'
    write_codex_config(codex.home, codex.api, f"[features]\nmemories = true\n\n{trusted}")
    try:
        yield codex
    finally:
        _stop_processes_under(codex.home)


def _stop_processes_under(home: Path) -> None:
    """The interactive Codex starts an app-server daemon from its home's packages that outlives the TUI (and the
    test run: runs left them behind for hours). Stop every process whose program lies under ``home``."""
    import os
    import signal

    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            program = (Path("/proc") / pid / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
        except OSError:
            continue
        if program.startswith(str(home) + "/"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)


def test_tui_sessions_are_eligible_and_memories_turned_off_in_the_tui_keep_every_word_out(
    tui_codex: CodexAgent, project: Path
) -> None:
    codex = tui_codex
    tui = Tui(codex, project)
    try:
        tui.say("Always run the linter before committing.")
    finally:
        tui.close()
    [kept_file] = codex.sessions()
    kept = _thread_id(kept_file)

    tui = Tui(codex, project)
    try:
        tui.say("Never push to main directly.")
        tui.keys("-l", "/memories")
        tui.wait("configure memory", "the command's entry")
        tui.keys("Enter")
        tui.wait("Generate memories", "the memories settings")
        tui.keys("Down")
        tui.keys("Space")
        tui.wait("[ ] Generate memories", "generation unticked")
        tui.keys("Enter")
        off = next(_thread_id(p) for p in codex.sessions() if _thread_id(p) != kept)
        tui.wait(
            lambda: (
                (row := codex_state.read_state(codex.home).rows.get(off)) is not None and row.memory_mode == "disabled"
            ),
            "Codex's state to record memory off",
        )
        tui.say("The launch codename is BLUEBIRD, keep it out of notes.")
    finally:
        tui.close()
    off_file = next(p for p in codex.sessions() if _thread_id(p) == off)
    assert b'"memory_mode"' not in off_file.read_bytes()  # only Codex's state database knows

    assert main(["ingest"]) == 0
    eligible, skipped = _memtui_eligible()
    assert eligible == _codex_would_claim(codex.home) == {kept}
    assert skipped == {"memory_disabled": 1}
    assert main(["phase1", "--all", "--offline"]) == 0
    outputs = _outputs()
    assert set(outputs) == {kept}
    assert "Always run the linter before committing." in outputs[kept]
    assert not any("BLUEBIRD" in text or "Never push" in text for text in outputs.values())
