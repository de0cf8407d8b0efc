"""The consolidation agent against the loopback server, scripted to follow the prompt: a rename, a forget: line,
and an INIT run over 256 raw memories that writes a 100 KB MEMORY.md within the turn, write and context limits."""

from __future__ import annotations

import re

import pytest

from memtui.adapters.memroot.files import DIFF_FILENAME, ROLLOUT_SUMMARIES
from memtui.core import clock
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.prompt import history_budget_bytes
from memtui.services.phase2.tools import MAX_READ_LINES
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import Reply, reply_text, reply_tool_calls
from tests.test_phase2_support import add_output, context

V4 = "3f2c9e1a-5b7d-4c8e-9f0a-1b2c3d4e5f60"
A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
SUMMARY = "v1\n## User Profile\n- a developer\n\n## User preferences\n- uv\n\n## General Tips\n- none\n\n## What's in Memory\n- proj\n"
PIP = '- when installing, the user said: "use uv, not pip" -> use uv [Task 1]\n'
RAW = '### Task 1: ci\nPreference signals:\n- when installing, the user said: "use uv, not pip" -> use uv\n'
FORGET = '### Task 1: cleanup\nExplicit memory requests:\n- forget: "forget the pip rule" -> use uv, not pip [item 3]\n'


@pytest.fixture
def ctx(frozen_clock, model_env):
    c = context()
    yield c
    c.close()


def write(path, content, **kw):
    return ("write_file", {"path": path, "content": content, **kw})


def memory_md(summary_file: str, thread: str) -> str:
    return (
        "# Task Group: /work/proj\nscope: ci\napplies_to: cwd=/work/proj; reuse_rule=this checkout\n\n"
        f"## Task 1: ci, success\n\n### rollout_summary_files\n- {summary_file} (thread_id={thread})\n\n"
        f"### keywords\n- ci, uv\n\n## User preferences\n{PIP}"
    )


def prompt_of(server, i: int) -> str:
    return server.requests[i]["messages"][1]["content"]


def summary_file(root) -> str:
    (name,) = [p.name for p in (root / ROLLOUT_SUMMARIES).iterdir()]
    return f"{ROLLOUT_SUMMARIES}/{name}"


def test_rename_keeps_the_memory_and_moves_its_reference(ctx, model_env):
    root = ctx.paths.memory_root
    add_output(ctx.conn, V4, FROZEN_NOW - 3600, raw=RAW, slug="fix_ci")
    old = None

    def first(body):
        nonlocal old
        if len(body["messages"]) > 2:
            return reply_text("done")
        old = summary_file(root)
        return reply_tool_calls(write("MEMORY.md", memory_md(old, V4)), write("memory_summary.md", SUMMARY))

    model_env.handler = first
    assert run_phase2(ctx, auto_approve=True).outcome == "approved"
    model_env.handler = None

    add_output(ctx.conn, V4, FROZEN_NOW - 60, raw=RAW, slug="fix_ci_after_more_work")  # new ts and slug: new stem
    seen: dict[str, str] = {}

    def follow_the_prompt(body):
        if len(body["messages"]) > 2:
            return reply_text("Moved the reference of the renamed summary.")
        prompt = body["messages"][1]["content"]
        m = re.search(r"- (rollout_summaries/\S+) -> (rollout_summaries/\S+) \(thread (\S+)\)", prompt)
        seen.update(old=m.group(1), new=m.group(2), thread=m.group(3), prompt=prompt)
        return reply_tool_calls(("replace_in_file", {"path": "MEMORY.md", "old": m.group(1), "new": m.group(2)}))

    model_env.handler = follow_the_prompt
    result = run_phase2(ctx, force=True)
    assert result.outcome == "awaiting_review", result.reason
    assert (seen["old"], seen["new"], seen["thread"]) == (old, summary_file(root), V4) and old != seen["new"]
    assert "Renames are not deletions" in seen["prompt"]
    memory = (root / "MEMORY.md").read_text()
    assert seen["new"] in memory and old not in memory and PIP in memory
    assert ("D", old) in result.stat and ("A", seen["new"]) in result.stat


def test_a_forget_line_reaches_the_agent_as_an_authoritative_deletion(ctx, model_env):
    root = ctx.paths.memory_root
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw=RAW)
    model_env.handler = lambda body: (
        reply_text("done")
        if len(body["messages"]) > 2
        else reply_tool_calls(write("MEMORY.md", memory_md(summary_file(root), A)), write("memory_summary.md", SUMMARY))
    )
    assert run_phase2(ctx, auto_approve=True).outcome == "approved"

    add_output(ctx.conn, B, FROZEN_NOW - 60, raw=FORGET)
    prompts: list[str] = []

    def follow_the_prompt(body):
        msgs = body["messages"]
        if len(msgs) == 2:
            prompts.append(msgs[1]["content"])
            return reply_tool_calls(("search", {"query": "forget:", "path": "raw_memories.md"}))
        if len(msgs) == 4:
            assert "raw_memories.md:" in msgs[-1]["content"] and "use uv, not pip" in msgs[-1]["content"]
            return reply_tool_calls(("replace_in_file", {"path": "MEMORY.md", "old": PIP, "new": ""}))
        return reply_text("Forgot the pip rule as the user asked.")

    model_env.handler = follow_the_prompt
    result = run_phase2(ctx, force=True)
    assert result.outcome == "awaiting_review", result.reason
    (prompt,) = prompts
    assert (
        f'thread {B} (updated_at {clock.iso(FROZEN_NOW - 60)}): forget: "forget the pip rule" -> use uv, not pip'
        in prompt
    )
    assert "It is an authoritative deletion" in prompt
    assert "use uv, not pip" not in (root / "MEMORY.md").read_text()
    assert '- forget: "forget the pip rule"' in (root / "raw_memories.md").read_text()


