"""memtui's own agent calls are clean rooms, with the REAL codex and claude (issue 31 items 5, 9, 10, 11, 12).

memtui's Phase 1 (one structured call) and Phase 2 (an agent run that edits a copy of the memory root) run through
the pinned binaries against the loopback fakes, on a machine whose user has a full setup planted with markers:
Codex's global ``AGENTS.md``, its memories (``[features] memories = true`` and ``memories/memory_summary.md``), a
``notify`` program and a hook; Claude's ``CLAUDE.md``, a ``UserPromptSubmit`` hook that prints a marker, a
``SessionEnd`` hook that touches a file; a project ``AGENTS.md`` / ``CLAUDE.md`` in a git repository above memtui's
home (where both CLIs look for project instructions). Each test checks what the CLI sent its model (every request
body), what ran, and what changed on disk outside the work copy.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memtui.services.context import Context, open_context
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2.consolidate import run_phase2
from tests.conformance.conftest import CLAUDE_MODEL, CODEX_MODEL, ClaudeAgent, CodexAgent, write_codex_config
from tests.conftest import FROZEN_NOW
from tests.support.agent_apis import AgentReply, Request, json_reply, text, tool
from tests.support.fake_agents import STAGE_ONE_REPLY
from tests.test_phase1_run import runs, seed
from tests.test_phase2_agent import MEMORY, SUMMARY
from tests.test_phase2_support import add_output

pytestmark = pytest.mark.usefixtures("frozen_clock")  # the seeded rollouts are idle long enough at this time

THREAD = "0194f5a6-89ab-7cde-8123-456789abcdef"
MARKERS = (
    "MARKER-CODEX-GLOBAL-AGENTS-MD",
    "MARKER-CODEX-MEMORY-SUMMARY",
    "MARKER-PROJECT-AGENTS-MD",
    "MARKER-CLAUDE-USER-CLAUDE-MD",
    "MARKER-PROJECT-CLAUDE-MD",
    "MARKER-USER-PROMPT-SUBMIT-HOOK",
)
WORK_COPY = re.compile(r"/[^\s`\"'\\]*/work/phase2-[0-9a-f]{12}/memories")
CLAUDE_AGENT_TOOLS = {"Read", "Edit", "Write", "Glob", "Grep"}
# What the CLIs themselves may change outside memtui's home during memtui's calls (measured with codex 0.169.0 and
# Claude Code 2.1.328): Claude Code's own bookkeeping in its config folder. Nothing in HOME, nothing in the user's
# CODEX_HOME, nothing the agent wrote.
CLAUDE_BOOKKEEPING = re.compile(
    r"^claude-home/(\.claude\.json|backups/\.claude\.json\.backup\.\d+|plugins/store/[^/]+)$"
)
# memtui's own private state in its home (everything else there must be unchanged or absent afterwards): the state
# database, its logs, the memory root (Phase 2 writes it through the journal) with its lock, sync manifest and
# approved view, and the private CODEX_HOME. The work folder (the agent's copies) must be empty again.
MEMTUI_STATE = re.compile(
    r"^memtui-home/(state\.sqlite(-wal|-shm)?|logs/.*|memories/.*|\.memories\.lock|phase2_sync\.json"
    r"|memories-approved(/.*)?|codex-home/.*)$"
)


@pytest.fixture
def user_setup(tmp_path: Path, isolated_env: dict[str, Path]) -> Iterator[dict[str, Path]]:
    """The user's instruction files, memory and hooks, each with a marker; the files their hooks would touch."""
    ran = {
        "codex_notify": tmp_path / "ran-codex-notify",
        "codex_hook": tmp_path / "ran-codex-hook",
        "claude_session_end": tmp_path / "ran-claude-session-end",
    }
    codex_home, claude_dir = isolated_env["CODEX_HOME"], isolated_env["CLAUDE_CONFIG_DIR"]
    (codex_home / "AGENTS.md").write_text(f"{MARKERS[0]}: the exported memory block\n")
    (codex_home / "memories").mkdir(parents=True, exist_ok=True)
    (codex_home / "memories" / "memory_summary.md").write_text(f"{MARKERS[1]}\n")
    touch = {"hooks": [{"type": "command", "command": f"touch {ran['codex_hook']}"}]}
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [touch], "Stop": [touch]}}))
    (claude_dir / "CLAUDE.md").write_text(f"{MARKERS[3]}: cite memory like this\n")
    claude_hooks = {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"echo {MARKERS[5]}"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": f"touch {ran['claude_session_end']}"}]}],
    }
    (claude_dir / "settings.json").write_text(json.dumps({"hooks": claude_hooks}))
    # A git repository above memtui's home: project instructions the CLIs would find walking up from its folders.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "AGENTS.md").write_text(f"{MARKERS[2]}\n")
    (tmp_path / "CLAUDE.md").write_text(f"{MARKERS[4]}\n")
    yield ran


