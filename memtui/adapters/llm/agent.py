"""A generic tool-calling loop over Chat Completions: ask, run the requested tools, feed the results back.

The loop knows nothing about memories; the caller passes the tools (schemas + a ``call`` dispatcher). Limits are
hard: the turn budget ends the run with ``AgentLimitError``; whatever the tools raise propagates unchanged.
The history is kept under ``max_history_bytes``: the oldest tool results (and the long arguments of old tool calls)
are replaced by a one-line stub that says what was dropped, so a long run that pages through large files cannot
overflow the model's context. The last turns' results are never trimmed; the model is told when few turns remain.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)

from memtui.adapters.redact import redact_text


class Toolbox(Protocol):
    def schemas(self) -> list[dict[str, Any]]: ...

    def call(self, name: str, arguments: str) -> str: ...


class AgentError(RuntimeError):
    """The agent could not finish: a model/API error, a cancel, or a lost lease."""


class AgentLimitError(AgentError):
    """The agent hit a hard limit (turns)."""


@dataclass
class AgentResult:
    final_text: str
    turns: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    trimmed_results: int = 0  # old tool results replaced by a stub to keep the history under budget
    max_request_bytes: int = 0  # the largest history sent in one request


KEEP_RECENT_RESULTS = 6  # tool results of the last turns are never trimmed
LONG_ARGUMENT_BYTES = 512  # an old tool call's string argument longer than this is elided when trimming
TURNS_WARNING = 3  # below this many turns left, the model is told
TRIM_TO = 0.7  # once over budget, trim down to this share of it, so the next turns reuse a stable prefix (cache)
_STUB_MARK = "[memtui: this earlier tool result"


def _size(message: dict[str, Any]) -> int:
    size = len((message.get("content") or "").encode("utf-8"))
    for call in message.get("tool_calls") or []:
        size += len(call["function"]["arguments"].encode("utf-8")) + 64
    return size + 32


def _stub(content: str) -> str:
    head = content.split("\n", 1)[0][:200]
    return f"{head}\n[memtui: this earlier tool result ({len(content.encode())} bytes) was dropped to save context; call the tool again if you still need it]"


def _elide_arguments(arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except ValueError:
        return json.dumps({"memtui_note": f"arguments elided ({len(arguments)} bytes)"})
    if not isinstance(args, dict):
        return arguments
    return json.dumps(
        {
            k: (f"[{len(v.encode())} bytes elided]" if isinstance(v, str) and len(v) > LONG_ARGUMENT_BYTES else v)
            for k, v in args.items()
        }
    )


def trim_history(history: list[dict[str, Any]], max_bytes: int, keep_recent: int = KEEP_RECENT_RESULTS) -> int:
    """When ``history`` is over ``max_bytes``, shrink it in place to ``TRIM_TO`` of that (if it can), oldest first;
    returns the results trimmed."""
    total = sum(_size(m) for m in history)
    if total <= max_bytes:
        return 0
    max_bytes = int(max_bytes * TRIM_TO)
    tool_idx = [i for i, m in enumerate(history) if m.get("role") == "tool"]
    protected = set(tool_idx[-keep_recent:]) if keep_recent else set()
    first_protected = min(protected) if protected else len(history)
    trimmed = 0
    for i, m in enumerate(history):
        if total <= max_bytes or i >= first_protected:
            break
        before = _size(m)
        content = str(m.get("content") or "")
        if m.get("role") == "tool" and _STUB_MARK not in content:
            if len(content) > 300:
                m["content"] = _stub(content)
                trimmed += 1
        elif m.get("role") == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                fn = call["function"]
                if len(fn["arguments"]) > LONG_ARGUMENT_BYTES:
                    fn["arguments"] = _elide_arguments(fn["arguments"])
        total -= before - _size(m)
    return trimmed


async def run_tool_agent(
    client: openai.AsyncOpenAI,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: Toolbox,
    max_turns: int,
    on_turn: Callable[[int, list[str]], None] | None = None,
    should_stop: Callable[[], str | None] | None = None,
    max_history_bytes: int | None = None,
) -> AgentResult:
    """Run until the model answers without tool calls; ``max_turns`` model calls at most."""
    history = [dict(m) for m in messages]
    result = AgentResult("", 0, 0, 0, 0)
    while True:
        if should_stop and (why := should_stop()):
            raise AgentError(why)
        if result.turns >= max_turns:
            raise AgentLimitError(f"the agent used its {max_turns} turns without finishing")
        if max_history_bytes:
            result.trimmed_results += trim_history(history, max_history_bytes)
        result.max_request_bytes = max(result.max_request_bytes, sum(_size(m) for m in history))
        try:
            # The history and the schemas are the API's own JSON shapes, kept as plain dicts because trimming edits
            # them in place; the client's TypedDicts describe the same objects.
            response = await client.chat.completions.create(
                model=model,
                messages=cast("list[ChatCompletionMessageParam]", history),
                tools=cast("list[ChatCompletionFunctionToolParam]", tools.schemas()),
            )
        except openai.OpenAIError as exc:
            raise AgentError(f"model call failed: {exc.__class__.__name__}: {exc}") from exc
        except ValueError as exc:  # the client's own JSON parse of a garbage body (an HTML error page...)
            raise AgentError(
                f"model call failed: the server's reply is not JSON ({exc.__class__.__name__}: {exc})"
            ) from exc
        result.turns += 1
        if response.usage:
            result.prompt_tokens += response.usage.prompt_tokens or 0
            result.completion_tokens += response.usage.completion_tokens or 0
        if not response.choices:
            raise AgentError("the model returned no choices")
        message = response.choices[0].message
        # only function tools are offered, so only function calls can come back
        calls = [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]
        if on_turn:
            on_turn(result.turns, [c.function.name for c in calls])
        if not calls:
            result.final_text = message.content or ""
            return result
        # Everything the loop sends back goes through redaction, the model's own words included: a secret it echoed
        # or a tool read from a file must not travel in the next request.
        history.append(
            {
                "role": "assistant",
                "content": redact_text(message.content) if message.content else message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": redact_text(c.function.arguments or "")},
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            if should_stop and (why := should_stop()):
                raise AgentError(why)
            output = tools.call(c.function.name, c.function.arguments)
            result.tool_calls += 1
            history.append({"role": "tool", "tool_call_id": c.id, "content": redact_text(output)})
            await asyncio.sleep(0)  # let the heartbeat task run between tool calls
        left = max_turns - result.turns
        if left <= TURNS_WARNING:
            history[-1]["content"] += (
                f"\n[memtui: {left} model turn(s) left of {max_turns}; finish your writes now, then answer without a "
                "tool call]"
            )
