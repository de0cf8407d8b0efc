"""Phase 2 no-change run over 2,000 selected summaries, against the ideal: one ``git status`` of the same tree.

    .venv/bin/python benchmarks/phase2.py [--n 2000] [--repeat 5]

Builds a throwaway MEMTUI_HOME, inserts the stage-1 rows with SQL, runs one offline consolidation and approves it,
then times no-change runs, alternated with ``git status``: the first after the approve runs in full (selection, sync
of unchanged files, git dirty check, success record) and keeps a fingerprint of what it read; the next ones find
the same fingerprint and record the same outcome without the selection text, the sync or git.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figure, code_root, emit

code_root()


def _rollout(tid: str, cwd: str, i: int) -> str:
    """A two-message Codex rollout (session_meta, one user message, one answer)."""
    ts = "2026-07-01T00:00:00.000Z"
    lines = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": tid, "timestamp": ts, "cwd": cwd, "source": "cli"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"task {i}"}]},
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        },
    ]
    return "".join(json.dumps(x) + "\n" for x in lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-phase2-"))
    os.environ.update({"MEMTUI_HOME": str(tmp / "home"), "HOME": str(tmp / "user")})
    for name in [k for k in os.environ if k.startswith("OPENAI_")]:
        del os.environ[name]
    os.environ["MEMTUI_MAX_RAW_MEMORIES_FOR_CONSOLIDATION"] = str(max(args.n, 1))

    from memtui.adapters.memroot.baseline import _env
    from memtui.core import clock
    from memtui.services.context import open_context
    from memtui.services.phase2 import review, unchanged
    from memtui.services.phase2.consolidate import run_phase2

    now = 1_783_684_800
    clock.freeze(now)
    ctx = open_context()
    conn = ctx.conn
    rollouts = tmp / "rollouts"
    rollouts.mkdir()
    body = "Details of what happened, which commands worked, and what to avoid next time. " * 18  # ~1.5 KB
    with conn:
        conn.execute("BEGIN")
        for i in range(args.n):
            tid = f"0194f5a6-89ab-7cde-8123-{i:012x}"
            path = rollouts / f"{tid}.jsonl"  # a real file, as ingest leaves it: its messages are indexed once
            path.write_text(_rollout(tid, f"/work/proj{i % 40}", i))
            conn.execute(
                "INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, ingested_at)"
                " VALUES (?, 'codex', ?, ?, 'cli', ?, ?)",
                (tid, str(path), f"/work/proj{i % 40}", now - i, now),
            )
            conn.execute(
                "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug,"
                " generated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (tid, now - 60 - i, f"- memory {i}: use uv", f"# Session {i}\n{body}", f"task_{i}", now),
            )
    t0 = time.perf_counter()
    first = run_phase2(ctx, offline=True, auto_approve=True)
    setup = time.perf_counter() - t0
    assert first.outcome == "approved", first

    root = ctx.paths.memory_root
    runs, git_runs, short = [], [], 0
    for _ in range(args.repeat):  # alternated, so a loaded machine slows both alike
        said: list[str] = []
        t0 = time.perf_counter()
        result = run_phase2(ctx, offline=True, force=True, progress=said.append)
        runs.append(time.perf_counter() - t0)
        assert result.outcome == "no_changes", result
        short += unchanged.SAID in said
        t0 = time.perf_counter()
        subprocess.run(
            ["git", "status", "--porcelain"],
            cwd=root,
            env={**os.environ, **_env(root)},
            check=True,
            capture_output=True,
        )
        git_runs.append(time.perf_counter() - t0)
    assert review.pending_run(conn) is None
    med, ideal = statistics.median(runs), statistics.median(git_runs)
    print(f"runs answered by the no-change fingerprint (nothing read changed since a full run): {short} of {len(runs)}")
    print(f"the full runs: {', '.join(f'{x * 1000:.0f}' for x in runs[: len(runs) - short])} ms")
    files = sum(1 for _ in (root / "rollout_summaries").iterdir())
    print(f"summaries in workspace: {files}")
    print(f"first offline run + approve: {setup * 1000:.0f} ms")
    print(f"no-change phase2 run (median of {args.repeat}): {med * 1000:.1f} ms")
    print(f"one `git status --porcelain` (ideal, median): {ideal * 1000:.1f} ms")
    print(f"ratio no-change run / git status: {med / ideal:.1f}x")
    emit(
        "phase2",
        {
            "noop_ms": Figure(round(med * 1000, 2), "ms"),
            "noop_vs_git_status": Figure(round(med / ideal, 3), "x git status"),
            "first_run_and_approve_ms": Figure(round(setup * 1000, 1), "ms"),
            "git_status_ms": Figure(round(ideal * 1000, 2), "ms", "none"),
        },
    )
    ctx.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
