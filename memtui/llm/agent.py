"""A generic tool-calling loop over Chat Completions: ask, run the requested tools, feed the results back.

The loop knows nothing about memories; the caller passes the tools (schemas + a ``call`` dispatcher). Limits are
hard: the turn budget ends the run with ``AgentLimitError``; whatever the tools raise propagates unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import openai

from memtui.redact import redact_text


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


async def run_tool_agent(
    client: openai.AsyncOpenAI,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: Toolbox,
    max_turns: int,
    on_turn: Callable[[int, list[str]], None] | None = None,
    should_stop: Callable[[], str | None] | None = None,
) -> AgentResult:
    """Run until the model answers without tool calls; ``max_turns`` model calls at most."""
    history = list(messages)
    result = AgentResult("", 0, 0, 0, 0)
    while True:
        if should_stop and (why := should_stop()):
            raise AgentError(why)
        if result.turns >= max_turns:
            raise AgentLimitError(f"the agent used its {max_turns} turns without finishing")
        try:
            response = await client.chat.completions.create(model=model, messages=history, tools=tools.schemas())
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
        calls = message.tool_calls or []
        if on_turn:
            on_turn(result.turns, [c.function.name for c in calls if getattr(c, "function", None)])
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