def _codex_user_config(codex: CodexAgent, ran: dict[str, Path]) -> None:
    extra = f'notify = ["touch", "{ran["codex_notify"]}"]\n[features]\nmemories = true\nhooks = true\n'
    write_codex_config(codex.home, codex.api, extra=extra)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (memtui's test tree: HOME, CODEX_HOME, the Claude folder, memtui's home) by digest."""
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        if rel.startswith((".git/", "agent-bin/")) or not (p.is_file() or p.is_symlink()):
            continue
        out[rel] = "link:" + str(p.readlink()) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def written_outside(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Files created, changed or removed that are neither the CLIs' own bookkeeping nor memtui's private state."""
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return sorted(k for k in changed if not CLAUDE_BOOKKEEPING.match(k) and not MEMTUI_STATE.match(k))


def no_markers(requests: list[Request]) -> list[str]:
    return [m for r in requests for m in MARKERS if m in r.raw]


def _work_copy(requests: list[Request]) -> str:
    for r in requests:
        if m := WORK_COPY.search(r.raw):
            return m.group(0)
    raise AssertionError("no request names the agent's work copy")


# --- the fake models' scripts ----------------------------------------------------------------------------------------


def _codex_outputs(req: Request) -> int:
    return sum(
        1 for i in req.body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call_output"
    )


def _codex_tool_names(req: Request) -> list[str]:
    return [str(t.get("name") or t.get("type")) for t in req.body.get("tools") or []]


def codex_model(outside: Path | None = None) -> Callable[[Request], AgentReply]:
    """Phase 1: the stage-one JSON for a call with an output schema. Phase 2: shell commands (the tool the request
    lists) that write MEMORY.md and memory_summary.md in the work copy (``outside``: first a write there)."""

    def handler(req: Request) -> AgentReply:
        if (req.body.get("text") or {}).get("format", {}).get("type") == "json_schema":
            return json_reply(STAGE_ONE_REPLY)
        shell = "exec_command" if "exec_command" in _codex_tool_names(req) else "shell"
        steps = [f"cat > MEMORY.md <<'EOF'\n{MEMORY}EOF", f"cat > memory_summary.md <<'EOF'\n{SUMMARY}EOF"]
        if outside is not None:
            steps.insert(0, f"echo escaped > {outside}")
        n = _codex_outputs(req)
        if n < len(steps):
            return (
                tool(shell, cmd=steps[n]) if shell == "exec_command" else tool(shell, command=["bash", "-lc", steps[n]])
            )
        return text("Updated the memory.")

    return handler


def _claude_tool_results(req: Request) -> int:
    n = 0
    for m in req.body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def _claude_tool_names(req: Request) -> set[str]:
    return {str(t.get("name")) for t in req.body.get("tools") or []}


