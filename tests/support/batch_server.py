"""A real OpenAI Files + Batches server on 127.0.0.1 for tests and benchmarks, driven through the ``openai`` client.

Implements what memtui uses: ``POST /v1/files`` (multipart upload, ``purpose=batch``), ``GET /v1/files/{id}`` and
``/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list), and
``POST /v1/batches/{id}/cancel``. Each request line is answered by ``handler(custom_id, body)``; the default answers
a valid stage-one output as a chat completion. Knobs: ``polls_to_complete`` (a slow batch stays ``in_progress``
for that many retrieves), ``expire_after`` (the batch expires after N requests; the rest go to the error file with
``batch_expired``), partial failures through the handler, and cancel (``cancelling`` then ``cancelled``, with the
requests not yet run absent from both files).
"""

from __future__ import annotations

import email
import email.policy
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.chat_server import SHUTDOWN_POLL

VALID_OUTPUT = {
    "rollout_summary": "# Fixed the flaky checkout test\n\nThe user ran the tests under TZ=UTC.\n",
    "rollout_slug": "fix-checkout-test",
    "raw_memory": "---\ndescription: tests need TZ=UTC\ntask: fix test\ntask_group: shop-api\ntask_outcome: success\n"
    "cwd: /home/ana/src/shop-api\nkeywords: tz\n---\n### Task 1: fix test\n- run the suite with TZ=UTC\n",
}


@dataclass
class LineReply:
    status: int = 200
    content: str | None = None  # the assistant message content (JSON text)
    error_code: str | None = None  # a line-level error (error file) instead of a response
    message: str = "scripted error"


def ok(obj: Any = None) -> LineReply:
    return LineReply(content=json.dumps(VALID_OUTPUT if obj is None else obj))


Handler = Callable[[str, dict[str, Any]], LineReply]


