"""The first answers of ``memtui mcp``, given before the MCP SDK has loaded.

Agents do not wait long for an MCP server: a tool list that arrives after the agent's first model request is missing
from that turn. Importing the SDK takes most of a second on a quiet machine and several under load, so this module
(standard library only) takes the wire at once: it answers the handshake-era ``initialize`` and, after it, the
start-up lists (``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list``) and ``ping``
from ``handshake.json``, the SDK server's own answers recorded per protocol version (``memtui.mcp.describe`` writes
it; a test checks it still equals what the SDK answers). Everything else, in order, goes to the real SDK server
once it is loaded, starting with a copy of the client's ``initialize`` under a private id (its answer is dropped),
so the SDK negotiates the same version and knows the client's capabilities; from then on the SDK answers everything.
A request the front cannot answer exactly as the SDK would (an unknown version era, params it does not expect) is
simply left to the SDK.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")
REPLAY_ID = "memtui-front-initialize"  # the id of the SDK's copy of the client's initialize
LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping")
EOF = None  # what the inbox yields when the client closed its end
ENVELOPE = "io.modelcontextprotocol/"  # the _meta keys of a stateless (2026-era) request
VERSION_KEY = f"{ENVELOPE}protocolVersion"
SUBSCRIPTION_KEY = f"{ENVELOPE}subscriptionId"
LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def load_handshake() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(HANDSHAKE_FILE.read_text(encoding="utf-8"))
    return data


def negotiate(handshake: dict[str, Any], requested: object) -> str:
    """The version the SDK answers an ``initialize`` with: the client's when it is a handshake version, else the
    newest handshake version (``ServerRunner._negotiate_initialize``)."""
    versions: list[str] = handshake["handshake_versions"]
    return requested if isinstance(requested, str) and requested in versions else handshake["latest_handshake"]


def _is_request(msg: object) -> bool:
    return (
        isinstance(msg, dict)
        and msg.get("jsonrpc") == "2.0"
        and isinstance(msg.get("method"), str)
        and isinstance(msg.get("id"), (str, int))
        and not isinstance(msg.get("id"), bool)
    )


def _implementation(info: object) -> bool:
    return isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)


def _plain_initialize(params: object) -> bool:
    """Params the SDK accepts as they are (else it answers an error, which is the SDK's to give)."""
    return (
        isinstance(params, dict)
        and isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and _implementation(params.get("clientInfo"))
        and not any(str(k).startswith(ENVELOPE) for k in (params.get("_meta") or {}))
    )


def _bare(params: object) -> bool:
    """No params, or only a progress token (which a list answered at once never uses), as Codex sends."""
    if params is None or params == {}:
        return True
    return isinstance(params, dict) and set(params) == {"_meta"} and _only(params["_meta"], {"progressToken"})


def _only(meta: object, keys: set[str]) -> bool:
    return isinstance(meta, dict) and set(meta) <= keys


def _envelope(params: object, versions: list[str], extra: frozenset[str] = frozenset()) -> str | None:
    """The version of a stateless (2026-era) request that carries nothing but its envelope (and the ``extra``
    params), as Claude Code sends ``server/discover`` and the lists; None for anything else."""
    if not (isinstance(params, dict) and set(params) == {"_meta", *extra}):
        return None
    meta = params["_meta"]
    if not _only(meta, {VERSION_KEY, f"{ENVELOPE}clientInfo", f"{ENVELOPE}clientCapabilities", "progressToken"}):
        return None
    version = meta.get(VERSION_KEY)
    if version not in versions or not _implementation(meta.get(f"{ENVELOPE}clientInfo")):
        return None
    if not isinstance(meta.get(f"{ENVELOPE}clientCapabilities", {}), dict):
        return None
    return str(version)


class Front:
    """Answers what it can from the recorded handshake until the SDK server takes over (``hand_off``)."""

    def __init__(self, handshake: dict[str, Any], write: Callable[[bytes], None]) -> None:
        self.handshake = handshake
        self._write = write
        self._lock = threading.Lock()  # one decision at a time: answer here, or queue for the SDK
        self._handed_off = False
        self._passive = False  # the client began with something else: the SDK decides everything
        self.version: str | None = None  # negotiated by the front's first answer
        self.first_answer: dict[str, Any] | None = None  # what the SDK must answer to the replayed copy
        self.inbox: queue.Queue[bytes | None] = queue.Queue()  # the SDK's input, in the wire's order
        self._forward_too = False  # the line answered goes to the SDK as well (a listen stream it then serves)
        self._acknowledged: set[str] = set()  # listen streams the front acknowledged: the SDK's ack is dropped

    def receive(self, line: bytes) -> None:
        """One line from the client: answered now, or queued for the SDK server."""
        with self._lock:
            if not self._handed_off and not self._passive and line.strip():
                reply = self._answer(line)
                if reply is not None:
                    self._write(reply)
                    if not self._forward_too:
                        return
                    self._forward_too = False
            self.inbox.put(line)

    def close(self) -> None:
        self.inbox.put(EOF)

    def hand_off(self) -> None:
        """From now on every line goes to the SDK server (which reads ``inbox``)."""
        with self._lock:
            self._handed_off = True

    def _answer(self, line: bytes) -> bytes | None:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None  # the SDK answers a parse error its own way
        if not _is_request(msg):
            if self.version is None:  # whatever comes first decides the SDK's era: leave it all to the SDK
                self._passive = True
            return None
        assert isinstance(msg, dict)
        method, params = msg["method"], msg.get("params")
        modern: list[str] = self.handshake["modern_versions"]
        if self.version is None:
            if method == "initialize" and isinstance(params, dict) and _plain_initialize(params):
                version = negotiate(self.handshake, params["protocolVersion"])
                result = {**self.handshake["answers"][version]["initialize"], "protocolVersion": version}
            elif method == "server/discover" and (found := _envelope(params, modern)) is not None:
                version, result = found, self.handshake["answers"][found]["server/discover"]
            else:
                self._passive = True
                return None
            self.version, self.first_answer = version, result
            self.inbox.put(json.dumps({**msg, "id": REPLAY_ID}).encode() + b"\n")  # the SDK's era and client
            return _reply(msg["id"], result)
        answers = self.handshake["answers"][self.version]
        if self.version in modern:
            if method == LISTEN:
                return self._acknowledge(msg, answers[LISTEN])
            if method in answers and method != "initialize" and _envelope(params, [self.version]) is not None:
                return _reply(msg["id"], answers[method])
        elif method in LISTS and _bare(params):
            return _reply(msg["id"], answers[method])
        return None

    def _acknowledge(self, msg: dict[str, Any], recorded: dict[str, Any]) -> bytes | None:
        """``subscriptions/listen`` (Claude Code waits for its acknowledgement before listing anything): the
        acknowledgement the SDK sends first on the stream, now; the request itself goes to the SDK, which serves the
        stream from then on (its own acknowledgement is dropped)."""
        params = msg.get("params")
        if _envelope(params, [str(self.version)], frozenset({"notifications"})) is None:
            return None
        assert isinstance(params, dict)
        if params["notifications"] != recorded["request"] or not isinstance(msg["id"], str):
            return None
        ack = recorded["acknowledgement"]
        ack = {**ack, "params": {**ack["params"], "_meta": {**ack["params"]["_meta"], SUBSCRIPTION_KEY: msg["id"]}}}
        self._acknowledged.add(msg["id"])
        self._forward_too = True
        return json.dumps(ack, separators=(",", ":")).encode() + b"\n"

    def sdk_output(self, line: bytes) -> bytes | None:
        """A line the SDK server writes, or None for its answer to the front's copy of the first request and its
        acknowledgement of a listen stream the front acknowledged."""
        if self._acknowledged and ACKNOWLEDGED.encode() in line:
            msg = json.loads(line)
            sub = msg.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_KEY) if isinstance(msg, dict) else None
            if msg.get("method") == ACKNOWLEDGED and sub in self._acknowledged:
                self._acknowledged.discard(sub)
                return None
        if REPLAY_ID.encode() not in line:
            return line
        msg = json.loads(line)
        if not (isinstance(msg, dict) and msg.get("id") == REPLAY_ID and "method" not in msg):
            return line
        if msg.get("result") != self.first_answer:
            print(
                "memtui mcp: the SDK's first answer differs from memtui/mcp/handshake.json; "
                "run `python -m memtui.mcp.describe --write`",
                file=sys.stderr,
            )
        return None


