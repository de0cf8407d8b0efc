"""Kill -9 trials: one tiny home, a real ``python -m memtui`` subprocess killed at a random point, a rerun, checks.

Each trial returns the invariants it found broken (an empty list when it survived) and whether the kill landed
while the process was still running (a fault injected, not a process that had already finished).
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memtui.adapters.redact import redact_text
from memtui.domain.home_paths import home_users, tilde_homes
from memtui.domain.trust.markers import strip_all
from memtui.services.ingest import run_ingest
from memtui.services.phase1.eligibility import select_candidates
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.state.db import connect
from tests.fixtures.rollouts import write_claude_session, write_codex_rollout
from tests.reliability.harness import (
    IDLE,
    LEASE,
    NOW,
    VALID,
    Home,
    baseline_problems,
    frozen,
    integrity_ok,
    kill_when,
    spawn,
)
from tests.support.chat_server import ChatServer, Reply, reply_error, reply_json, reply_text, reply_tool_calls
from tests.test_phase2_support import add_output

_ID_IN_PATH = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl")


@dataclass
class TrialResult:
    faulted: bool
    problems: list[str] = field(default_factory=list)
    detail: str = ""


def thread_of(body: dict) -> str:
    text = " ".join(str(m.get("content") or "") for m in body.get("messages", []))
    m = _ID_IN_PATH.search(text)
    return m.group(1) if m else "?"


class Phase1Model:
    """The loopback model for Phase 1 trials: small random delays, a few 500s, requests counted per thread."""

    def __init__(self, server: ChatServer, seed: int, error_rate: float = 0.1) -> None:
        self.server = server
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.per_thread: Counter[str] = Counter()
        self.error_rate = error_rate
        server.handler = self

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            self.per_thread[thread_of(body)] += 1
            delay = self.rng.uniform(0.0, 0.12)
            fail = self.rng.random() < self.error_rate
        return reply_error(500, "scripted outage", delay=delay) if fail else reply_json(VALID, delay=delay)


def seed_rollouts(home: Home, rng: random.Random) -> None:
    for i in range(rng.randint(2, 5)):
        write_codex_rollout(home.codex, user_messages=[f"Fix flaky test number {i} in checkout"], mtime=IDLE - i)
    if rng.random() < 0.5:
        write_claude_session(home.claude, user_messages=["Add a --dry-run flag to deploy"], mtime=IDLE - 10)


def phase1_invariants(home: Home, now: int) -> list[str]:
    """After a complete rerun: one output or a recorded failure per eligible thread, nothing half-written or stuck."""
    problems = []
    if not integrity_ok(home.memtui / "state.sqlite"):
        problems.append("state.sqlite fails integrity_check")
    with frozen(now):
        ctx = home.context()
        conn = ctx.conn
        try:
            eligible = {t["id"]: t for t in conn.execute("SELECT * FROM threads WHERE preview != ''")}
            # as Phase 1 stores it: redacted, then its home folders written as ``~`` (no user name in memory)
            expected_raw = tilde_homes(redact_text(VALID["raw_memory"]), home_users(VALID["raw_memory"]))
            for tid, thread in eligible.items():
                out = conn.execute("SELECT * FROM stage1_outputs WHERE thread_id=?", (tid,)).fetchone()
                job = conn.execute("SELECT * FROM jobs WHERE kind='memory_stage1' AND job_key=?", (tid,)).fetchone()
                ok_runs = conn.execute(
                    "SELECT COUNT(*) FROM job_runs WHERE job_key=? AND outcome='succeeded'", (tid,)
                ).fetchone()[0]
                if out is not None:
                    if strip_all(out["raw_memory"]) != expected_raw or out["source_updated_at"] != thread["updated_at"]:
                        problems.append(f"{tid}: half-written or stale output row")
                    if job is None or job["status"] != "done" or job["last_success_watermark"] != thread["updated_at"]:
                        problems.append(f"{tid}: output without a done job")
                    if ok_runs != 1:
                        problems.append(f"{tid}: extracted successfully {ok_runs} times")
                elif job is None or job["status"] != "error" or not job["last_error"]:
                    problems.append(f"{tid}: neither an output nor a recorded failure (job {job and dict(job)})")
            stuck = conn.execute(
                "SELECT COUNT(*) FROM jobs WHERE status='running' AND (lease_until IS NULL OR lease_until <= ?)",
                (now,),
            ).fetchone()[0]
            if stuck:
                problems.append(f"{stuck} job(s) running past their lease")
            if conn.execute("SELECT COUNT(*) FROM jobs WHERE kind='memory_stage1' AND status='running'").fetchone()[0]:
                problems.append("a stage-1 job is still running after the rerun finished")
            open_runs = conn.execute("SELECT COUNT(*) FROM job_runs WHERE outcome IS NULL").fetchone()[0]
            if open_runs:
                problems.append(f"{open_runs} attempt row(s) left half-written (no outcome)")
            if conn.execute("SELECT COUNT(*) FROM stage1_outputs WHERE raw_memory='' OR rollout_summary=''").fetchone()[
                0
            ]:
                problems.append("empty output row")
        finally:
            ctx.close()
    return problems


def phase1_kill_trial(base: Path, server: ChatServer, seed: int) -> TrialResult:
    rng = random.Random(seed)
    home = Home(base).make()
    model = Phase1Model(server, seed)
    seed_rollouts(home, rng)
    with frozen(NOW):
        ctx = home.context()
        run_ingest(ctx)
        ctx.close()
    env = home.env(server.base_url)
    args = ["phase1", "--json", "--concurrency", str(rng.randint(1, 3))]
    proc = spawn(home, args, env)
    if rng.random() < 0.5:
        when = f"after {rng.uniform(0.3, 1.1):.2f}s"
        deadline = float(when.split()[1][:-1])
        import time

        start = time.monotonic()
        faulted = kill_when(proc, lambda: time.monotonic() - start >= deadline)
    else:
        k = rng.randint(1, 4)
        when = f"at request {k}"
        faulted = kill_when(proc, lambda: sum(model.per_thread.values()) >= k)
    # The rerun, once every lease of the killed process has expired.
    rerun_at = NOW + LEASE + 1
    with frozen(rerun_at):
        ctx = home.context(server.base_url)
        summary = run_phase1(ctx)
        ctx.close()
    problems = phase1_invariants(home, rerun_at)
    extra = [t for t, n in model.per_thread.items() if n > 1]
    detail = f"seed {seed}, killed {when}; rerun {summary.succeeded} ok {summary.failed} failed; re-sent {len(extra)}"
    return TrialResult(faulted, problems, detail)


# --- Phase 2 -----------------------------------------------------------------------------------------------------

AGENT_MEMORY = "# Task Group: /work/proj\n\n- consolidated by the scripted agent\n- CI runs in UTC\n"
AGENT_SUMMARY = "v1\n## User Profile\n- prefers uv\n"
THREADS = ["0194f5a6-89ab-7cde-8123-00000000000" + str(i) for i in range(1, 4)]


def agent_handler(rng: random.Random):
    """A stateless scripted agent: the reply depends only on how many turns the conversation already has."""
    lock = threading.Lock()

    def handler(body: dict) -> Reply:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        with lock:
            delay = rng.uniform(0.0, 0.1)
        if turn == 0:
            return reply_tool_calls(("read_file", {"path": "phase2_workspace_diff.md"}), delay=delay)
        if turn == 1:
            return reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": AGENT_MEMORY}), delay=delay)
        if turn == 2:
            return reply_tool_calls(
                ("write_file", {"path": "memory_summary.md", "content": AGENT_SUMMARY}), delay=delay
            )
        return reply_text("done", delay=delay)

    return handler


def seed_phase2(home: Home, server: ChatServer) -> bytes:
    """Two outputs consolidated and approved (the old baseline), then a third output waiting: returns old MEMORY.md."""
    with frozen(NOW):
        ctx = home.context(server.base_url)
        for i, tid in enumerate(THREADS[:2]):
            add_output(ctx.conn, tid, NOW - 7200 + i)
        result = run_phase2(ctx, offline=True, force=True)
        assert result.outcome == "awaiting_review", result
        review.approve(ctx)
        add_output(ctx.conn, THREADS[2], NOW - 3600)
        ctx.close()
    return (home.root / "MEMORY.md").read_bytes()


def phase2_kill_trial(base: Path, server: ChatServer, seed: int) -> TrialResult:
    import time

    rng = random.Random(seed)
    home = Home(base).make()
    server.handler = agent_handler(rng)
    old = seed_phase2(home, server)
    mode = rng.choice(["agent", "agent", "offline", "auto-approve", "approve"])
    offline = mode != "agent"
    if mode == "approve":
        with frozen(NOW):
            ctx = home.context(server.base_url)
            assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
            ctx.close()
        args = ["review", "approve"]
    elif mode == "agent":
        args = ["phase2", "--force"]
    else:
        args = ["phase2", "--force", "--offline"] + (["--auto-approve"] if mode == "auto-approve" else [])
    base_requests = len(server.requests)
    proc = spawn(home, args, home.env(server.base_url))
    start = time.monotonic()
    if mode == "agent" and rng.random() < 0.5:
        k = rng.randint(1, 4)
        when = f"at request {k}"
        faulted = kill_when(proc, lambda: len(server.requests) - base_requests >= k)
    else:
        delay = rng.uniform(0.25, 1.0)
        when = f"after {delay:.2f}s"
        faulted = kill_when(proc, lambda: time.monotonic() - start >= delay)

    problems = []
    after_kill = (home.root / "MEMORY.md").read_bytes() if (home.root / "MEMORY.md").is_file() else None
    committed_after_kill = baseline_problems(home.root)
    problems += [f"right after the kill: {p}" for p in committed_after_kill]
    if not integrity_ok(home.memtui / "state.sqlite"):
        problems.append("state.sqlite fails integrity_check")

    # Rerun (after the dead lease) until the selection is consolidated and approved. The trial knows the killed
    # process was the only git user, so a leftover index.lock counts as stale at once (the default waits 60 s).
    with frozen(NOW + LEASE + 1):
        ctx = home.context(server.base_url, index_lock_stale_seconds=0)
        try:
            if review.pending_run(ctx.conn) is None:
                result = run_phase2(ctx, offline=offline, force=True)
                if result.outcome not in ("awaiting_review", "no_changes"):
                    problems.append(f"rerun: {result.outcome} {result.reason}")
            if review.pending_run(ctx.conn) is not None:
                review.approve(ctx)
            new = (home.root / "MEMORY.md").read_bytes()
            # A kill between the agent's write and memtui marking its lines leaves the agent's own (whole) version.
            if after_kill not in (old, new, AGENT_MEMORY.encode() if mode == "agent" else old):
                problems.append(f"MEMORY.md after the kill is neither the old nor the new version: {after_kill!r:.80}")
            if mode == "agent" and strip_all(new.decode()) != AGENT_MEMORY:
                problems.append("rerun did not produce the agent's MEMORY.md")
            if THREADS[2] not in (home.root / "raw_memories.md").read_text():
                problems.append("rerun did not consolidate the new memory")
            running = ctx.conn.execute(
                "SELECT COUNT(*) FROM phase2_runs WHERE status IN ('running', 'awaiting_review')"
            )
            if running.fetchone()[0]:
                problems.append("a Phase 2 run is left running or awaiting review")
            job = ctx.conn.execute("SELECT status FROM jobs WHERE kind='memory_consolidate_global'").fetchone()
            if job["status"] == "running":
                problems.append("the global job is still running")
        finally:
            ctx.close()
    problems += [f"after the rerun: {p}" for p in baseline_problems(home.root)]
    if (home.root / "phase2_workspace_diff.md").exists():
        problems.append("the diff file was left in the memory root")
    conn = connect(home.memtui / "state.sqlite")
    try:
        if conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("state.sqlite fails integrity_check after the rerun")
    finally:
        conn.close()
    return TrialResult(faulted, problems, f"seed {seed}, {mode} killed {when}")


def eligible_count(home: Home) -> int:
    with frozen(NOW):
        ctx = home.context()
        try:
            return len(select_candidates(ctx.conn, ctx.settings)[0])
        finally:
            ctx.close()


# --- the gate: kill -9 across every step that writes the memory root ---------------------------------------------

GATE_MODES = ("http-agent", "cli-agent", "approve", "partial-approve", "commit", "restore")
PERSON_LINE = "- a line the person typed right after the kill\n"
SAVED_LINE = "- saved by the person, waiting for their commit\n"
ENDED = {"approved", "rejected", "failed", "no_changes"}


@dataclass
class GateResult(TrialResult):
    edits: int = 0  # a person's edits made around the kill
    kept: int = 0  # of those, still on disk (or committed) at the end
    runs: int = 0  # Phase 2 / restore runs the trial made
    ended: int = 0  # of those, approved, rejected or failed at the end
    stuck: int = 0  # runs still running, or awaiting review on a baseline that holds them, after one restart


def _prepare_gate(home: Home, server: ChatServer, mode: str, rng: random.Random) -> tuple[list[str], dict[str, str]]:
    """Bring the home to the step to kill; returns that step's command line and environment."""
    from memtui.services import history
    from memtui.services.review import decide
    from tests.support import fake_agents

    env = home.env(server.base_url)
    with frozen(NOW):
        ctx = home.context(server.base_url)
        try:
            if mode == "http-agent":
                return ["phase2", "--force"], env
            if mode == "cli-agent":
                agent = rng.choice(["codex", "claude"])
                fake_agents.install(home.base / "bin")
                edits = {"MEMORY.md": AGENT_MEMORY, "memory_summary.md": AGENT_SUMMARY}
                env = home.env(
                    None,
                    MEMTUI_PROVIDER=agent,
                    PATH=fake_agents.path_with(home.base / "bin"),
                    FAKE_AGENT_EDITS=json.dumps(edits),
                    FAKE_AGENT_DELAY=f"{rng.uniform(0.0, 0.6):.2f}",
                )
                return ["phase2", "--force"], env
            if mode == "commit":
                summary = home.root / "memory_summary.md"
                summary.write_bytes(summary.read_bytes() + SAVED_LINE.encode())
                return ["review", "commit", "-m", "my edit"], env
            result = run_phase2(ctx, offline=True, force=True)
            assert result.outcome == "awaiting_review", result
            if mode == "restore":
                review.approve(ctx)
                first = min(d.id for d in history.list_decisions(ctx.conn) if d.kind == "approve")
                return ["history", "restore", str(first)], env
            args = ["review", "approve"]
            if mode == "partial-approve":
                run = review.pending_run(ctx.conn)
                assert run is not None
                p = decide.plan(home.root, run.diff, [], None, reviewed_text=review._reviewed_text(home.root, run))
                hunk = rng.choice([h for h in p.hunks if h.file == "MEMORY.md"])
                args += ["--except", hunk.id, "--reason", "not this one"]
            return args, env
        finally:
            ctx.close()


