"""The HTTP client's own cost per model request, against a bare ``httpx`` call to the same loopback server.

One Chat Completions server in a child process answers at once (no model latency), so each request's time is the
client's work plus the loopback round trip. Three ways send the same Phase 1-sized body (the stage-one system
prompt, a 23 KiB user message, the strict JSON schema) over one reused client and connection pool, in alternating
rounds so a noisy machine weighs on each alike:

- ``bare``: ``httpx`` (the ``httpx2`` the SDK uses) posting the pre-built body and ``json.loads`` of the reply;
- ``sdk``: ``openai``'s ``chat.completions.create(**body)`` (its request transform, model construction, retries off);
- ``memtui``: the backend's ``structured`` call (the output ladder, the client's ``post`` of the pre-encoded body,
  the reply decoded by ``msgspec`` and validated).

Printed: CPU time and wall time per request for each, and each one's excess over the bare call.

    .venv/bin/python benchmarks/http_client.py [--requests 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from figures import Figure, code_root, emit

code_root()

VALID = {
    "rollout_summary": "# Benchmark rollout\n\nRollout context: bench\n",
    "rollout_slug": "bench",
    "raw_memory": "---\ndescription: bench\ntask: bench\ntask_group: bench\ntask_outcome: success\ncwd: /w\n"
    "keywords: bench\n---\n- a fact\n",
}


def _reply(body: dict) -> object:
    from tests.support.chat_server import reply_json

    return reply_json(VALID)


def serve(conn: Connection, stop: EventType) -> None:
    from tests.support.chat_server import ChatServer

    with ChatServer(latency=0.0, handler=_reply) as server:
        conn.send(server.base_url)
        stop.wait()


def user_message(size: int = 23 * 1024) -> str:
    line = "[item 12] tool_output exec_command: FAIL src/x.test.ts at fn42 (src/mod7.ts:120:33) exit code: 1\n"
    return (line * (size // len(line) + 1))[:size]


async def measure(base_url: str, requests: int, rounds: int) -> dict[str, tuple[list[float], list[float]]]:
    import httpx2
    import openai

    from memtui.adapters.llm.backends.openai_http import OpenAIHttpBackend
    from memtui.adapters.llm.structured import request_body
    from memtui.core.settings import load_settings
    from memtui.services.phase1.extractor import StageOneOutput
    from memtui.services.phase1.prompt import stage_one_system_prompt

    settings = load_settings().settings
    system, user = stage_one_system_prompt(settings), user_message()
    body = request_body(settings.extract_model, system, user, StageOneOutput, "stage_one_output")
    bare = httpx2.AsyncClient(base_url=base_url, headers={"Authorization": "Bearer sk-bench"}, timeout=60)
    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0, timeout=60)
    backend = OpenAIHttpBackend(settings)

    async def one_bare() -> None:
        r = await bare.post("/chat/completions", content=json.dumps(body), headers={"Content-Type": "application/json"})
        reply = json.loads(r.content)
        assert json.loads(reply["choices"][0]["message"]["content"])["rollout_slug"] == "bench"

    async def one_sdk() -> None:
        r = await sdk.chat.completions.create(**body)
        assert json.loads(r.choices[0].message.content or "")["rollout_slug"] == "bench"

    async def one_memtui() -> None:
        r = await backend.structured(
            model=None, system=system, user=user, output_model=StageOneOutput, schema_name="stage_one_output"
        )
        assert r.output.rollout_slug == "bench"

    ways = {"bare": one_bare, "sdk": one_sdk, "memtui": one_memtui}
    for fn in ways.values():  # connect, load what a first call loads
        for _ in range(5):
            await fn()
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ways}
    for _ in range(rounds):
        for name, fn in ways.items():
            cpu0, t0 = time.process_time(), time.perf_counter()
            for _ in range(requests):
                await fn()
            out[name][0].append((time.process_time() - cpu0) / requests * 1000)
            out[name][1].append((time.perf_counter() - t0) / requests * 1000)
    await bare.aclose()
    await sdk.close()
    await backend.aclose()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-http-"))
    for name in ("MEMTUI_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        os.environ[name] = str(tmp / name.lower())
        Path(os.environ[name]).mkdir(parents=True)
    parent, child = multiprocessing.Pipe()
    stop = multiprocessing.Event()
    proc = multiprocessing.Process(target=serve, args=(child, stop), daemon=True)
    proc.start()
    base_url = parent.recv()
    os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-bench", MEMTUI_PROVIDER="openai")
    try:
        results = asyncio.run(measure(base_url, args.requests, args.rounds))
    finally:
        stop.set()
        proc.join(5)
    cpu = {k: statistics.median(v[0]) for k, v in results.items()}
    wall = {k: statistics.median(v[1]) for k, v in results.items()}
    print(
        f"http client benchmark: {args.requests} requests x {args.rounds} rounds per way, one reused client each, "
        f"loopback server answering at once (load average {os.getloadavg()[0]:.1f})"
    )
    print(f"  {'way':8} {'CPU ms/request':>15} {'wall ms/request':>16} {'CPU over bare':>14}")
    for k in results:
        print(f"  {k:8} {cpu[k]:15.3f} {wall[k]:16.3f} {cpu[k] - cpu['bare']:+14.3f}")
    print(
        f"  memtui's call costs {cpu['memtui'] / cpu['bare']:.2f}x the bare one; "
        f"the typed create alone {cpu['sdk'] / cpu['bare']:.2f}x"
    )
    emit(
        "http_client",
        {
            "bare_cpu_per_request": Figure(round(cpu["bare"], 3), "ms"),
            "sdk_cpu_per_request": Figure(round(cpu["sdk"], 3), "ms"),
            "memtui_cpu_per_request": Figure(round(cpu["memtui"], 3), "ms"),
            "memtui_over_bare": Figure(round(cpu["memtui"] / cpu["bare"], 3), "x bare"),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