def _reply(request_id: object, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")).encode() + b"\n"


class Wire:
    """The process's stdin and stdout as the MCP wire, taken before anything else can touch them: fd 0 then reads
    the null device and fd 1 goes to stderr, so stray output of memtui or a child never corrupts a frame (what the
    SDK's ``stdio_server`` does for its own streams)."""

    def __init__(self) -> None:
        self._in: BinaryIO = os.fdopen(os.dup(0), "rb", buffering=0)
        self._out: BinaryIO = os.fdopen(os.dup(1), "wb", buffering=0)
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self._out_lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._out_lock:
            self._out.write(data)

    def read_into(self, front: Front) -> None:
        """Feed every line from the client to ``front`` until the client closes its end (run in a thread)."""
        try:
            buffered = os.fdopen(self._in.fileno(), "rb", closefd=False)
            for line in buffered:
                front.receive(line)
        finally:
            front.close()


def start(wire: Wire | None = None, handshake: dict[str, Any] | None = None) -> tuple[Front, Wire]:
    """Take the wire and start answering in a background thread; the caller loads the SDK server and then runs it
    on ``front.inbox`` (``memtui.mcp.server.serve_behind``)."""
    wire = wire or Wire()
    front = Front(handshake if handshake is not None else load_handshake(), wire.write)
    threading.Thread(target=wire.read_into, args=(front,), name="memtui-mcp-front", daemon=True).start()
    return front, wire