class BatchServer:
    def __init__(
        self, handler: Handler | None = None, *, polls_to_complete: int = 1, expire_after: int | None = None
    ) -> None:
        self.handler = handler or (lambda cid, body: ok())
        self.polls_to_complete = polls_to_complete
        self.expire_after = expire_after
        # A batch that fails validation: its status is "failed" and batch.errors lists why, as the Batch API does.
        self.validation_errors: list[dict[str, Any]] | None = None
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, name="batch-server", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> BatchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- state ------------------------------------------------------------------------------------
    def _file(self, data: bytes, purpose: str, filename: str) -> dict[str, Any]:
        fid = f"file-{next(self._ids)}"
        meta = {
            "id": fid,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.files[fid] = {"meta": meta, "data": data}
        return meta

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        f = self.files.get(body.get("input_file_id", ""))
        if f is None:
            return 400, {"error": {"message": "no such file", "type": "invalid_request_error"}}
        lines = [json.loads(x) for x in f["data"].splitlines() if x.strip()]
        bid = f"batch_{next(self._ids)}"
        now = int(time.time())
        batch = {
            "id": bid,
            "object": "batch",
            "endpoint": body.get("endpoint"),
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 86400,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        if self.validation_errors:
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": self.validation_errors}
            batch["request_counts"] = {"total": 0, "completed": 0, "failed": 0}
        self.batches[bid] = {"batch": batch, "lines": lines, "polls": 0, "cancel": False}
        return 200, batch

    def _finish(self, state: dict[str, Any], final: str, run: int) -> None:
        out, err = [], []
        completed = failed = 0
        for i, line in enumerate(state["lines"]):
            cid = line["custom_id"]
            rid = f"batch_req_{i}"
            if i >= run:
                if final == "expired":
                    err.append(
                        {
                            "id": rid,
                            "custom_id": cid,
                            "response": None,
                            "error": {"code": "batch_expired", "message": "This request could not be executed "
                                      "before the completion window expired."},
                        }
                    )  # fmt: skip
                    failed += 1
                continue
            reply = self.handler(cid, line["body"])
            if reply.error_code:
                err.append({"id": rid, "custom_id": cid, "response": None,
                            "error": {"code": reply.error_code, "message": reply.message}})  # fmt: skip
                failed += 1
            elif reply.status != 200:
                body = {"error": {"message": reply.message, "type": "server_error", "code": str(reply.status)}}
                err.append({"id": rid, "custom_id": cid, "response": {"status_code": reply.status,
                            "request_id": f"req_{i}", "body": body}, "error": None})  # fmt: skip
                failed += 1
            else:
                content = reply.content or ""
                completion = {
                    "id": f"chatcmpl-{i}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": line["body"].get("model", "test-model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": len(content) // 4, "total_tokens": 1000},
                }
                out.append({"id": rid, "custom_id": cid, "response": {"status_code": 200, "request_id": f"req_{i}",
                            "body": completion}, "error": None})  # fmt: skip
                completed += 1
        batch = state["batch"]
        if out:
            data = "".join(json.dumps(x) + "\n" for x in out).encode()
            batch["output_file_id"] = self._file(data, "batch_output", "output.jsonl")["id"]
        if err:
            data = "".join(json.dumps(x) + "\n" for x in err).encode()
            batch["error_file_id"] = self._file(data, "batch_output", "errors.jsonl")["id"]
        batch["status"] = final
        batch["request_counts"] = {"total": len(state["lines"]), "completed": completed, "failed": failed}

    def _retrieve(self, bid: str) -> tuple[int, dict[str, Any]]:
        state = self.batches.get(bid)
        if state is None:
            return 404, {"error": {"message": "no such batch"}}
        batch = state["batch"]
        if batch["status"] in ("completed", "expired", "cancelled", "failed"):
            return 200, batch
        state["polls"] += 1
        if batch["status"] == "cancelling":
            self._finish(state, "cancelled", run=0)
        elif self.expire_after is not None and state["polls"] >= self.polls_to_complete:
            self._finish(state, "expired", run=self.expire_after)
        elif state["polls"] >= self.polls_to_complete:
            self._finish(state, "completed", run=len(state["lines"]))
        else:
            batch["status"] = "in_progress"
        return 200, batch

    def _cancel(self, bid: str) -> tuple[int, dict[str, Any]]:
        state = self.batches.get(bid)
        if state is None:
            return 404, {"error": {"message": "no such batch"}}
        if state["batch"]["status"] in ("validating", "in_progress"):
            state["batch"]["status"] = "cancelling"
        return 200, state["batch"]

    def _list(self) -> tuple[int, dict[str, Any]]:
        data = [s["batch"] for s in reversed(self.batches.values())]
        return 200, {"object": "list", "data": data, "first_id": None, "last_id": None, "has_more": False}

    # --- HTTP ---------------------------------------------------------------------------------------
    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("content-length") or 0))

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj).encode(), "application/json")

            def _send(self, status: int, data: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self._body()
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.calls.append(("POST", path))
                    if path == "/v1/files":
                        msg = email.message_from_bytes(
                            b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + raw,
                            policy=email.policy.HTTP,
                        )
                        fields = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
                        part = fields.get("file")
                        purpose_part = fields.get("purpose")
                        purpose_raw = purpose_part.get_payload(decode=True) if purpose_part is not None else b""
                        purpose = purpose_raw.decode() if isinstance(purpose_raw, bytes) else ""
                        if part is None or purpose != "batch":
                            self._json(400, {"error": {"message": "file and purpose=batch are required"}})
                            return
                        content = part.get_payload(decode=True)
                        if not isinstance(content, bytes):
                            self._json(400, {"error": {"message": "the file part has no content"}})
                            return
                        meta = server._file(content, purpose, part.get_filename() or "input")
                        self._json(200, meta)
                    elif path == "/v1/batches":
                        self._json(*server._create(json.loads(raw or b"{}")))
                    elif m := re.fullmatch(r"/v1/batches/([^/]+)/cancel", path):
                        self._json(*server._cancel(m.group(1)))
                    else:
                        self._json(404, {"error": {"message": "not found"}})

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.calls.append(("GET", path))
                    if m := re.fullmatch(r"/v1/files/([^/]+)/content", path):
                        f = server.files.get(m.group(1))
                        if f is None:
                            self._json(404, {"error": {"message": "no such file"}})
                        else:
                            self._send(200, f["data"], "application/octet-stream")
                    elif m := re.fullmatch(r"/v1/files/([^/]+)", path):
                        f = server.files.get(m.group(1))
                        self._json(*((200, f["meta"]) if f else (404, {"error": {"message": "no such file"}})))
                    elif path == "/v1/batches":
                        self._json(*server._list())
                    elif m := re.fullmatch(r"/v1/batches/([^/]+)", path):
                        self._json(*server._retrieve(m.group(1)))
                    else:
                        self._json(404, {"error": {"message": "not found"}})

        return _Handler
