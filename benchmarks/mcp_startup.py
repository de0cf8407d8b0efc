"""Start-up of ``memtui mcp``: seconds from spawning the server to its answer to ``initialize``.

    .venv/bin/python benchmarks/mcp_startup.py [--repeat 5]

Spawns ``python -m memtui mcp`` on a throwaway MEMTUI_HOME, writes one JSON-RPC ``initialize`` on stdin and times
the reply, as an MCP client does before its start-up timeout. Printed beside it, measured in the same run: a bare
interpreter start, and the imports the full command line would add (every sub-command's module), which the MCP path
no longer loads. Medians of ``--repeat`` runs.
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

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def time_initialize(env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memtui", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait(timeout=30)
    reply = json.loads(line)
    assert reply.get("id") == 1 and "result" in reply, reply
    return elapsed


def time_python(code: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMTUI_HOME": os.path.join(tmp, "home"), "HOME": tmp}
        init = statistics.median(time_initialize(env) for _ in range(args.repeat))
        bare = statistics.median(time_python("pass", env) for _ in range(args.repeat))
        light = statistics.median(
            time_python("from memtui.cli import build_parser; build_parser('mcp')", env) for _ in range(args.repeat)
        )
        full = statistics.median(
            time_python("from memtui.cli import build_parser; build_parser()", env) for _ in range(args.repeat)
        )
    print(f"memtui mcp: initialize answered after {init:.2f} s (median of {args.repeat})")
    print(f"bare interpreter start: {bare:.2f} s ({init / bare:.1f}x of it)")
    print(f"command line for mcp only: {light:.2f} s; with every command (the old path): {full:.2f} s")
    print(f"start-up saved by loading only the mcp command: {full - light:.2f} s ({full / light:.2f}x)")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