def claude_model(outside: list[Path] | None = None) -> Callable[[Request], AgentReply]:
    """Phase 1: the structured reply (its schema tool, or JSON text). Phase 2: ``Write`` calls into the work copy
    (``outside``: first a ``Write`` to each of those paths)."""

    def handler(req: Request) -> AgentReply:
        names = _claude_tool_names(req)
        if not names & CLAUDE_AGENT_TOOLS:
            if "StructuredOutput" in names:
                return tool("StructuredOutput", **STAGE_ONE_REPLY)
            return json_reply(STAGE_ONE_REPLY)
        folder = _work_copy([req])
        steps = [str(p) for p in outside or []] + [f"{folder}/MEMORY.md", f"{folder}/memory_summary.md"]
        bodies = ["escaped\n"] * len(outside or []) + [MEMORY, SUMMARY]
        n = _claude_tool_results(req)
        if n < len(steps):
            return tool("Write", file_path=steps[n], content=bodies[n])
        return text("Updated MEMORY.md and memory_summary.md.")

    return handler


# --- helpers --------------------------------------------------------------------------------------------------------


def _phase1(provider: str, isolated_env: dict[str, Path]) -> tuple[Context, str]:
    ctx = open_context({"provider": provider})
    (t,) = seed((ctx, isolated_env["CODEX_HOME"]))
    return ctx, t


def _phase2_ctx(provider: str) -> Context:
    ctx = open_context({"provider": provider})
    add_output(ctx.conn, THREAD, FROZEN_NOW - 3600)
    return ctx


def _run_model(ctx: Context, run_id: int | None) -> str:
    return str(ctx.conn.execute("SELECT model FROM phase2_runs WHERE id = ?", (run_id,)).fetchone()[0])


def _assert_no_user_hook_ran(ran: dict[str, Path]) -> None:
    assert [name for name, path in ran.items() if path.exists()] == []


# --- Codex -------------------------------------------------------------------------------------------------------------


