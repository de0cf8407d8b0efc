"""Record what the SDK server answers at start-up, per handshake protocol version: ``handshake.json``, which
``memtui.mcp.front`` answers from before the SDK has loaded.

    python -m memtui.mcp.describe --write     # after changing a tool, a resource, the instructions or the SDK

``tests/test_mcp_server.py`` checks the file still equals ``describe(build_server(...))``, so the front's answers
cannot drift from the SDK's.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import tempfile
import threading
from importlib.metadata import version as dist_version
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from memtui.mcp.front import ENVELOPE, HANDSHAKE_FILE, LISTEN, LISTS, VERSION_KEY, Front
from memtui.mcp.server import build_server, serve_lines

CLIENT_INFO = {"name": "memtui-describe", "version": "0"}
LISTEN_FOR = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}  # as Claude Code


def envelope(version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """The params of a stateless (2026-era) request with nothing but its envelope."""
    return {
        "_meta": {
            VERSION_KEY: version,
            f"{ENVELOPE}clientInfo": CLIENT_INFO,
            f"{ENVELOPE}clientCapabilities": capabilities,
        }
    }


def _answers(server: MCPServer, version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    """One connection to ``server``: ``initialize`` at a handshake ``version``, or ``server/discover`` at a
    stateless one, then each start-up list, one at a time."""
    out: queue.Queue[bytes] = queue.Queue()
    front = Front({}, out.put)
    front.hand_off()  # nothing answered here: every line goes to the SDK server
    done = threading.Thread(target=anyio.run, args=(serve_lines, server, front, out.put), daemon=True)
    done.start()

    def ask(n: int, method: str, params: dict[str, Any] | None = None) -> Any:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
        if params is not None:
            request["params"] = params
        front.receive(json.dumps(request).encode() + b"\n")
        reply = json.loads(out.get(timeout=60))
        if reply.get("id") != n or "result" not in reply:
            raise RuntimeError(f"{method} at {version}: {reply}")
        return reply["result"]

    if version in MODERN_PROTOCOL_VERSIONS:
        params: dict[str, Any] | None = envelope(version, capabilities)
        answers = {"server/discover": ask(0, "server/discover", params)}
    else:
        params = None
        init = ask(
            0, "initialize", {"protocolVersion": version, "capabilities": capabilities, "clientInfo": CLIENT_INFO}
        )
        front.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        answers = {"initialize": {k: v for k, v in init.items() if k != "protocolVersion"}}
    for n, method in enumerate(LISTS, 1):
        if method == "ping" and params is not None:
            continue  # the stateless protocol has no ping
        answers[method] = ask(n, method, params)
    if params is not None:  # the first frame of a listen stream (the stream stays open until the connection ends)
        listen = {
            "jsonrpc": "2.0",
            "id": "listen:0",
            "method": LISTEN,
            "params": {**params, "notifications": LISTEN_FOR},
        }
        front.receive(json.dumps(listen).encode() + b"\n")
        answers[LISTEN] = {"request": LISTEN_FOR, "acknowledgement": json.loads(out.get(timeout=60))}
    front.close()
    done.join(timeout=60)
    return answers


def describe(server: MCPServer, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``server`` answers at start-up, per protocol version, to a client declaring ``capabilities``."""
    versions = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
    return {
        "sdk": f"mcp {dist_version('mcp')}",
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest_handshake": LATEST_HANDSHAKE_VERSION,
        "modern_versions": list(MODERN_PROTOCOL_VERSIONS),
        "answers": {v: _answers(server, v, capabilities or {}) for v in versions},
    }


def render(description: dict[str, Any]) -> str:
    return json.dumps(description, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {HANDSHAKE_FILE.name} (else print it)")
    args = parser.parse_args()
    from memtui.services.context import open_context

    with tempfile.TemporaryDirectory() as home:  # the lists depend on no memory: a throwaway home
        os.environ["MEMTUI_HOME"] = home
        ctx = open_context()
        try:
            text = render(describe(build_server(ctx)))
        finally:
            ctx.close()
    if args.write:
        HANDSHAKE_FILE.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
