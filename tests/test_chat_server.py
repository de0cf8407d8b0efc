"""The loopback server really speaks the API as the openai client sees it."""

import openai
import pytest

from tests.support.chat_server import reply_error, reply_json, reply_tool_calls


def test_openai_client_round_trip(chat_server):
    chat_server.script(reply_json({"a": 1}), reply_tool_calls(("read_file", {"path": "MEMORY.md"})))
    client = openai.OpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == '{"a": 1}'
    assert r.usage.prompt_tokens >= 1
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "read_file" and '"MEMORY.md"' in call.function.arguments
    assert chat_server.requests[0]["messages"][0]["content"] == "hi"


def test_scripted_error_status(chat_server):
    chat_server.script(reply_error(429, "slow down"))
    client = openai.OpenAI(base_url=chat_server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