def gate_kill_trial(base: Path, server: ChatServer, seed: int) -> GateResult:
    """Kill one step of the gate at a random moment, edit MEMORY.md as a person would, restart once (same frozen
    time: no waiting for a lease), decide what awaits review as that person, then count what survived."""
    import time

    from memtui.adapters.memroot.baseline import BaselineError
    from memtui.adapters.memroot.lock import lock_path
    from memtui.services.review.settle import needs_recovery

    rng = random.Random(seed)
    home = Home(base).make()
    server.handler = agent_handler(rng)
    seed_phase2(home, server)
    mode = rng.choice(GATE_MODES)
    args, env = _prepare_gate(home, server, mode, rng)
    if mode == "cli-agent":
        env["FAKE_AGENT_LOG"] = str(home.base / "agent-calls.jsonl")
    requests, extra = len(server.requests), rng.uniform(0.0, 0.4)
    started: list[float] = []

    def inside() -> bool:
        """The step is under way: the agent was asked (HTTP or CLI), or the memory-root lock is held."""
        if mode == "http-agent":
            return len(server.requests) > requests
        if mode == "cli-agent":
            return (home.base / "agent-calls.jsonl").is_file()
        holder = lock_path(home.root)
        return holder.is_file() and holder.stat().st_size > 0

    def trigger() -> bool:
        if not started and inside():
            started.append(time.monotonic())
        return bool(started) and time.monotonic() - started[0] >= extra

    proc = spawn(home, args, env)
    faulted = kill_when(proc, trigger)
    delay = f"{extra:.2f}s into the step" if started else "before the step began"
    memory = home.root / "MEMORY.md"
    memory.write_bytes(memory.read_bytes() + PERSON_LINE.encode())  # the person's edit, right after the kill

    problems: list[str] = []
    out = GateResult(faulted, problems, f"seed {seed}, {mode} killed {delay}")
    with frozen(NOW):
        ctx = home.context(server.base_url, index_lock_stale_seconds=0)
        try:
            review.review_state(ctx)  # the restart: what the killed process left is settled here
            conn = ctx.conn
            out.stuck = conn.execute("SELECT COUNT(*) FROM phase2_runs WHERE status='running'").fetchone()[0]
            out.stuck += int(needs_recovery(ctx))
            if review.pending_run(conn) is not None:  # the person decides: take it with their edit, else reject
                try:
                    review.approve(ctx, include_changes=True)
                except (review.ReviewError, BaselineError):
                    review.reject(ctx, reason="trial")
            statuses = [r[0] for r in conn.execute("SELECT status FROM phase2_runs")]
            out.runs, out.ended = len(statuses), sum(s in ENDED for s in statuses)
            if out.ended != out.runs:
                problems.append(f"runs not ended: {statuses}")
            job = global_job_row(conn)
            if job is not None and job["status"] == "running":
                problems.append("the global Phase 2 job is still running")
        finally:
            ctx.close()
    wanted = [(memory, PERSON_LINE)] + ([(home.root / "memory_summary.md", SAVED_LINE)] if mode == "commit" else [])
    out.edits = len(wanted)
    for path, line in wanted:
        if path.is_file() and line in path.read_text(encoding="utf-8", errors="replace"):
            out.kept += 1
        else:
            problems.append(f"the person's line in {path.name} was lost")
    if out.stuck:
        problems.append(f"{out.stuck} run(s) stuck after one restart")
    problems += [f"after the restart: {p}" for p in baseline_problems(home.root)]
    if list((home.memtui / "work").glob("phase2-*")):
        problems.append("a CLI agent's copy of the memory outlived the restart")
    if not integrity_ok(home.memtui / "state.sqlite"):
        problems.append("state.sqlite fails integrity_check")
    return out


def global_job_row(conn):
    return conn.execute("SELECT status FROM jobs WHERE kind='memory_consolidate_global'").fetchone()
