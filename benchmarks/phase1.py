"""Phase 1 throughput against a model with a fixed latency.

200 synthetic Codex rollouts, the loopback Chat Completions server answering every request after 200 ms, 8
concurrent jobs. The ideal wall time is N / concurrency × latency; everything above it is memtui's overhead
(claims, filtering, redaction, truncation, HTTP, finalize). Also reports how many bytes reach the model per rollout
against the raw rollout size.

    .venv/bin/python benchmarks/phase1.py [--rollouts 200] [--concurrency 8] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from figures import Figure, code_root, emit, load

code_root()  # the code measured, and the loopback server in its tests/support

VALID = {
    "rollout_summary": "# Benchmark rollout\n\nRollout context: bench\n",
    "rollout_slug": "bench",
    "raw_memory": "---\ndescription: bench\ntask: bench\ntask_group: bench\ntask_outcome: success\ncwd: /w\n"
    "keywords: bench\n---\n- a fact\n",
}
WORDS = [
    "checkout",
    "test",
    "fails",
    "timezone",
    "assertion",
    "pnpm",
    "vitest",
    "config",
    "module",
    "import",
    "error",
    "retry",
    "build",
]


def write_rollout(root: Path, i: int, rng: random.Random) -> tuple[str, Path]:
    """A plausible rollout: user turns, shell calls with code-heavy outputs, reasoning, events, an answer."""
    thread_id = f"019e0a1b-2c3d-7e4f-8a9b-{i:012d}"
    path = root / "sessions" / "2026" / "07" / "10" / f"rollout-2026-07-10T05-00-00-{thread_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = "2026-07-10T05:00:00.000Z"
    lines = [{"timestamp": ts, "type": "session_meta", "payload": {"id": thread_id, "cwd": "/w/shop", "source": "cli"}}]

    def item(payload: dict) -> None:
        lines.append({"timestamp": ts, "type": "response_item", "payload": payload})

    for turn in range(rng.randint(3, 8)):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60)))
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        for c in range(rng.randint(2, 6)):
            cid = f"call_{turn}_{c}"
            item(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": "pnpm test"}),
                    "call_id": cid,
                }
            )
            code = "\n".join(
                f"  at fn{rng.randint(0, 999)} (src/mod{rng.randint(0, 99)}.ts:{rng.randint(1, 900)}:{rng.randint(1, 80)})"
                for _ in range(rng.randint(5, 40))
            )
            item(
                {"type": "function_call_output", "call_id": cid, "output": f"FAIL src/x.test.ts\n{code}\nexit code: 1"}
            )
        item({"type": "reasoning", "summary": [], "encrypted_content": "x" * rng.randint(200, 2000)})
        lines.append({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count", "info": None}})
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text[::-1]}]})
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    return thread_id, path


CHAT_SERVER = ("tests.support.chat_server", "memtui.testing.chat_server")  # where it lived in older commits


def _reply(body: dict) -> object:
    return load(*CHAT_SERVER).reply_json(VALID)


def serve(latency: float, conn: Connection, stop: EventType) -> None:
    """The loopback Chat Completions server with a fixed latency, in a child process."""
    server = load(*CHAT_SERVER).ChatServer(
        latency=latency, handler=_reply
    )  # it sets TCP_NODELAY, as a real server does
    with server:
        conn.send(server.base_url)
        stop.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rollouts", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-phase1-"))
    for name in ("MEMTUI_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        os.environ[name] = str(tmp / name.lower())
        Path(os.environ[name]).mkdir(parents=True)

    open_context = load("memtui.services.context", "memtui.context").open_context
    run_phase1 = load("memtui.services.phase1.run", "memtui.phase1.run").run_phase1

    # The HTTP client's modules are loaded before the timed run, as in any process that has called a model once;
    # their one-off cost is printed apart (a run imports nothing else: ``imported during the run`` counts it).
    t0 = time.perf_counter()
    try:
        load("memtui.adapters.llm.backends.openai_http", "memtui.llm.backends.openai_http")
    except ImportError:
        pass
    client_import = time.perf_counter() - t0

    rng = random.Random(7)
    codex = Path(os.environ["CODEX_HOME"])
    rollouts = [write_rollout(codex, i, rng) for i in range(args.rollouts)]
    raw_bytes = sum(p.stat().st_size for _, p in rollouts)

    # The model server runs in its own process, as a real one would: its HTTP and JSON work must not be
    # charged to memtui through the GIL.
    parent, child = multiprocessing.Pipe()
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=serve, args=(args.latency, child, stop), daemon=True)
    proc.start()
    base_url = parent.recv()
    try:
        os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-bench", MEMTUI_PROVIDER="openai")
        ctx = open_context({"concurrency": args.concurrency})
        try:
            load("memtui.services.ingest", "memtui.ingest").run_ingest(ctx)
            how = "ingest"
        except ImportError:  # before ingest existed: index the files directly
            for thread_id, path in rollouts:
                ctx.conn.execute(
                    "INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, preview, ingested_at)"
                    " VALUES (?, 'codex', ?, '/w/shop', 'cli', ?, 'bench', ?)",
                    (thread_id, str(path), int(path.stat().st_mtime), int(time.time())),
                )
            how = "direct insert"
        threads = ctx.conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0]
        before = set(sys.modules)
        cpu0, started = time.process_time(), time.perf_counter()
        summary = run_phase1(ctx, all_threads=True, concurrency=args.concurrency)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
        imported = sorted(set(sys.modules) - before)
        requests = summary.succeeded + summary.failed
    finally:
        stop.set()
        proc.join(5)

    ideal = args.rollouts / args.concurrency * args.latency
    ratio = wall / ideal
    print(
        f"phase1 benchmark: {args.rollouts} rollouts ({threads} threads via {how}), concurrency {args.concurrency}, "
        f"model latency {args.latency * 1000:.0f} ms"
    )
    print(
        f"  outcomes          {summary.succeeded} succeeded, {summary.failed} failed, {requests} model calls; skipped {summary.skipped}"
    )
    print(f"  wall time         {wall:.2f} s   ideal {ideal:.2f} s   ratio {ratio:.3f}  (target <= 1.10)")
    print(
        f"  memtui's CPU      {cpu:.2f} s, {cpu / args.rollouts * 1000:.2f} ms per rollout (the server's not counted)"
    )
    print(f"  imported during the run {len(imported)} modules{': ' + ', '.join(imported) if imported else ''}")
    print(f"  HTTP client import {client_import:.2f} s, before the timed run")
    print(f"  raw rollout size  {raw_bytes / args.rollouts / 1024:.1f} KiB per rollout")
    print(
        f"  sent to the model {summary.sent_bytes / args.rollouts / 1024:.1f} KiB per rollout "
        f"({summary.sent_bytes / max(raw_bytes, 1):.1%} of raw; system prompt not counted)"
    )
    print(f"  estimated tokens  {summary.estimated_tokens / args.rollouts:.0f} per rollout")
    ok = summary.succeeded == args.rollouts and ratio <= 1.10 and not imported
    print(f"  {'PASS' if ok else 'FAIL'}")
    emit(
        "phase1",
        {
            "wall_ratio": Figure(round(ratio, 4), "x ideal"),
            "cpu_per_rollout": Figure(round(cpu / args.rollouts * 1000, 3), "ms"),
            "sent_per_rollout": Figure(round(summary.sent_bytes / args.rollouts / 1024, 2), "KiB", "none"),
            "imported_during_run": Figure(len(imported), "modules"),
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
