"""Local engines (Ollama, llama.cpp's server, LM Studio, vLLM) through ``provider = "local"``, against the loopback
stand-in answering as llama-cpp-python's server does: the structured-output ladder, the budget that counts the
system prompt and the reply, lenient JSON, and semantic validation of what a small model returns."""

from __future__ import annotations

import json

import pytest

from memtui.adapters.llm.ladder import MODES_FILE
from memtui.core.settings import Settings, memtui_home
from memtui.domain.trust.markers import strip_all
from memtui.services.phase1.extractor import StageOneOutput
from memtui.services.phase1.output_check import stage_one_problems
from memtui.services.phase1.prompt import (
    STAGE_ONE_SYSTEM,
    STAGE_ONE_SYSTEM_COMPACT,
    build_stage_one_input_message,
    estimate_tokens,
    load_prompt,
    stage_one_system_prompt,
)
from memtui.services.phase1.run import run_phase1
from memtui.state.outputs import get_stage1_output
from tests.support.chat_server import (
    SMALL_MODEL_CONTROL_CHAR,
    SMALL_MODEL_JUNK,
    ChatServer,
    reply_json,
    reply_text,
)
from tests.test_phase1_run import VALID, fresh, home, job, seed  # noqa: F401  (fixtures)


@pytest.fixture
def llama_cpp(monkeypatch):
    """The stand-in as llama-cpp-python's server: json_schema refused (HTTP 500), json_object + schema taken."""
    with ChatServer(refuse_json_schema=True) as server:
        monkeypatch.setenv("MEMTUI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMTUI_PROVIDER", "local")
        yield server


def test_a_server_refusing_json_schema_is_served_json_object_and_remembered(home, llama_cpp):  # noqa: F811
    a, b = seed(home, 2)
    llama_cpp.script(reply_json(VALID))
    s = run_phase1(fresh(), thread_id=a)
    assert (s.succeeded, s.failed) == (1, 0), s.failures
    first, second = llama_cpp.requests
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"]["type"] == "json_object"
    assert second["response_format"]["schema"]["required"] == ["rollout_summary", "rollout_slug", "raw_memory"]
    assert second["max_tokens"] == Settings().reply_reserve_tokens  # the reply fits the reserve
    modes = json.loads((memtui_home() / MODES_FILE).read_text())
    assert modes == {llama_cpp.base_url: "json_object"}
    # Remembered: the next run goes straight to the accepted form, one request per rollout.
    llama_cpp.script(reply_json(VALID))
    assert run_phase1(fresh(), thread_id=b).succeeded == 1
    assert len(llama_cpp.requests) == 3 and llama_cpp.requests[2]["response_format"]["type"] == "json_object"


def test_a_server_taking_neither_gets_the_schema_in_the_prompt(home, monkeypatch):  # noqa: F811
    def handler(body):
        if "response_format" in body:
            from tests.support.chat_server import reply_error

            return reply_error(400, "response_format is not supported by this server")
        return reply_text("Here you go:\n```json\n" + json.dumps(VALID) + "\n```")

    with ChatServer(handler=handler) as server:
        monkeypatch.setenv("MEMTUI_BASE_URL", server.base_url)
        monkeypatch.setenv("MEMTUI_PROVIDER", "local")
        seed(home)
        assert run_phase1(fresh()).succeeded == 1
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
        assert kinds == ["json_schema", "json_object", None]
        assert '"additionalProperties":false' in server.requests[-1]["messages"][0]["content"]


def test_the_budget_counts_the_system_prompt_and_the_reserved_reply():
    s = Settings(provider="local", local_context_window_tokens=8192, reply_reserve_tokens=2048)
    system = stage_one_system_prompt(s)
    assert system == load_prompt(STAGE_ONE_SYSTEM_COMPACT)  # a small window gets the compact prompt
    assert len(system) < len(load_prompt(STAGE_ONE_SYSTEM)) / 3
    big = "[item 1] user: " + "the flamingo cache must be warmed before the tests run; " * 4000
    built = build_stage_one_input_message("/r/x.jsonl", "/work", big, s, system=system)
    total = estimate_tokens(system) + estimate_tokens(built.message) + s.reply_reserve_tokens
    assert built.truncated_tokens > 0
    assert total <= 8192 * s.effective_context_window_percent // 100
    # Even the full prompt is counted: with it, less of the rollout fits.
    full = build_stage_one_input_message("/r/x.jsonl", "/work", big, s, system=load_prompt(STAGE_ONE_SYSTEM))
    assert full.estimated_tokens < built.estimated_tokens
    assert stage_one_system_prompt(Settings()) == load_prompt(STAGE_ONE_SYSTEM)  # a large window: the full prompt


def test_a_raw_control_character_in_a_string_is_read_leniently(home, llama_cpp):  # noqa: F811
    (t,) = seed(home)
    llama_cpp.script(reply_text(SMALL_MODEL_CONTROL_CHAR))
    s = run_phase1(fresh())
    assert (s.succeeded, s.failed) == (1, 0), s.failures
    assert "TZ=UTC" in get_stage1_output(home[0].conn, t)["raw_memory"]


def test_junk_in_the_right_keys_is_asked_again_then_fails_with_the_reason(home, llama_cpp):  # noqa: F811
    a, b = seed(home, 2)
    assert stage_one_problems(StageOneOutput(**SMALL_MODEL_JUNK))
    llama_cpp.script(reply_json(SMALL_MODEL_JUNK), reply_json(SMALL_MODEL_JUNK))
    s = run_phase1(fresh(), thread_id=a)
    assert (s.succeeded, s.failed) == (0, 1)
    assert get_stage1_output(home[0].conn, a) is None  # nothing stored
    last_error = job(home[0].conn, a)["last_error"]
    assert last_error.startswith("invalid_output:") and "front matter" in last_error and "heading" in last_error
    # Junk, then a proper answer: the retry stores the proper one.
    llama_cpp.script(reply_json(SMALL_MODEL_JUNK), reply_json(VALID))
    assert run_phase1(fresh(), thread_id=b).succeeded == 1
    assert strip_all(get_stage1_output(home[0].conn, b)["raw_memory"]) == VALID["raw_memory"]  # trust-marked


def test_provider_local_needs_a_base_url(home, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MEMTUI_PROVIDER", "local")
    monkeypatch.delenv("MEMTUI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    seed(home)
    with pytest.raises(ValueError, match="11434"):
        run_phase1(fresh())
