"""Agents read only what a person approved: one read path (``memtui.adapters.memroot.approved``) over the baseline commit.

A Phase 2 run awaiting review, or a person's saved but uncommitted edit, changes the working tree; no export, MCP
tool or resource, or search serves it until it is approved or committed. A rejected run leaves nothing behind.
"""

from __future__ import annotations

import ast
import inspect
import json

import pytest

from memtui.adapters.memroot.approved import approved
from memtui.mcp import scope as mcp_scope
from memtui.mcp import server as mcp_server
from memtui.services import agent_view, export, search
from memtui.services.citations import check as citations_check
from memtui.services.export import scope as export_scope
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from tests.agent_reads import agent_reads
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
MARK = "quokkapending"
FILES = ["MEMORY.md", "memory_summary.md"]


@pytest.fixture
def agent_ctx(frozen_clock, model_env):
    c = context()
    yield c
    c.close()


def _approved_memory(ctx) -> None:
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"


def _agent_adds_the_marker(ctx, server) -> None:
    """A real Phase 2 run through the loopback model whose agent adds ``MARK`` to both memory files."""
    root = ctx.paths.memory_root

    def handler(body):
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if turn == 0:
            memory = (root / "MEMORY.md").read_text() + f"- {MARK}: the agent's unreviewed rule\n"
            summary = (root / "memory_summary.md").read_text() + f"- {MARK} in the summary\n"
            return reply_tool_calls(
                ("write_file", {"path": "MEMORY.md", "content": memory}),
                ("write_file", {"path": "memory_summary.md", "content": summary}),
            )
        return reply_text("done")

    server.handler = handler
    add_output(ctx.conn, B, FROZEN_NOW - 60)
    result = run_phase2(ctx, offline=False, force=True)
    assert result.outcome == "awaiting_review", result
    assert MARK in (root / "MEMORY.md").read_text()  # the working tree holds it: only the read path keeps it out


def _leaks(served: dict[str, str]) -> list[str]:
    return sorted(name for name, text in served.items() if MARK in text)


def test_1_a_pending_run_reaches_no_agent_and_a_rejected_one_leaves_nothing(agent_ctx, model_env, tmp_path):
    ctx = agent_ctx
    _approved_memory(ctx)
    _agent_adds_the_marker(ctx, model_env)

    pending = agent_reads(ctx, tmp_path / "pending", MARK, FILES)
    assert len(pending) >= 10  # every export form, search, and each MCP tool call and resource
    assert _leaks(pending) == []  # the old main served the run's line on every one of these paths
    assert "v1" in pending["export prompt"] and "v1" in pending["mcp resource memtui://memory_summary.md"]
    assert "Task Group" in pending['mcp tool memory_read {"path": "MEMORY.md"}']  # approved text is still served

    assert "Task Group" in pending["files under the base path of export prompt"]
    root = ctx.paths.memory_root
    assert len(list(root.parent.glob(f".{root.name}-approved-*"))) == 1  # one copy: older ones are gone

    review.reject(ctx, "not this")
    after = agent_reads(ctx, tmp_path / "rejected", MARK, FILES)
    assert _leaks(after) == []
    exported = [p.read_text() for p in (tmp_path / "pending").glob("CLAUDE-*.md")]  # written while pending
    assert len(exported) == 2 and not any(MARK in text for text in exported)


def test_1_an_approved_run_reaches_every_read_path(agent_ctx, model_env, tmp_path):
    """The other side: the same reads serve the marker once a person approves, so the leak check above can fail."""
    ctx = agent_ctx
    _approved_memory(ctx)
    _agent_adds_the_marker(ctx, model_env)
    review.approve(ctx)
    served = agent_reads(ctx, tmp_path / "approved", MARK, FILES)
    names = ("export prompt", "export agents-md --scope global", "search", "mcp resource memtui://read-path",
             "files under the base path of export prompt")  # fmt: skip
    for name in names:
        assert MARK in served[name], name
    assert MARK in served['mcp tool memory_read {"path": "MEMORY.md"}']


def test_1_a_persons_saved_edit_reaches_agents_once_committed(agent_ctx, tmp_path):
    ctx = agent_ctx
    _approved_memory(ctx)
    root = ctx.paths.memory_root
    summary = root / "memory_summary.md"
    summary.write_text(summary.read_text() + f"- {MARK}: the person's own note\n")  # saved, not committed
    assert _leaks(agent_reads(ctx, tmp_path / "saved", MARK, FILES)) == []
    review.commit_manual_edit(ctx, "my note")
    served = agent_reads(ctx, tmp_path / "committed", MARK, FILES)
    assert MARK in served["export prompt"] and MARK in served["mcp resource memtui://memory_summary.md"]