# --- limits: an INIT run over 256 raw memories writing a 100 KB MEMORY.md --------------------------------------------


def _raw(i: int) -> str:
    lines = [f"---\ndescription: task {i} in project {i % 7}\ntask: task {i}\ntask_group: p{i % 7}", "---"]
    lines.append(f"### Task 1: task {i}")
    lines += [f'- when step {j}, the user said: "do thing {i}.{j} the careful way" -> do it' for j in range(30)]
    return "\n".join(lines) + "\n"


class InitAgent:
    """Reads the diff's status, pages through raw_memories.md two reads per turn, writes MEMORY.md in parts."""

    PART = 21_000

    def __init__(self) -> None:
        self.step = "status"
        self.next_line = 1
        self.total: int | None = None
        self.parts = 0
        self.read_sizes: list[int] = []
        self.tool_bytes = 0

    def __call__(self, body) -> Reply:
        results = []
        for m in reversed(body["messages"]):
            if m["role"] != "tool":
                break
            results.insert(0, m["content"])
        self.tool_bytes += sum(len(r.encode()) for r in results)
        for r in results:
            if h := re.match(r"\[raw_memories\.md lines (\d+)-(\d+) of (\d+)", r):
                start, end, self.total = int(h[1]), int(h[2]), int(h[3])
                self.read_sizes.append(end - start + 1)
        if self.step == "status":
            self.step = "read"
            return reply_tool_calls(("read_file", {"path": DIFF_FILENAME, "start_line": 1, "end_line": 40}))
        if self.step == "read":
            if self.total is None or self.next_line <= self.total:
                calls = []
                for _ in range(2):
                    calls.append(("read_file", {"path": "raw_memories.md", "start_line": self.next_line}))
                    self.next_line += MAX_READ_LINES
                return reply_tool_calls(*calls)
            self.step = "write"
        if self.step == "write" and self.parts < 5:
            self.parts += 1
            bullets = "".join(f"- learning {self.parts}.{k}: do the careful thing [Task 1]\n" for k in range(600))
            text = (bullets * 2)[: self.PART]
            head = "# Task Group: p0\nscope: x\napplies_to: cwd=/work/proj; reuse_rule=x\n\n" if self.parts == 1 else ""
            return reply_tool_calls(write("MEMORY.md", head + text + "\n", append=self.parts > 1))
        if self.step == "write":
            self.step = "done"
            return reply_tool_calls(write("memory_summary.md", SUMMARY))
        return reply_text("Built MEMORY.md and memory_summary.md from 256 raw memories.")


@pytest.mark.slow
def test_init_over_256_raw_memories_stays_within_turns_bytes_and_context(ctx, model_env):
    root = ctx.paths.memory_root
    for i in range(256):
        add_output(ctx.conn, f"0194f5a6-89ab-7cde-8123-{i:012x}", FROZEN_NOW - 3600 - i, raw=_raw(i))
    agent = InitAgent()
    model_env.handler = agent
    result = run_phase2(ctx)
    assert result.outcome == "awaiting_review", result.reason
    s = ctx.settings
    raw_bytes = (root / "raw_memories.md").stat().st_size
    budget = history_budget_bytes(s)
    print(
        f"\nINIT 256: turns={result.turns} raw_memories={raw_bytes} B read={agent.tool_bytes} B history budget={budget} B"
    )
    assert result.turns <= 30 < s.agent_max_turns and agent.step == "done"
    assert (root / "MEMORY.md").stat().st_size >= 100_000
    assert agent.total == len((root / "raw_memories.md").read_text().splitlines())
    assert sum(agent.read_sizes) == agent.total and max(agent.read_sizes) <= MAX_READ_LINES  # read it all, in pages
    # the run read more than its history may hold: without trimming the last request would carry it all
    assert agent.tool_bytes > raw_bytes > budget
    prompt = model_env.requests[0]["messages"][1]["content"]
    assert "read only the `## Status` section" in prompt and "## Mode: INIT" in prompt
    largest = max(len(r) for r in model_env.raw_requests)
    assert largest < budget + len(prompt.encode()) + 16_000, (largest, budget)
    stubs = sum("was dropped to save context" in (m.get("content") or "") for m in model_env.requests[-1]["messages"])
    print(f"largest request={largest} B, stubs in the last request={stubs}")
    assert stubs > 0
    run = review.pending_run(ctx.conn)
    assert run.turns == result.turns
