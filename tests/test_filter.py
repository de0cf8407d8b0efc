"""The memory filter, with the cases of Codex's own phase1 tests."""

from __future__ import annotations

import json

import orjson
import pytest

from memtui.adapters.rollouts.filter import sanitize_response_item
from memtui.adapters.rollouts.user_words import is_memory_excluded_fragment
from memtui.adapters.sources import memory_items, serialize_memory_rollout
from tests.fixtures.rollouts import write_claude_session, write_codex_rollout

TID = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
META = {
    "timestamp": "2026-07-01T09:12:44.512Z",
    "type": "session_meta",
    "payload": {"id": TID, "cwd": "/w", "source": "cli"},
}


def line(kind: str, payload: dict) -> dict:
    return {"timestamp": "2026-07-01T09:13:00.000Z", "type": kind, "payload": payload}


def user(*texts: str) -> dict:
    return line(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t} for t in texts]},
    )


def rollout(codex_home, *lines):
    return write_codex_rollout(codex_home, thread_id=TID, lines=[META, *lines])


def test_classifies_memory_excluded_fragments():
    excluded = [
        "# AGENTS.md instructions for /tmp/project\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>",
        "# AGENTS.md instructions\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>",
        "  \n# agents.md INSTRUCTIONS for /x\n<instructions>b</instructions>\n ",  # trimmed, ASCII case-insensitive
        "<skill>\n<name>demo</name>\n<path>skills/demo/SKILL.md</path>\nbody\n</skill>",
        "<SKILL>x</SKILL>",
    ]
    kept = [
        "<environment_context>\n  <cwd>/tmp</cwd>\n</environment_context>",
        '<subagent_notification>{"agent_id":"a","status":"completed"}</subagent_notification>',
        "# AGENTS.md instructions for /tmp\n<INSTRUCTIONS>\nunterminated",
        "Please read <skill>x</skill>",
        "plain user text",
    ]
    assert all(is_memory_excluded_fragment(t) for t in excluded)
    assert not any(is_memory_excluded_fragment(t) for t in kept)


def test_serializes_memory_rollout_with_agents_removed_but_environment_kept(isolated_env):
    agents = "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>"
    env = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
    skill = "<skill>\n<name>deploy</name>\n</skill>"
    notification = '<subagent_notification>{"agent_id":"a1","status":"completed"}</subagent_notification>'
    path = rollout(isolated_env["CODEX_HOME"], user(agents, env), user(skill), user(notification))
    items = memory_items(path, "codex")
    # Kept as Codex keeps them, but as context: never the user's words.
    assert items == [
        {
            "type": "message",
            "role": "context",
            "label": "environment_context",
            "content": [{"type": "input_text", "text": env}],
        },
        {
            "type": "message",
            "role": "context",
            "label": "subagent_notification",
            "content": [{"type": "input_text", "text": notification}],
        },
    ]
    serialized = serialize_memory_rollout(path, "codex")
    assert "AGENTS.md" not in serialized and "<skill>" not in serialized
    assert "environment_context" in serialized and "subagent_notification" in serialized


def test_serializes_inter_agent_communications_for_memory(isolated_env):
    plain = {
        "author": "/root/worker",
        "recipient": "/root",
        "other_recipients": [],
        "content": "child done",
        "trigger_turn": False,
    }
    encrypted = {
        "id": "mail_7",
        "author": "/root/worker",
        "recipient": "/root",
        "other_recipients": [],
        "content": "",
        "encrypted_content": "ciphertext",
        "trigger_turn": True,
    }
    message = {**encrypted, "id": None, "encrypted_content": "blob", "trigger_turn": False}
    path = rollout(
        isolated_env["CODEX_HOME"],
        line("inter_agent_communication", plain),
        line("inter_agent_communication", encrypted),
        line("inter_agent_communication", message),
    )
    assert memory_items(path, "codex") == [
        {
            "type": "agent_message",
            "author": "/root/worker",
            "recipient": "/root",
            "content": [{"type": "input_text", "text": "child done"}],
        },
        {
            "type": "agent_message",
            "id": "mail_7",
            "author": "/root/worker",
            "recipient": "/root",
            "content": [
                {
                    "type": "input_text",
                    "text": "Message Type: NEW_TASK\nTask name: /root\nSender: /root/worker\nPayload:\n",
                },
                {"type": "encrypted_content", "encrypted_content": "ciphertext"},
            ],
        },
        {
            "type": "agent_message",
            "author": "/root/worker",
            "recipient": "/root",
            "content": [
                {
                    "type": "input_text",
                    "text": "Message Type: MESSAGE\nTask name: /root\nSender: /root/worker\nPayload:\n",
                },
                {"type": "encrypted_content", "encrypted_content": "blob"},
            ],
        },
    ]


