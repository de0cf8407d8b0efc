"""Loopback fakes of the model APIs the real agent CLIs call: OpenAI's Responses API (server-sent events, what
Codex speaks) and Anthropic's Messages API (streaming, what Claude Code speaks).

They let the conformance tier drive the real ``codex`` and ``claude`` binaries from the npm registry with nothing
leaving 127.0.0.1. Every request (path, headers, JSON body) is recorded, so a test reads exactly what an agent sent
its model: which instructions, memory and tools it carried. Replies come from a handler (a function of the request
body) or a scripted queue; a reply is plain text, a JSON object (for a structured-output call), or tool calls.

    with ResponsesServer() as api:
        api.script(text("done"))
        ... codex exec with a provider whose base_url is api.base_url ...
        api.requests[0].body["input"]

Only the standard library: the tier runs wherever the suite runs.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHUTDOWN_POLL = 0.02


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    namespace: str = ""  # Responses API: a tool inside a namespace tool (Codex lists an MCP server's tools so)


@dataclass
class AgentReply:
    """One model turn: text, then any tool calls (the agent runs them and calls again)."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    status: int = 200
    error: str | None = None


def text(value: str) -> AgentReply:
    return AgentReply(text=value)


def json_reply(obj: Any) -> AgentReply:
    return AgentReply(text=json.dumps(obj))


def tool(name: str, *, namespace: str = "", **arguments: Any) -> AgentReply:
    return AgentReply(tool_calls=[ToolCall(name, arguments, namespace=namespace)])


def namespaced_tool(namespace: str, name: str, **arguments: Any) -> AgentReply:
    """A call of ``name`` in the namespace tool ``namespace`` (Codex: ``mcp__<server>``, holding its tools)."""
    return AgentReply(tool_calls=[ToolCall(name, arguments, namespace=namespace)])


def error(status: int, message: str = "scripted error") -> AgentReply:
    return AgentReply(status=status, error=message)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def raw(self) -> str:
        """The whole body as text: what a test greps for a planted marker."""
        return json.dumps(self.body, ensure_ascii=False)


Handler = Callable[[Request], AgentReply]


