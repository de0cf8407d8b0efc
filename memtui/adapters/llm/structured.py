"""What a strict structured-output call sends and how its reply is read, parsed with the pydantic model the
schema came from. No model client here: the CLI backends and the batch path use it without loading ``openai``
(``chat_call`` makes the HTTP call).

The schema is generated from a model with ``extra="forbid"`` and normalised to what strict mode requires (every
property required, ``additionalProperties: false``, nullable fields as ``["string", "null"]``). The reply is parsed
with the same model, so an extra field, a missing field or invalid JSON raises ``StructuredCallError`` with a
reason a person can read in ``job_runs.error``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class StructuredCallError(RuntimeError):
    """The call or its reply failed; ``str(exc)`` is the recorded reason."""

    def __init__(self, reason: str, *, prompt_tokens: int | None = None, completion_tokens: int | None = None):
        super().__init__(reason)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class InvalidReply(StructuredCallError):
    """The server answered, but the reply is not the object asked for (bad JSON, wrong fields, junk)."""


class FormatRefused(StructuredCallError):
    """The server refused the request's ``response_format`` itself (e.g. llama-cpp-python on ``json_schema``)."""


class OutputMode(StrEnum):
    """How a structured reply is asked for, most to least constrained (``llm.ladder`` probes them in order)."""

    JSON_SCHEMA = "json_schema"  # response_format {type: json_schema, strict}: OpenAI, vLLM, Ollama, LM Studio
    JSON_OBJECT = "json_object"  # response_format {type: json_object, schema}: llama.cpp's and llama-cpp-python's
    PROMPT = "prompt"  # no response_format: plain JSON, the schema stated in the prompt


@dataclass
class StructuredResult(Generic[M]):
    output: M
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int
    model: str


@functools.cache
def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the shape strict mode accepts (flat objects of simple types).

    Cached: pydantic takes ~2 ms to build it, which a 10,000-line batch would pay 10,000 times. Do not mutate.
    """
    schema = model.model_json_schema()
    props: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        if "anyOf" in spec and all(set(s) == {"type"} for s in spec["anyOf"]):
            props[name] = {"type": [s["type"] for s in spec["anyOf"]]}
        else:
            props[name] = {k: v for k, v in spec.items() if k not in ("title", "default")}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def lenient_json(text: str | bytes) -> Any:
    """JSON that allows raw control characters inside strings (``strict=False``, as mainstream parsers' lenient
    modes do): small local models emit literal tabs and newlines in string values."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return json.loads(text, strict=False)


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.S)


def unwrap_prompt_reply(text: str) -> str:
    """A reply asked for in plain text: the JSON inside a code fence, or from its first ``{`` to its last ``}``."""
    m = _FENCE.match(text)
    if m:
        return m.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        if err["type"] == "json_invalid":
            return f"model reply is not valid JSON: {err['msg']}"
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected field {loc!r}")
        elif err["type"] == "missing":
            parts.append(f"missing field {loc!r}")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "model reply does not match the schema: " + "; ".join(parts)


def parse_chat_reply(
    response: Any, output_model: type[M], *, latency_ms: int, model: str, mode: OutputMode = OutputMode.JSON_SCHEMA
) -> StructuredResult[M]:
    """Validate one Chat Completions reply against ``output_model`` (also used for Batch API result lines)."""
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    completion_tokens = getattr(usage, "completion_tokens", None)

    def fail(reason: str) -> StructuredCallError:
        return InvalidReply(reason, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    choices = getattr(response, "choices", None)
    if not choices:
        raise fail("model reply has no choices")
    choice = choices[0]
    message = choice.message
    if getattr(message, "refusal", None):
        raise fail(f"model refused: {message.refusal}")
    if choice.finish_reason == "length":
        raise fail("model reply was cut off (finish_reason=length)")
    if not message.content:
        raise fail("model reply has no content")
    content = unwrap_prompt_reply(message.content) if mode is OutputMode.PROMPT else message.content
    return StructuredResult(
        validate_reply(content, output_model, fail),
        prompt_tokens,
        completion_tokens,
        latency_ms,
        getattr(response, "model", None) or model,
    )


def validate_reply(text: str | bytes, output_model: type[M], fail: Any = InvalidReply) -> M:
    """The reply parsed with the pydantic model (unknown fields refused), or ``fail(reason)`` raised.

    Strict JSON first (the fast path); a reply that only fails as JSON is parsed again leniently (raw control
    characters in strings), then validated with the same model."""
    try:
        return output_model.model_validate_json(text)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise fail(describe_validation_error(exc)) from exc
        first = exc
    try:
        obj = lenient_json(text)
    except ValueError:
        raise fail(describe_validation_error(first)) from first
    try:
        return output_model.model_validate(obj)
    except ValidationError as exc:
        raise fail(describe_validation_error(exc)) from exc


def schema_instruction(output_model: type[BaseModel]) -> str:
    """What the prompt says when the server cannot constrain the reply itself."""
    schema = json.dumps(strict_json_schema(output_model), separators=(",", ":"))
    return f"\n\nReply with only one JSON object (no code fences, no prose) that matches this JSON Schema:\n{schema}"


def request_body(
    model: str,
    system: str,
    user: str,
    output_model: type[BaseModel],
    schema_name: str,
    *,
    mode: OutputMode = OutputMode.JSON_SCHEMA,
    max_tokens: int | None = None,
) -> dict:
    """The Chat Completions body of a structured call: the synchronous path and the batch lines share it."""
    schema = strict_json_schema(output_model)
    if mode is OutputMode.PROMPT:
        system = system + schema_instruction(output_model)
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    if mode is OutputMode.JSON_SCHEMA:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "strict": True, "schema": schema},
        }
    elif mode is OutputMode.JSON_OBJECT:
        body["response_format"] = {"type": "json_object", "schema": schema}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body
