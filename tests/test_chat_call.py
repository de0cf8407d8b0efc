"""The structured call's own HTTP path (the client's ``post`` with a pre-encoded body, the reply decoded by msgspec):
what reaches the server, and every reply shape the typed ``chat.completions.create`` used to handle."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from pydantic import BaseModel, ConfigDict

from memtui.adapters.llm.chat_call import call_structured
from memtui.adapters.llm.structured import FormatRefused, InvalidReply, StructuredCallError, StructuredResult
from tests.support.chat_server import (
    ChatServer,
    Reply,
    reply_error,
    reply_garbage,
    reply_json,
    reply_llama_cpp_json_schema_refusal,
)


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str


def _call(server: ChatServer) -> StructuredResult[Out]:
    async def go() -> StructuredResult[Out]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=30)
        try:
            return await call_structured(
                client, model="m", system="sys", user="ünïcode ✓", output_model=Out, schema_name="o"
            )
        finally:
            await client.close()

    return asyncio.run(go())


def test_the_body_sent_is_the_request_body_and_the_reply_is_validated() -> None:
    with ChatServer() as server:
        server.script(reply_json({"answer": "yes"}, usage={"prompt_tokens": 7, "completion_tokens": 3}))
        result = _call(server)
        raw = server.raw_requests[-1]
    assert result.output == Out(answer="yes")
    assert (result.prompt_tokens, result.completion_tokens, result.model) == (7, 3, "m")
    body = json.loads(raw)
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "ünïcode ✓"}]
    assert body["response_format"]["type"] == "json_schema" and body["response_format"]["json_schema"]["strict"]


@pytest.mark.parametrize(
    ("reply", "error", "words"),
    [
        (reply_garbage(), StructuredCallError, "not JSON"),
        (reply_garbage(b'{"choices": "no"}'), StructuredCallError, "not JSON"),
        (reply_garbage(b'{"choices": []}'), InvalidReply, "no choices"),
        (reply_garbage(b'{"object": "chat.completion"}'), InvalidReply, "no choices"),
        (Reply(content=None), InvalidReply, "no content"),
        (Reply(content='{"answer": 1}'), InvalidReply, ""),
        (reply_error(500, "boom"), StructuredCallError, "HTTP 500): boom"),
        (reply_llama_cpp_json_schema_refusal(), FormatRefused, "HTTP 500"),
    ],
)
def test_every_reply_shape_gets_its_reason(reply: Reply, error: type[Exception], words: str) -> None:
    with ChatServer() as server:
        server.script(reply)
        with pytest.raises(error) as raised:
            _call(server)
    assert words in str(raised.value)


def test_a_refusal_and_a_cut_off_reply_are_invalid() -> None:
    refusal = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "refusal": "no"}}]}
    cut = {"choices": [{"index": 0, "message": {"content": '{"ans'}, "finish_reason": "length"}]}
    for body, words in ((refusal, "model refused: no"), (cut, "cut off")):
        with ChatServer() as server:
            server.script(reply_garbage(json.dumps(body).encode()))
            with pytest.raises(InvalidReply, match=words):
                _call(server)


def test_a_429_is_retried_once_with_the_same_body() -> None:
    with ChatServer() as server:
        server.script(reply_error(429, "slow down", retry_after=0), reply_json({"answer": "ok"}))
        result = _call(server)
        assert server.raw_requests[0] == server.raw_requests[1]
    assert result.output == Out(answer="ok")