def test_approved_reads_the_baseline_commit_not_the_files(agent_ctx):
    ctx = agent_ctx
    _approved_memory(ctx)
    root = ctx.paths.memory_root
    before = approved(root).read_bytes("MEMORY.md")
    (root / "MEMORY.md").write_text("replaced on disk\n")
    (root / "new.md").write_text("never committed\n")
    (root / "link.md").symlink_to(root / "MEMORY.md")
    snap = approved(root)
    assert snap.read_bytes("MEMORY.md") == before and not snap.is_file("new.md") and not snap.is_file("link.md")
    assert snap.is_dir("rollout_summaries") and not snap.is_dir("nothing")


# --- structure: no agent-facing function reads the memory root's working tree ------------------------------------

# Calls that read a file or a folder of the working tree.
_FS_READS = {"read_text", "read_bytes", "open", "is_file", "exists", "iterdir", "rglob", "glob", "scandir", "walk",
             "stat", "readlink", "listdir", "is_dir"}  # fmt: skip
# Functions of those modules that read something other than the memory root (package data, the export target,
# the project's own git status, rollout files), each with why.
_NOT_MEMORY = {
    "read_path_template": "package data (the prompt template)",
    "project_template": "package data (the project prompt template)",
    "write_agents_md": "the AGENTS.md / CLAUDE.md being written, outside the memory root",
    "resolve_target": "the export target and its git work tree",
    "user_level_files": "the agents' own settings folders",
    "git_status": "the export target's git status",
    "check_tracked": "the export target's git status",
    "project_of_cwd": "the project folder, not memory",
    "_existing_ancestor": "the export target's folders",
    "_auto_memory_target": "Claude Code's auto memory folder and the project its sessions ran in",
    "confine": "path checks only (symlinks resolved to refuse escapes); the bytes come from the baseline",
    "serve": "starts the server",
    "refresh_messages": "rollout files (their indexed messages), not the memory root",
    "message_docs": "rollout items",
}
_AGENT_FACING = (export, export_scope, mcp_server, mcp_scope)


def _is_approved(node: ast.AST, snapshots: set[str]) -> bool:
    """``approved(root)`` itself, or a name bound to it: reads on those come from the baseline commit."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "approved":
        return True
    if isinstance(node, ast.Attribute) and node.attr == "snapshot":  # AgentView.snapshot is approved(root)
        return True
    return isinstance(node, ast.Name) and node.id in snapshots


def _fs_reads(fn: ast.AST) -> list[str]:
    snapshots = {
        t.id
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and _is_approved(node.value, set())
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and _is_approved(f.value, snapshots):
                continue
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _FS_READS:
                out.append(f"{name}() at line {node.lineno}")
    return out


def test_agent_facing_code_reads_memory_only_through_the_approved_read_path():
    """Adding a function to export, export_scope or the MCP server that reads a file (``read_text``, ``open``,
    ``os.walk``...) fails here: memory for agents comes from ``memtui.adapters.memroot.approved``."""
    found = {}
    for module in _AGENT_FACING:
        tree = ast.parse(inspect.getsource(module))
        for node in tree.body:
            is_fn = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_fn and node.name not in _NOT_MEMORY and (reads := _fs_reads(node)):
                found[f"{module.__name__}.{node.name}"] = reads
    memory_index = ast.parse(inspect.getsource(search.refresh_memory_files))
    if reads := _fs_reads(memory_index):
        found["memtui.services.search.refresh_memory_files"] = reads
    assert found == {}, json.dumps(found, indent=1)
    for module in (*_AGENT_FACING, search, citations_check):
        assert "AgentView" in vars(module), f"{module.__name__} does not read through the agent-facing view"
    assert "approved" in vars(agent_view), "the agent-facing view is built on the approved read path"
    view_tree = ast.parse(inspect.getsource(agent_view))
    for node in view_tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and (reads := _fs_reads(node)):
            found[f"memtui.services.agent_view.{node.name}"] = reads
    assert found == {}, json.dumps(found, indent=1)


def test_the_structural_check_catches_a_working_tree_read():
    bad = ast.parse("def f(root):\n    return (root / 'MEMORY.md').read_text()\n").body[0]
    assert _fs_reads(bad) == ["read_text() at line 2"]
    good = ast.parse("def f(root):\n    m = approved(root)\n    return m.read_text('MEMORY.md')\n").body[0]
    assert _fs_reads(good) == []