def test_serializes_agent_message_response_items_for_memory(isolated_env):
    agent_message = {
        "type": "agent_message",
        "author": "/root",
        "recipient": "/root/worker",
        "content": [{"type": "input_text", "text": "look at checkout.ts"}],
    }
    path = rollout(
        isolated_env["CODEX_HOME"],
        line("inter_agent_communication_metadata", {"trigger_turn": True}),
        line("response_item", agent_message),
    )
    assert memory_items(path, "codex") == [agent_message]


@pytest.mark.parametrize(
    "item_type",
    [
        "agent_message",
        "local_shell_call",
        "function_call",
        "function_call_output",
        "tool_search_call",
        "tool_search_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
    ],
)
def test_persisted_item_types_are_kept(item_type):
    item = {"type": item_type, "call_id": "c1"}
    assert sanitize_response_item(item) == [item]


@pytest.mark.parametrize(
    "item_type",
    [
        "reasoning",
        "image_generation_call",
        "compaction",
        "compaction_summary",
        "compaction_trigger",
        "context_compaction",
        "additional_tools",
        "ghost_snapshot",
        "brand_new_type",
    ],
)
def test_other_item_types_are_dropped(item_type):
    assert sanitize_response_item({"type": item_type, "encrypted_content": "x"}) == []


def test_developer_dropped_assistant_and_system_kept():
    assert (
        sanitize_response_item(
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "x"}]}
        )
        == []
    )
    assistant = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "hi"}],
        "phase": "final_answer",
    }
    assert sanitize_response_item(assistant) == [assistant]
    system = {"type": "message", "role": "system", "content": []}
    assert sanitize_response_item(system) == [system]


def test_user_message_keeps_images_and_drops_only_fragments():
    item = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "<skill>s</skill>"},
            {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
        ],
    }
    assert sanitize_response_item(item) == [{**item, "content": [item["content"][1]]}]


def test_every_non_response_line_type_is_dropped(isolated_env):
    path = rollout(
        isolated_env["CODEX_HOME"],
        line("event_msg", {"type": "user_message", "message": "kept"}),  # repeats the user message below
        line("event_msg", {"type": "agent_message", "message": "hi"}),
        line("turn_context", {"cwd": "/w", "model": "gpt-5.5"}),
        line("compacted", {"message": "Summary so far"}),
        line("world_state", {"full": True, "state": {}}),
        line("rollout_reference", {"x": 1}),
        line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
        line("response_item", {"type": "compaction", "encrypted_content": "gAAAA"}),
        user("kept"),
    )
    assert memory_items(path, "codex") == [user("kept")["payload"]]


def test_serialization_is_one_compact_json_array_and_not_redacted(isolated_env):
    key = "sk-" + "a" * 30
    path = rollout(
        isolated_env["CODEX_HOME"],
        user("fix the tests"),
        line("response_item", {"type": "function_call_output", "call_id": "c", "output": f"token {key} é"}),
    )
    text = serialize_memory_rollout(path, "codex")
    assert text.startswith("[{") and ", " not in text and ": " not in text  # compact like serde_json::to_string
    assert key in text  # the Phase 1 caller redacts the whole string
    assert "é" in text  # UTF-8, not \\u escapes
    assert json.loads(text)[1]["output"].startswith("token ")


def test_filter_survives_bad_lines(isolated_env):
    path = write_codex_rollout(
        isolated_env["CODEX_HOME"],
        thread_id=TID,
        lines=[META, b"", b"not json", b"\xef\xbb\xbf", user("first"), b'{"timestamp":"x","type":"respo'],
    )
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert memory_items(path, "codex") == [user("first")["payload"]]


def test_empty_rollout_gives_empty_array(isolated_env):
    path = isolated_env["CODEX_HOME"] / "rollout-empty.jsonl"
    path.write_bytes(b"")
    assert serialize_memory_rollout(path, "codex") == "[]"


# --- Claude Code ---------------------------------------------------------------------------------------------