def test_phase1_through_codex_is_a_clean_room(
    codex: CodexAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Items 5 and 9: the user's AGENTS.md and Codex memory summary stay out of memtui's prompt, no notify or hook
    runs, an ``env_key`` provider (``codex login status``: "Not logged in") works, and the job records the model
    codex used."""
    _codex_user_config(codex, user_setup)
    codex.api.set_handler(codex_model())
    ctx, t = _phase1("codex", isolated_env)
    before = snapshot(tmp_path)
    summary = run_phase1(ctx)
    after = snapshot(tmp_path)
    assert (summary.succeeded, summary.failed) == (1, 0), runs(ctx.conn, t)[-1]["error"]
    requests = codex.api.model_requests()
    assert requests and no_markers(requests) == []
    _assert_no_user_hook_ran(user_setup)
    assert written_outside(before, after) == []
    assert {r.body.get("model") for r in requests} == {CODEX_MODEL}
    assert runs(ctx.conn, t)[-1]["model"] == f"codex:{CODEX_MODEL}"
    private = isolated_env["MEMTUI_HOME"] / "codex-home"
    assert (private / "auth.json").is_symlink() and not list(private.glob("sessions/**/*.jsonl"))
    ctx.close()


def test_phase2_through_codex_is_a_clean_room(
    codex: CodexAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    _codex_user_config(codex, user_setup)
    codex.api.set_handler(codex_model())
    ctx = _phase2_ctx("codex")
    before = snapshot(tmp_path)
    result = run_phase2(ctx)
    after = snapshot(tmp_path)
    assert result.outcome == "awaiting_review", result.reason
    requests = codex.api.model_requests()
    assert len(requests) == 3 and no_markers(requests) == []
    _assert_no_user_hook_ran(user_setup)
    assert written_outside(before, after) == []
    assert (ctx.paths.memory_root / "MEMORY.md").read_text() == MEMORY
    assert {r.body.get("model") for r in requests} == {CODEX_MODEL}
    assert _run_model(ctx, result.run_id) == f"codex:{CODEX_MODEL}"  # not memtui's consolidation_model
    ctx.close()


def test_a_codex_write_outside_the_work_copy_is_denied_and_the_run_refused(
    codex: CodexAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Item 11 for codex: the sandbox refuses a write outside the work copy (here under /tmp, which workspace-write
    allows unless told not to), and memtui refuses the run."""
    _codex_user_config(codex, user_setup)
    outside = isolated_env["HOME"] / "escaped.md"
    codex.api.set_handler(codex_model(outside=outside))
    ctx = _phase2_ctx("codex")
    before = snapshot(tmp_path)
    result = run_phase2(ctx)
    after = snapshot(tmp_path)
    assert not outside.exists()
    assert result.outcome == "failed" and "outside its work copy" in str(result.reason)
    assert written_outside(before, after) == []
    assert not (ctx.paths.memory_root / "MEMORY.md").exists()
    ctx.close()


# --- Claude Code -----------------------------------------------------------------------------------------------------


def test_phase1_through_claude_is_a_clean_room(
    claude: ClaudeAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Item 10: no CLAUDE.md (the user's or a project's), no hook output in any request, no user hook runs, no tools;
    the job records the model Claude used."""
    claude.api.set_handler(claude_model())
    ctx, t = _phase1("claude", isolated_env)
    before = snapshot(tmp_path)
    summary = run_phase1(ctx)
    after = snapshot(tmp_path)
    assert (summary.succeeded, summary.failed) == (1, 0), runs(ctx.conn, t)[-1]["error"]
    requests = claude.api.model_requests()
    assert requests and no_markers(requests) == []
    assert all(_claude_tool_names(r) <= {"StructuredOutput"} for r in requests)
    _assert_no_user_hook_ran(user_setup)
    assert written_outside(before, after) == []
    assert runs(ctx.conn, t)[-1]["model"] == f"claude:{CLAUDE_MODEL}"
    ctx.close()


def test_phase2_through_claude_is_a_clean_room_with_exactly_the_documented_tools(
    claude: ClaudeAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Items 10 and 12: every turn of the agent is free of the user's setup and offers exactly Read, Edit, Write,
    Glob, Grep; the run records the model Claude used."""
    claude.api.set_handler(claude_model())
    ctx = _phase2_ctx("claude")
    before = snapshot(tmp_path)
    result = run_phase2(ctx)
    after = snapshot(tmp_path)
    assert result.outcome == "awaiting_review", result.reason
    turns = [r for r in claude.api.model_requests() if _claude_tool_names(r) & CLAUDE_AGENT_TOOLS]
    assert len(turns) == 3 and no_markers(claude.api.model_requests()) == []
    assert all(_claude_tool_names(r) == CLAUDE_AGENT_TOOLS for r in turns)
    _assert_no_user_hook_ran(user_setup)
    assert written_outside(before, after) == []
    assert (ctx.paths.memory_root / "MEMORY.md").read_text() == MEMORY
    assert {r.body.get("model") for r in turns} == {CLAUDE_MODEL}
    assert _run_model(ctx, result.run_id) == f"claude:{CLAUDE_MODEL}"
    ctx.close()


def test_a_claude_write_outside_the_work_copy_is_denied_and_the_run_refused(
    claude: ClaudeAgent, agent_path: Path, user_setup: dict[str, Path], isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Item 11: a Write into Claude's auto-memory folder for the work directory (which Claude 2.1.328 lets through
    with no permission asked) and one into HOME are both denied, and memtui refuses the run."""
    captured: dict[str, Any] = {}
    inner = claude_model()

    def handler(req: Request) -> AgentReply:
        if _claude_tool_names(req) & CLAUDE_AGENT_TOOLS and "outside" not in captured:
            folder = _work_copy([req])
            project = re.sub(r"[^A-Za-z0-9]", "-", folder)
            captured["outside"] = [
                isolated_env["CLAUDE_CONFIG_DIR"] / "projects" / project / "memory" / "notes.md",
                isolated_env["HOME"] / "escaped.md",
            ]
            captured["handler"] = claude_model(outside=captured["outside"])
        return captured.get("handler", inner)(req)

    claude.api.set_handler(handler)
    ctx = _phase2_ctx("claude")
    before = snapshot(tmp_path)
    result = run_phase2(ctx)
    after = snapshot(tmp_path)
    assert captured["outside"] and not any(p.exists() for p in captured["outside"])
    assert result.outcome == "failed" and "outside its work copy" in str(result.reason), result.reason
    assert written_outside(before, after) == []
    assert not (ctx.paths.memory_root / "MEMORY.md").exists()
    ctx.close()