class _Server:
    """The shared half: a threading HTTP server, the request log, the reply queue."""

    kind = "base"

    def __init__(self, handler: Handler | None = None) -> None:
        self.requests: list[Request] = []
        self._queue: deque[AgentReply] = deque()
        self._handler = handler
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.arrived = threading.Condition(self._lock)

    # -- life cycle
    def __enter__(self) -> _Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                outer._get(self)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                reply = outer._record_and_reply(req)
                outer._answer(self, req, reply)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(SHUTDOWN_POLL,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting
    def script(self, *replies: AgentReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def set_handler(self, handler: Handler | None) -> None:
        self._handler = handler

    def model_requests(self) -> list[Request]:
        """The requests that asked the model for a turn (not model lists or telemetry)."""
        with self._lock:
            return [r for r in self.requests if self._is_turn(r)]

    def wait_for(self, predicate: Callable[[list[Request]], bool], timeout: float = 120.0) -> bool:
        """Wait until the request log satisfies ``predicate`` (an event, not a sleep margin)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while not predicate(self.requests):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.arrived.wait(left)
            return True

    def _record_and_reply(self, req: Request) -> AgentReply:
        with self._lock:
            self.requests.append(req)
            self.arrived.notify_all()
            if not self._is_turn(req):
                return AgentReply()
            if self._queue:
                return self._queue.popleft()
        if self._handler is not None:
            return self._handler(req)
        return AgentReply(text="ok")

    def _is_turn(self, req: Request) -> bool:
        raise NotImplementedError

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        self._send_json(h, 200, {"object": "list", "data": []})

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, reply: AgentReply) -> None:
        raise NotImplementedError

    @staticmethod
    def _send_json(h: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _send_sse(h: BaseHTTPRequestHandler, events: Iterator[tuple[str, dict[str, Any]]]) -> None:
        chunks = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.send_header("content-length", str(len(chunks)))
        h.end_headers()
        h.wfile.write(chunks)


class ResponsesServer(_Server):
    """OpenAI's Responses API as Codex calls it: ``POST /v1/responses`` with ``stream: true``, answered with
    ``response.created``, one ``response.output_item.done`` per output item and ``response.completed``."""

    kind = "responses"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _is_turn(self, req: Request) -> bool:
        return req.path.rstrip("/").endswith("/responses")

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        if h.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send_json(h, 200, {"models": [], "object": "list", "data": []})
        else:
            self._send_json(h, 404, {"error": {"message": "not found"}})

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, reply: AgentReply) -> None:
        if not self._is_turn(req):
            self._send_json(h, 200, {})
            return
        if reply.status != 200:
            self._send_json(h, reply.status, {"error": {"message": reply.error, "type": "scripted", "code": None}})
            return
        n = next(self._ids)
        rid = f"resp_{n}"
        items: list[dict[str, Any]] = []
        if reply.text:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for i, call in enumerate(reply.tool_calls):
            item = {
                "type": "function_call",
                "id": f"fc_{n}_{i}",
                "call_id": call.call_id or f"call_{n}_{i}",
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
            if call.namespace:
                item["namespace"] = call.namespace
            items.append(item)
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        model = req.body.get("model", "fake-model")

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
            yield "response.created", {"type": "response.created", "response": base}
            for idx, item in enumerate(items):
                yield (
                    "response.output_item.added",
                    {"type": "response.output_item.added", "output_index": idx, "item": item},
                )
                if item["type"] == "message":
                    yield (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": idx,
                            "content_index": 0,
                            "delta": reply.text,
                        },
                    )
                yield (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": idx, "item": item},
                )
            done = dict(base, status="completed", output=items, usage=usage)
            yield "response.completed", {"type": "response.completed", "response": done}

        self._send_sse(h, events())


class MessagesServer(_Server):
    """Anthropic's Messages API as Claude Code calls it: ``POST /v1/messages`` (``stream: true``), answered with
    ``message_start``, content blocks (text, ``tool_use``), ``message_delta`` and ``message_stop``. A request with
    ``stream`` false (token counting, the title call) gets one JSON message."""

    kind = "messages"

    @property
    def base_url(self) -> str:
        return self.origin

    def _is_turn(self, req: Request) -> bool:
        return req.path.split("?")[0].rstrip("/").endswith("/v1/messages")

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, reply: AgentReply) -> None:
        path = req.path.split("?")[0].rstrip("/")
        if path.endswith("/count_tokens"):
            self._send_json(h, 200, {"input_tokens": 100})
            return
        if not self._is_turn(req):
            self._send_json(h, 200, {})
            return
        if reply.status != 200:
            self._send_json(h, reply.status, {"type": "error", "error": {"type": "api_error", "message": reply.error}})
            return
        n = next(self._ids)
        model = req.body.get("model", "claude-fake")
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for i, call in enumerate(reply.tool_calls):
            blocks.append(
                {"type": "tool_use", "id": call.call_id or f"toolu_{n}_{i}", "name": call.name, "input": call.arguments}
            )
        stop = "tool_use" if reply.tool_calls else "end_turn"
        usage = {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not req.body.get("stream"):
            self._send_json(h, 200, message)
            return

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            start = dict(message, content=[], stop_reason=None)
            yield "message_start", {"type": "message_start", "message": start}
            for idx, block in enumerate(blocks):
                if block["type"] == "text":
                    yield (
                        "content_block_start",
                        {"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
                    )
                    yield (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    )
                else:
                    yield (
                        "content_block_start",
                        {"type": "content_block_start", "index": idx, "content_block": dict(block, input={})},
                    )
                    yield (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        },
                    )
                yield "content_block_stop", {"type": "content_block_stop", "index": idx}
            yield (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            )
            yield "message_stop", {"type": "message_stop"}

        self._send_sse(h, events())


def _send_data_sse(h: BaseHTTPRequestHandler, chunks: list[Any]) -> None:
    """Server-sent events of ``data:`` lines only (Gemini's ``alt=sse``, OpenAI's chat completions); a ``str`` chunk
    is sent as is (``[DONE]``)."""
    body = b"".join(f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n".encode() for c in chunks)
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("cache-control", "no-cache")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


class GeminiServer(_Server):
    """Google's Gemini API as Gemini CLI calls it with an API key: ``POST /v1beta/models/<model>:generateContent``
    and ``:streamGenerateContent?alt=sse`` (``data:`` events of ``GenerateContentResponse``), ``:countTokens``. Both
    kinds of call are turns (Gemini CLI asks the model for side answers, like the next speaker, without streaming)."""

    kind = "gemini"

    @property
    def base_url(self) -> str:
        return self.origin

    def _is_turn(self, req: Request) -> bool:
        path = req.path.split("?")[0]
        return path.endswith(":generateContent") or path.endswith(":streamGenerateContent")

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        self._send_json(h, 200, {"models": []})

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, reply: AgentReply) -> None:
        path = req.path.split("?")[0]
        if path.endswith(":countTokens"):
            self._send_json(h, 200, {"totalTokens": 100})
            return
        if not self._is_turn(req):
            self._send_json(h, 200, {})
            return
        if reply.status != 200:
            self._send_json(h, reply.status, {"error": {"code": reply.status, "message": reply.error}})
            return
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        for call in reply.tool_calls:
            parts.append({"functionCall": {"name": call.name, "args": call.arguments}})
        usage = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
        response = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": path.rsplit("/", 1)[-1].split(":")[0],
        }
        if path.endswith(":streamGenerateContent"):
            _send_data_sse(h, [response])
        else:
            self._send_json(h, 200, response)


class ChatCompletionsServer(_Server):
    """An OpenAI-compatible chat completions provider as OpenCode calls it: ``POST /v1/chat/completions`` with
    ``stream: true``, answered with ``chat.completion.chunk`` events (text, ``tool_calls``) and ``[DONE]``."""

    kind = "chat"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _is_turn(self, req: Request) -> bool:
        return req.path.split("?")[0].rstrip("/").endswith("/chat/completions")

    def _answer(self, h: BaseHTTPRequestHandler, req: Request, reply: AgentReply) -> None:
        if not self._is_turn(req):
            self._send_json(h, 200, {})
            return
        if reply.status != 200:
            self._send_json(h, reply.status, {"error": {"message": reply.error, "type": "scripted"}})
            return
        n = next(self._ids)
        model = req.body.get("model", "fake-model")
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        finish = "tool_calls" if reply.tool_calls else "stop"
        calls = [
            {
                "index": i,
                "id": call.call_id or f"call_{n}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
        if not req.body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            body = {"id": f"chatcmpl-{n}", "object": "chat.completion", "model": model, "usage": usage}
            body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
            self._send_json(h, 200, body)
            return
        base = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0, "model": model}
        chunks: list[Any] = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])]
        if reply.text:
            chunks.append(dict(base, choices=[{"index": 0, "delta": {"content": reply.text}, "finish_reason": None}]))
        if calls:
            chunks.append(dict(base, choices=[{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]))
        chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        chunks.append(dict(base, choices=[], usage=usage))
        chunks.append("[DONE]")
        _send_data_sse(h, chunks)