def test_claude_transcript_maps_to_response_items(isolated_env):
    path = write_claude_session(
        isolated_env["CLAUDE_CONFIG_DIR"],
        session_id="5c1e7d1a-0000-4000-8000-000000000001",
        summary="Deploy flag",
        user_messages=["Add a --dry-run flag"],
        assistant_messages=["Done: --dry-run prints the plan."],
        tool_calls=[{"id": "toolu_01", "name": "Bash", "input": {"command": "ls deploy/"}, "output": "deploy.sh"}],
    )
    assert memory_items(path, "claude") == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add a --dry-run flag"}]},
        {"type": "function_call", "name": "Bash", "arguments": '{"command":"ls deploy/"}', "call_id": "toolu_01"},
        {"type": "function_call_output", "call_id": "toolu_01", "output": "deploy.sh"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done: --dry-run prints the plan."}],
        },
    ]
    text = serialize_memory_rollout(path, "claude")
    assert "Let me look" not in text  # thinking dropped like reasoning
    assert "Deploy flag" not in text  # summary lines dropped
    assert orjson.loads(text)[1]["arguments"] == '{"command":"ls deploy/"}'


def test_claude_sidechain_system_and_meta_lines_are_dropped(isolated_env):
    sid = "5c1e7d1a-0000-4000-8000-000000000002"
    base = {"sessionId": sid, "cwd": "/w", "timestamp": "2026-07-01T09:00:00Z"}
    lines = [
        {**base, "type": "user", "isSidechain": False, "message": {"role": "user", "content": "main question"}},
        {**base, "type": "user", "isSidechain": True, "message": {"role": "user", "content": "sidechain task"}},
        {
            **base,
            "type": "assistant",
            "isSidechain": True,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "side answer"}]},
        },
        {**base, "type": "system", "content": "Conversation compacted"},
        {**base, "type": "user", "isMeta": True, "message": {"role": "user", "content": "Caveat: local commands"}},
        {
            **base,
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "main answer"}],
            },
        },
    ]
    path = write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"], session_id=sid, lines=lines)
    assert memory_items(path, "claude") == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "main question"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "main answer"}]},
    ]


def test_claude_tool_result_with_block_content(isolated_env):
    sid = "5c1e7d1a-0000-4000-8000-000000000003"
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": [
            {"type": "text", "text": "line one"},
            {"type": "image", "source": {}},
            {"type": "text", "text": "line two"},
        ],
    }
    lines = [{"type": "user", "sessionId": sid, "message": {"role": "user", "content": [result]}}]
    path = write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"], session_id=sid, lines=lines)
    assert memory_items(path, "claude") == [
        {"type": "function_call_output", "call_id": "toolu_9", "output": "line one\nline two"}
    ]


def test_unknown_source_kind_is_an_error(isolated_env):
    path = rollout(isolated_env["CODEX_HOME"], user("x"))
    with pytest.raises(ValueError):
        memory_items(path, "no-such-agent")


def test_kept_lines_agree_with_the_tolerant_line_reader():
    """The filter's own line walk (dropped lines never copied) yields exactly the lines the tolerant reader
    yields less the droppable ones: BOM, CRLF, blank and whitespace lines, a long whitespace run before a record,
    an unterminated (possibly cut) last line."""
    from memtui.adapters.rollouts import filter as memfilter
    from memtui.adapters.rollouts import jsonl

    ts = "2026-07-01T09:12:44.512Z"
    user = orjson.dumps(
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix the tz test"}],
            },
        }
    )
    reasoning = orjson.dumps(
        {"timestamp": ts, "type": "response_item", "payload": {"type": "reasoning", "encrypted_content": "QUJD" * 50}}
    )
    output = orjson.dumps(
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c", "output": "ok"},
        }
    )
    event = orjson.dumps({"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count"}})
    cases = [
        jsonl.BOM + user + b"\r\n" + reasoning + b"\n\n   \n" + output + b"\r\n",
        user + b"\n" + b" " * 300 + output + b"\n" + event + b"\n\t\n",
        reasoning + b"\n" + output + b"\n" + user[: len(user) // 2],  # cut last line
        output + b"\n" + user,  # unterminated but whole
        b"\n\n" + event + b"\r\n\r\n" + user + b"\n" + b" " * 300 + b"\n",
    ]
    for data in cases:
        expected = [(line, last) for _, line, last in jsonl.iter_raw_lines(data) if not memfilter._droppable(line)]
        assert [(line, last) for line, last, _ in memfilter._kept_lines(data)] == expected
        assert expected  # each case keeps something
