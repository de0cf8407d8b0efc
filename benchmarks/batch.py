"""Bulk Phase 1 through the Batch API: memtui's own time to prepare and to collect 10,000 rollouts.

The loopback Files/Batches server (``tests.support.batch_server``) runs in its own process, so its JSON work is not
charged to memtui; it completes the batch at the first poll. "prepare" is ``memtui phase1 --batch`` end to end
(claim 10,000 jobs with a batch lease, filter, redact, budget, write the JSONL; the upload to the loopback
server is timed apart); "collect" is
``memtui batch collect`` (poll, download, validate each line with the synchronous path's code, re-filter each rollout
to check its hash, redact, store). Beside them: the synchronous path's own overhead per rollout (a zero-latency
Chat Completions server, concurrency 8), measured on a sample in the same run and scaled to the same count.

    .venv/bin/python benchmarks/batch.py [--rollouts 10000] [--sync-sample 300]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from figures import Figure, code_root, emit
from phase1 import VALID, write_rollout

code_root()  # the code measured, and the loopback servers in its tests/support

TARGET_S = 30.0


def serve_batches(conn: Connection, stop: EventType) -> None:
    from tests.support.batch_server import BatchServer

    with BatchServer() as server:
        conn.send(server.base_url)
        stop.wait()


def _reply(body: dict) -> object:
    from tests.support.chat_server import reply_json

    return reply_json(VALID)


def serve_chat(conn: Connection, stop: EventType) -> None:
    from tests.support.chat_server import ChatServer

    with ChatServer(handler=_reply) as server:
        conn.send(server.base_url)
        stop.wait()


def in_child(target) -> tuple[str, EventType, multiprocessing.Process]:
    parent, child = multiprocessing.Pipe()
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=target, args=(child, stop), daemon=True)
    proc.start()
    return parent.recv(), stop, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rollouts", type=int, default=10_000)
    ap.add_argument("--sync-sample", type=int, default=300)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-batch-"))
    for name in ("MEMTUI_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        os.environ[name] = str(tmp / name.lower())
        Path(os.environ[name]).mkdir(parents=True)
    from memtui.services.batch import ops
    from memtui.services.context import open_context
    from memtui.services.ingest import run_ingest
    from memtui.services.phase1.run import run_phase1

    rng = random.Random(13)
    codex = Path(os.environ["CODEX_HOME"])
    t0 = time.perf_counter()
    raw = sum(write_rollout(codex, i, rng)[1].stat().st_size for i in range(args.rollouts))
    print(
        f"batch benchmark: {args.rollouts} rollouts, {raw / 2**20:.0f} MiB ({time.perf_counter() - t0:.0f} s to write)"
    )

    url, stop, proc = in_child(serve_batches)
    try:
        os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-bench", MEMTUI_PROVIDER="openai")
        ctx = open_context()
        run_ingest(ctx)
        cpu: list[float] = []
        real_prepare = ops.prepare

        def prepare(*a, **kw):  # type: ignore[no-untyped-def]
            """The real one, with its CPU time: this process's and that of the worker processes it waited for."""
            before = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                return real_prepare(*a, **kw)
            finally:
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                children = after.ru_utime + after.ru_stime - before[1].ru_utime - before[1].ru_stime
                cpu.append(time.process_time() - before[0] + children)

        ops.prepare = prepare
        started = time.perf_counter()
        run = ops.submit(ctx, all_threads=True)
        prepare_s = time.perf_counter() - started
        started = time.perf_counter()
        collected = ops.collect(ctx)
        collect_s = time.perf_counter() - started
    finally:
        stop.set()
        proc.join(5)

    # The synchronous path on a sample of the same rollouts, in a fresh home: memtui's overhead per rollout.
    os.environ["MEMTUI_HOME"] = str(tmp / "sync-home")
    url, stop, proc = in_child(serve_chat)
    try:
        os.environ["OPENAI_BASE_URL"] = url
        sync_ctx = open_context({"concurrency": 8})
        run_ingest(sync_ctx)
        started = time.perf_counter()
        sync = run_phase1(sync_ctx, all_threads=True, limit=args.sync_sample, concurrency=8)
        sync_s = time.perf_counter() - started
    finally:
        stop.set()
        proc.join(5)
    per_sync = sync_s / max(sync.claimed, 1)

    p = run.prepared
    print(f"  prepared          {p.requests} requests in {len(p.files)} file(s), {p.bytes / 2**20:.0f} MiB")
    print(
        f"  prepare           {p.seconds:.1f} s  memtui's own: claim, filter, redact, budget, write "
        f"(+ {prepare_s - p.seconds:.1f} s uploading {p.bytes / 2**20:.0f} MiB to the loopback server and creating)"
    )
    print(
        f"  prepare CPU       {cpu[0]:.1f} s  (this process and its worker processes; the steadier figure under load)"
    )
    print(
        f"  collect           {collect_s:.1f} s  ({collected.succeeded} stored, {collected.failed} failed, "
        f"{collected.stale} stale)"
    )
    print(
        f"  synchronous path  {per_sync * 1000:.1f} ms of memtui overhead per rollout ({sync.claimed} sampled, "
        f"zero-latency model, concurrency 8) = {per_sync * args.rollouts:.1f} s for {args.rollouts}"
    )
    print(
        f"  ratio             batch prepare+collect / synchronous overhead = "
        f"{(p.seconds + collect_s) / (per_sync * args.rollouts):.2f}"
    )
    print(f"  load average      {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores")
    shutil.rmtree(tmp, ignore_errors=True)
    ok = collected.succeeded == args.rollouts and p.seconds < TARGET_S and collect_s < TARGET_S
    print(f"  {'PASS' if ok else 'FAIL'} (target: each under {TARGET_S:.0f} s on 2 cores, every result stored)")
    emit(
        "batch",
        {
            "prepare_s": Figure(p.seconds, "s"),
            "prepare_cpu_s": Figure(round(cpu[0], 3), "s"),
            "collect_s": Figure(round(collect_s, 3), "s"),
            "sync_overhead_per_rollout": Figure(round(per_sync * 1000, 2), "ms"),
            "upload_s": Figure(round(prepare_s - p.seconds, 3), "s", "none"),  # the loopback server's, not memtui's
            "stored": Figure(collected.succeeded, "results", "higher"),
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
