"""A real Chat Completions server on 127.0.0.1 for tests and benchmarks.

It speaks the subset of the OpenAI HTTP API the ``openai`` client uses for
``chat.completions.create`` (non-streaming): JSON bodies, ``choices[0].message`` with content
or ``tool_calls``, ``usage``, and error statuses with an ``error`` object. Replies are scripted
per test (a queue), or computed by a handler function, and every request body is recorded.

    with ChatServer() as server:
        server.script(reply_json({...}), reply_error(429), reply_text("hi", delay=0.2))
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    delay: float = 0.0
    usage: dict[str, int] | None = None
    raw_body: bytes | None = None  # send these bytes verbatim (garbage tests)
    headers: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def reply_text(text: str, delay: float = 0.0, usage: dict[str, int] | None = None) -> Reply:
    return Reply(content=text, delay=delay, usage=usage)


def reply_json(obj: Any, delay: float = 0.0, usage: dict[str, int] | None = None) -> Reply:
    return Reply(content=json.dumps(obj), delay=delay, usage=usage)


def reply_tool_calls(*calls: tuple[str, dict[str, Any]], text: str | None = None, delay: float = 0.0) -> Reply:
    return Reply(
        content=text,
        delay=delay,
        tool_calls=[{"name": name, "arguments": json.dumps(args)} for name, args in calls],
    )


def reply_error(
    status: int, message: str = "scripted error", delay: float = 0.0, retry_after: float | None = None
) -> Reply:
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return Reply(status=status, error=message, delay=delay, headers=headers)


def reply_garbage(body: bytes = b"<html>502 bad gateway</html>", status: int = 200) -> Reply:
    return Reply(status=status, raw_body=body)


Handler = Callable[[dict[str, Any]], Reply]


class ChatServer:
    """Threaded loopback server. ``base_url`` ends in ``/v1`` as the openai client expects."""

    def __init__(self, default: Reply | None = None, handler: Handler | None = None, latency: float = 0.0):
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.default = default or reply_error(500, "no scripted reply left")
        self.handler = handler
        self.latency = latency
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="chat-server", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting ---------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler(body)
        return self.default

    # --- HTTP ----------------------------------------------------------------------------------
    def _render(self, reply: Reply, body: dict[str, Any]) -> tuple[int, bytes]:
        if reply.raw_body is not None:
            return reply.status, reply.raw_body
        if reply.status != 200:
            err = {"error": {"message": reply.error or "error", "type": "scripted", "code": str(reply.status)}}
            return reply.status, json.dumps(err).encode()
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        finish = "stop"
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids)}", "type": "function", "function": call} for call in reply.tool_calls
            ]
            finish = "tool_calls"
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        usage = reply.usage or {
            "prompt_tokens": max(1, prompt_chars // 4),
            "completion_tokens": max(1, len(reply.content or "") // 4),
        }
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        payload = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }
        return 200, json.dumps(payload).encode()

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without this, delayed ACK stalls ~40 ms a reply.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with server._lock:
                    server.raw_requests.append(raw)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error":{"message":"not found"}}', {})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, b'{"error":{"message":"bad json"}}', {})
                    return
                reply = server._next_reply(body)
                delay = reply.delay + server.latency
                if delay:
                    time.sleep(delay)
                status, data = server._render(reply, body)
                try:
                    self._send(status, data, reply.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._send(200, b'{"object":"list","data":[{"id":"test-model","object":"model"}]}', {})

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return _Handler
