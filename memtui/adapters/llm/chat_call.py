"""One strict structured-output Chat Completions call through the ``openai`` client (one retry after a 429).

The request body and the reply's validation live in ``structured``, which the CLI backends and the batch path share
without loading the client (importing ``openai`` costs half a second of every command's start-up).

The call goes through the client's own ``post`` (its connection pool, auth, retries and error types) with the body
encoded once by ``orjson`` and the reply decoded by ``msgspec`` into the few fields memtui reads: the typed
``chat.completions.create`` walked every message through the SDK's request transform and built its full response
model, two thirds of a Phase 1 request's CPU beyond a bare HTTP call (``benchmarks/http_client.py``).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import msgspec
import openai
import orjson
from openai import _base_client

from memtui.adapters.llm.structured import (
    FormatRefused,
    M,
    OutputMode,
    StructuredCallError,
    StructuredResult,
    parse_chat_reply,
    request_body,
)

RATE_LIMIT_RETRY_MAX_WAIT = 2.0  # seconds; one quick retry, never a loop

# An HTTP error counts as a refused response_format when its status and words say so (a 500 included:
# llama-cpp-python wraps its request validation errors in one).
_FORMAT_STATUSES = frozenset({400, 415, 422, 500, 501})
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar|literal_error|not supported", re.I)


class _Message(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None


class _Choice(msgspec.Struct):
    message: _Message
    finish_reason: str | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatReply(msgspec.Struct):
    """The fields of a Chat Completions reply that ``parse_chat_reply`` reads; the rest is skipped unparsed."""

    choices: list[_Choice] = []
    usage: _Usage | None = None
    model: str | None = None


_DECODER = msgspec.json.Decoder(ChatReply)
# The HTTP response class the client returns as is when asked for it (httpx2 in openai 3, httpx before).
_RESPONSE = (getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx")).Response  # noqa: B009
_JSON: Any = {"headers": {"Content-Type": "application/json"}}


async def _post(client: openai.AsyncOpenAI, content: bytes) -> ChatReply:
    response = await client.post("/chat/completions", cast_to=_RESPONSE, content=content, options=_JSON)
    try:
        return _DECODER.decode(response.content)
    except msgspec.DecodeError as exc:  # an HTML error page, or a reply of the wrong shape
        raise ValueError(str(exc)) from exc


async def _create(client: openai.AsyncOpenAI, body: dict[str, Any]) -> ChatReply:
    content = orjson.dumps(body)
    try:
        return await _post(client, content)
    except openai.RateLimitError as exc:
        retry_after = _retry_after(exc)
        if retry_after is None or retry_after > RATE_LIMIT_RETRY_MAX_WAIT:
            retry_after = min(retry_after or 0.5, RATE_LIMIT_RETRY_MAX_WAIT)
        await asyncio.sleep(retry_after)
        return await _post(client, content)


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        return float(exc.response.headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None


async def call_structured(
    client: openai.AsyncOpenAI,
    *,
    model: str,
    system: str,
    user: str,
    output_model: type[M],
    schema_name: str,
    mode: OutputMode = OutputMode.JSON_SCHEMA,
    max_tokens: int | None = None,
) -> StructuredResult[M]:
    """One call (plus at most one retry after a 429); raises ``StructuredCallError`` with the reason:
    ``FormatRefused`` when the server refused the response format, ``InvalidReply`` when it answered with junk."""
    started = time.perf_counter()
    body = request_body(model, system, user, output_model, schema_name, mode=mode, max_tokens=max_tokens)
    try:
        response = await _create(client, body)
    except openai.APITimeoutError as exc:
        raise StructuredCallError(f"model request timed out after {client.timeout}s") from exc
    except openai.RateLimitError as exc:
        raise StructuredCallError(
            f"rate limited by the model server (HTTP 429, after one retry): {_api_message(exc)}"
        ) from exc
    except openai.APIStatusError as exc:
        message = _api_message(exc)
        reason = f"model server error (HTTP {exc.status_code}): {message}"
        if exc.status_code in _FORMAT_STATUSES and _FORMAT_WORDS.search(message or ""):
            raise FormatRefused(reason) from exc
        raise StructuredCallError(reason) from exc
    except openai.APIConnectionError as exc:
        raise StructuredCallError(f"cannot reach the model server: {exc}") from exc
    except openai.OpenAIError as exc:  # e.g. an unparsable response body
        raise StructuredCallError(f"model call failed: {type(exc).__name__}: {exc}") from exc
    except ValueError as exc:  # the client parses the body as JSON itself: an HTML error page raises this
        raise StructuredCallError(f"model server sent a reply that is not JSON ({type(exc).__name__}: {exc})") from exc
    latency_ms = int((time.perf_counter() - started) * 1000)
    return parse_chat_reply(response, output_model, latency_ms=latency_ms, model=model, mode=mode)
