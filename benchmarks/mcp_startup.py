"""Start-up of ``memtui mcp`` against a bare server of the same MCP SDK: seconds from spawn to the ``initialize``
answer and to the ``tools/list`` answer.

    .venv/bin/python benchmarks/mcp_startup.py [--repeat 9]

Each run spawns ``python -m memtui mcp`` on a throwaway MEMTUI_HOME and, alternately, a bare ``MCPServer`` with one
trivial tool run the same way (same interpreter, the SDK's stdio transport), writes ``initialize``, then
``notifications/initialized`` and ``tools/list``, as an agent does before its first model request, and times both
answers. Printed: the medians, memtui's difference to the bare server, and what the imports alone cost (a bare
interpreter, ``mcp_types``, the whole ``mcp`` package, memtui's server and its stdlib front), measured in the same
run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from figures import Figure, code_root, emit

code_root()  # and the spawned servers: compare.py puts the measured code on their PYTHONPATH
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer(name="bare")
@server.tool()
def echo(text: str) -> str:
    return text
server.run("stdio")
"""
IMPORTS = {
    "bare interpreter": "pass",
    "mcp_types (the SDK's types alone)": "import mcp_types",
    "mcp (the package: types, client, server)": "import mcp",
    "memtui.mcp.server (SDK + memtui's read path)": "import memtui.mcp.server",
    "memtui.mcp.front (what answers first)": "import memtui.mcp.front; memtui.mcp.front.load_handshake()",
}


def time_server(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the initialize answer, seconds to the tools/list answer) from spawn."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    init = json.loads(proc.stdout.readline())
    at_init = time.perf_counter() - started
    proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(TOOLS_LIST) + "\n").encode())
    proc.stdin.flush()
    listed = json.loads(proc.stdout.readline())
    at_list = time.perf_counter() - started
    proc.stdin.close()
    proc.wait(timeout=120)
    assert init.get("id") == 1 and "result" in init, init
    assert listed.get("id") == 2 and listed["result"]["tools"], listed
    return at_init, at_list


def time_python(code: str, env: dict[str, str]) -> float:
    """Seconds to run ``code`` in a fresh interpreter; NaN when it fails (a module an older commit lacks)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started if done.returncode == 0 else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    memtui: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMTUI_HOME": os.path.join(tmp, "home"), "HOME": tmp}
        for _ in range(args.repeat):  # alternated, so a change in the machine's load hits both alike
            memtui.append(time_server([sys.executable, "-m", "memtui", "mcp"], env))
            bare.append(time_server([sys.executable, "-c", BARE_SERVER], env))
        imports = {
            name: statistics.median(time_python(code, env) for _ in range(args.repeat))
            for name, code in IMPORTS.items()
        }
    m_init, m_list = (statistics.median(t[i] for t in memtui) for i in (0, 1))
    b_init, b_list = (statistics.median(t[i] for t in bare) for i in (0, 1))
    print(f"medians of {args.repeat} runs each, alternated:")
    print(f"  memtui mcp:  initialize {m_init:.3f} s, tools/list {m_list:.3f} s")
    print(f"  bare server: initialize {b_init:.3f} s, tools/list {b_list:.3f} s")
    print(f"  memtui minus bare: initialize {m_init - b_init:+.3f} s, tools/list {m_list - b_list:+.3f} s")
    print("imports alone (python -c, medians):")
    for name, seconds in imports.items():
        print(f"  {name}: {seconds:.3f} s")
    print(f"load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores")
    emit(
        "mcp_startup",
        {
            "initialize_s": Figure(round(m_init, 4), "s"),
            "tools_list_s": Figure(round(m_list, 4), "s"),
            "bare_tools_list_s": Figure(round(b_list, 4), "s", "none"),
            **(
                {"import_front_s": Figure(round(front, 4), "s")}
                if not math.isnan(front := imports["memtui.mcp.front (what answers first)"])
                else {}
            ),
        },
    )


if __name__ == "__main__":
    main()
