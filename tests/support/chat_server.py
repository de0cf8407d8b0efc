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
    error_type: str = "scripted"


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


# What llama-cpp-python's server (0.3.x, ``llama_cpp/server/app.py``) answers to ``response_format: json_schema``,
# captured from the real server: its request validation error, wrapped in an HTTP 500.
# How often ``serve_forever`` looks for a shutdown request: ``stop`` waits up to this long (the default, 0.5 s, was
# half a second at the end of every test that runs a server).
SHUTDOWN_POLL = 0.02

LLAMA_CPP_JSON_SCHEMA_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input "
    "should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}"
    '\n\n  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n    POST /v1/chat/completions'
)

# Reply shapes of a real small local model (SmolLM2-135M-Instruct on llama-cpp-python): raw control characters
# inside JSON strings, and the three keys filled with junk.
SMALL_MODEL_CONTROL_CHAR = (
    '{"rollout_summary": "# Fixed CI\n\nRollout context:\tshop", "rollout_slug": "fix-ci", "raw_memory": "---\n'
    "description: CI needs TZ=UTC\ntask: fix ci\ntask_group: shop\ntask_outcome: success\ncwd: /work/shop\n"
    'keywords: tz\n---\n### Task 1: fix ci\n- run the tests with TZ=UTC\x01"}'
)  # raw newlines, a tab and a U+0001 inside the strings, as the model wrote them
SMALL_MODEL_JUNK = {"rollout_summary": "{ {", "rollout_slug": "", "raw_memory": "</text-document>"}


def reply_llama_cpp_json_schema_refusal() -> Reply:
    """The llama-cpp-python server's answer to a ``json_schema`` response format."""
    return Reply(status=500, error=LLAMA_CPP_JSON_SCHEMA_ERROR, error_type="internal_server_error")


Handler = Callable[[dict[str, Any]], Reply]


class ChatServer:
    """Threaded loopback server. ``base_url`` ends in ``/v1`` as the openai client expects."""

    def __init__(
        self,
        default: Reply | None = None,
        handler: Handler | None = None,
        latency: float = 0.0,
        *,
        refuse_json_schema: bool = False,
    ):
        """``refuse_json_schema``: answer every ``json_schema`` request as llama-cpp-python's server does (before
        any scripted reply is used), and take ``json_object`` with a ``schema``."""
        self.refuse_json_schema = refuse_json_schema
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
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, name="chat-server", daemon=True
        )

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
            fmt = body.get("response_format") or {}
            if self.refuse_json_schema and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
                return reply_llama_cpp_json_schema_refusal()
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
            err = {"error": {"message": reply.error or "error", "type": reply.error_type, "code": str(reply.status)}}
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
