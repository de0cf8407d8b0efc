"""Codex rollouts: the line models and the index row, on the reference's own example lines (§15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.adapters.rollouts import codex, jsonl
from memtui.adapters.rollouts.model import (
    Compacted,
    EventMsg,
    InterAgentCommunication,
    LineStats,
    ResponseItem,
    SessionMeta,
    TurnContext,
)
from tests.fixtures.rollouts import write_codex_rollout

# Verbatim lines of a Codex rollout, one per line type.
META_LINES = [
    '{"timestamp":"2026-07-01T09:12:44.512Z","type":"session_meta","payload":{"session_id":"019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b","id":"019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b","timestamp":"2026-07-01T09:12:44.498Z","cwd":"/home/ana/src/shop-api","originator":"codex_cli_rs","cli_version":"0.140.0","source":"cli","model_provider":"openai","base_instructions":{"text":"You are Codex, a coding agent..."},"history_mode":"legacy","git":{"commit_hash":"3f2c9e1","branch":"main","repository_url":"git@github.com:ana/shop-api.git"}}}',
    '{"timestamp":"2026-07-02T14:00:03.010Z","type":"session_meta","payload":{"id":"019e0f77-aaaa-7bbb-8ccc-111122223333","timestamp":"2026-07-02T14:00:02.990Z","cwd":"/home/ana/notes","originator":"codex_vscode","cli_version":"0.141.0","source":"vscode","model_provider":"openai","base_instructions":null,"memory_mode":"disabled","history_mode":"legacy"}}',
    '{"timestamp":"2026-07-02T14:05:10.000Z","type":"session_meta","payload":{"id":"019e0f80-1111-7222-8333-444455556666","parent_thread_id":"019e0f77-aaaa-7bbb-8ccc-111122223333","timestamp":"2026-07-02T14:05:09.900Z","cwd":"/home/ana/notes","originator":"codex_vscode","cli_version":"0.141.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"019e0f77-aaaa-7bbb-8ccc-111122223333","depth":1,"agent_nickname":"Scout","agent_role":"explorer"}}},"thread_source":"subagent","model_provider":"openai","base_instructions":null,"history_mode":"legacy"}}',
]
ITEM_LINES = [
    '{"timestamp":"2026-07-01T09:12:45.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /home/ana/src/shop-api\\n\\n<INSTRUCTIONS>\\nUse pnpm.\\n</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>\\n  <cwd>/home/ana/src/shop-api</cwd>\\n  <shell>zsh</shell>\\n</environment_context>"}]}}',
    '{"timestamp":"2026-07-01T09:12:51.300Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"The checkout tests fail on CI; find out why. Don\'t edit yet."}]}}',
    '{"timestamp":"2026-07-01T09:13:02.118Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\\"cmd\\":\\"pnpm test checkout\\",\\"workdir\\":\\"/home/ana/src/shop-api\\"}","call_id":"call_7Qd"}}',
    '{"timestamp":"2026-07-01T09:13:20.640Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_7Qd","output":"FAIL src/checkout.test.ts\\n  TZ-dependent date assertion ..."}}',
    '{"timestamp":"2026-07-01T09:13:40.005Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The failure is timezone-dependent: CI runs in UTC..."}],"phase":"final_answer"}}',
]
EVENT_LINES = [
    '{"timestamp":"2026-07-01T09:12:51.301Z","type":"event_msg","payload":{"type":"user_message","message":"The checkout tests fail on CI; find out why. Don\'t edit yet.","local_images":[],"text_elements":[]}}',
    '{"timestamp":"2026-07-01T09:13:40.010Z","type":"event_msg","payload":{"type":"agent_message","message":"The failure is timezone-dependent...","phase":"final_answer","memory_citation":{"entries":[{"path":"MEMORY.md","lineStart":12,"lineEnd":18,"note":"shop-api CI tz pitfall"}],"rolloutIds":["019dff00-1234-7abc-8def-001122334455"]}}}',
    '{"timestamp":"2026-07-01T09:13:40.200Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":48211,"cached_input_tokens":40960,"output_tokens":1290,"reasoning_output_tokens":512,"total_tokens":49501},"last_token_usage":{"input_tokens":9120,"cached_input_tokens":8704,"output_tokens":402,"reasoning_output_tokens":128,"total_tokens":9522},"model_context_window":258400},"rate_limits":null}}',
    '{"timestamp":"2026-07-01T09:13:40.300Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"1","last_agent_message":"The failure is timezone-dependent..."}}',
]
TURN_LINES = [
    '{"timestamp":"2026-07-01T09:12:51.290Z","type":"turn_context","payload":{"turn_id":"1","cwd":"/home/ana/src/shop-api","current_date":"2026-07-01","timezone":"Europe/Lisbon","approval_policy":"on-request","sandbox_policy":{"type":"workspace-write","network_access":false,"exclude_tmpdir_env_var":false,"exclude_slash_tmp":false},"model":"gpt-5.5","effort":"medium","summary":"auto"}}',
    '{"timestamp":"2026-07-02T10:01:00.000Z","type":"turn_context","payload":{"turn_id":"4","cwd":"/home/ana/src/shop-api","approval_policy":"never","sandbox_policy":{"type":"danger-full-access"},"model":"gpt-5.4","summary":"none"}}',
]
COMPACTED_LINES = [
    '{"timestamp":"2026-07-01T11:40:00.000Z","type":"compacted","payload":{"message":"Summary so far: investigated CI tz failure; user wants no edits before a plan."}}',
    '{"timestamp":"2026-07-01T12:30:00.000Z","type":"compacted","payload":{"message":"Context checkpoint","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix it now."}]}],"window_number":2,"first_window_id":"019e0a1b-0000-7000-8000-000000000001","previous_window_id":"019e0a1b-0000-7000-8000-000000000001","window_id":"019e0a99-0000-7000-8000-000000000002"}}',
]
OTHER_LINES = [
    '{"timestamp":"2026-07-01T09:14:00.000Z","type":"inter_agent_communication","payload":{"author":"/root/worker","recipient":"/root","other_recipients":[],"content":"child done","trigger_turn":false}}',
    '{"timestamp":"2026-07-01T09:14:00.000Z","type":"inter_agent_communication_metadata","payload":{"trigger_turn":true}}',
    '{"timestamp":"2026-07-01T09:14:00.000Z","type":"world_state","payload":{"full":true,"state":{"open_files":["src/checkout.ts"]}}}',
]
ALL_LINES = META_LINES[:1] + ITEM_LINES + EVENT_LINES + TURN_LINES + COMPACTED_LINES + OTHER_LINES
NOW = 1_783_684_800


def _write(codex_home: Path, lines: list[str], name: str | None = None) -> Path:
    tid = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
    return write_codex_rollout(codex_home, thread_id=tid, lines=lines, file_name=name)


def _index(path: Path, archived: bool = False):
    data, _ = jsonl.read_bytes(path)
    st = path.stat()
    return codex.index_file(path, data, size=st.st_size, mtime_ns=st.st_mtime_ns, archived=archived, now=NOW)


def test_every_reference_line_type_parses_into_its_model(isolated_env):
    path = _write(isolated_env["CODEX_HOME"], ALL_LINES)
    stats = LineStats()
    lines = list(codex.iter_lines(path, stats))
    assert stats.skipped == 0 and len(lines) == len(ALL_LINES)
    by_type = {}
    for line in lines:
        by_type.setdefault(line.type, []).append(line)
    assert isinstance(by_type["session_meta"][0].item, SessionMeta)
    assert by_type["session_meta"][0].item.git.branch == "main"
    assert all(isinstance(x.item, ResponseItem) for x in by_type["response_item"])
    assert [x.item.type for x in by_type["response_item"]] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert all(isinstance(x.item, EventMsg) for x in by_type["event_msg"])
    assert by_type["event_msg"][1].item.memory_citation["rolloutIds"] == ["019dff00-1234-7abc-8def-001122334455"]
    assert all(isinstance(x.item, TurnContext) for x in by_type["turn_context"])
    assert by_type["turn_context"][0].item.model == "gpt-5.5"
    assert all(isinstance(x.item, Compacted) for x in by_type["compacted"])
    assert by_type["compacted"][1].item.replacement_history[0]["role"] == "user"
    assert isinstance(by_type["inter_agent_communication"][0].item, InterAgentCommunication)
    # Types without a model (and unknown ones) are kept with their raw payload.
    assert by_type["world_state"][0].item is None
    assert by_type["world_state"][0].payload["full"] is True
    assert by_type["inter_agent_communication_metadata"][0].payload == {"trigger_turn": True}


def test_unknown_line_type_and_unknown_item_type_are_kept_as_raw(isolated_env):
    lines = [
        META_LINES[0],
        '{"timestamp":"2026-07-01T09:14:00.000Z","type":"rollout_reference","payload":{"rollout_id":"x"}}',
        '{"timestamp":"2026-07-01T09:14:00.000Z","type":"response_item","payload":{"type":"hologram_call","beam":1}}',
    ]
    parsed = list(codex.iter_lines(_write(isolated_env["CODEX_HOME"], lines)))
    assert parsed[1].type == "rollout_reference" and parsed[1].item is None
    assert parsed[2].item.type == "hologram_call" and parsed[2].item.model_extra["beam"] == 1


def test_index_row_from_reference_session_meta(isolated_env):
    result = _index(_write(isolated_env["CODEX_HOME"], ALL_LINES))
    t = result.thread
    assert t is not None and result.status == "indexed"
    assert t.id == "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
    assert (t.source_kind, t.session_source, t.source_detail, t.parent_thread_id) == ("codex", "cli", None, None)
    assert (t.cwd, t.originator, t.cli_version) == ("/home/ana/src/shop-api", "codex_cli_rs", "0.140.0")
    assert (t.git_branch, t.git_commit, t.git_url) == ("main", "3f2c9e1", "git@github.com:ana/shop-api.git")
    assert (t.memory_mode, t.history_mode, t.model) == ("enabled", "legacy", "gpt-5.5")
    assert t.created_at == 1782897164  # 2026-07-01T09:12:44Z
    assert t.preview == "The checkout tests fail on CI; find out why. Don't edit yet."
    assert t.items == len(ALL_LINES) and t.skipped_lines == 0
    # Dates from the transcript, not the file: the last line's timestamp (the file's mtime is "now").
    assert t.updated_at == 1782897240 and result.mtime_ns // 1_000_000_000 != t.updated_at


def test_vscode_thread_with_memory_disabled(isolated_env):
    t = _index(_write(isolated_env["CODEX_HOME"], [META_LINES[1]])).thread
    assert (t.id, t.session_source, t.memory_mode, t.originator) == (
        "019e0f77-aaaa-7bbb-8ccc-111122223333",
        "vscode",
        "disabled",
        "codex_vscode",
    )
    assert t.preview == "" and t.git_branch is None


def test_subagent_thread_has_its_parent(isolated_env):
    t = _index(_write(isolated_env["CODEX_HOME"], [META_LINES[2]])).thread
    assert t.session_source == "subagent"
    assert t.parent_thread_id == "019e0f77-aaaa-7bbb-8ccc-111122223333"


@pytest.mark.parametrize(
    ("source", "payload", "expected"),
    [
        ("cli", {}, ("cli", None, None)),
        ("vscode", {}, ("vscode", None, None)),
        ("exec", {}, ("exec", None, None)),
        ("mcp", {}, ("mcp", None, None)),
        ({"custom": "atlas"}, {}, ("custom", "atlas", None)),
        ({"internal": "memory_consolidation"}, {}, ("internal", "memory_consolidation", None)),
        (
            {"subagent": {"thread_spawn": {"parent_thread_id": "p-1", "depth": 1}}},
            {},
            ("subagent", "thread_spawn", "p-1"),
        ),
        ({"subagent": "review"}, {"parent_thread_id": "p-2"}, ("subagent", "review", "p-2")),
        (None, {}, ("vscode", None, None)),  # no source: SessionSource::default() is VSCode
        ("atlas-like-future-value", {}, ("custom", "atlas-like-future-value", None)),
    ],
)
def test_session_source_mapping(source, payload, expected):
    assert codex.session_source(source, payload) == expected


def test_history_mode_and_memory_mode_defaults(isolated_env):
    line = META_LINES[0].replace(',"history_mode":"legacy"', "")
    t = _index(_write(isolated_env["CODEX_HOME"], [line])).thread
    assert (t.memory_mode, t.history_mode) == ("enabled", "legacy")
    line = META_LINES[0].replace('"history_mode":"legacy"', '"history_mode":"paginated","memory_mode":"polluted"')
    t = _index(_write(isolated_env["CODEX_HOME"], [line])).thread
    assert (t.memory_mode, t.history_mode) == ("polluted", "paginated")


def test_preview_skips_agents_md_and_environment_context(isolated_env):
    path = write_codex_rollout(isolated_env["CODEX_HOME"], user_messages=["Rename the billing module"])
    t = _index(path).thread
    assert t.preview == "Rename the billing module"
    assert "AGENTS.md" not in t.preview and "environment_context" not in t.preview


def test_preview_from_response_item_when_no_user_message_events(isolated_env):
    lines = [META_LINES[0], ITEM_LINES[0], ITEM_LINES[1]]  # no event_msg lines at all
    assert _index(_write(isolated_env["CODEX_HOME"], lines)).thread.preview.startswith("The checkout tests fail")


def test_preview_is_redacted_and_bounded(isolated_env):
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
    path = write_codex_rollout(isolated_env["CODEX_HOME"], user_messages=[f"deploy with {key} " + "x" * 5000])
    t = _index(path).thread
    assert key not in t.preview and "[REDACTED_SECRET]" in t.preview
    assert len(t.preview) <= 1000


def test_session_meta_longer_than_8_kb(isolated_env):
    big = META_LINES[0].replace("You are Codex, a coding agent...", "instructions " * 2000)
    assert len(big) > 20_000
    t = _index(_write(isolated_env["CODEX_HOME"], [big, *ITEM_LINES])).thread
    assert t.cwd == "/home/ana/src/shop-api" and t.preview.startswith("The checkout")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "rollout-2026-07-01T09-12-44-019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl",
            "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b",
        ),
        (
            "rollout-2026-07-01T09-12-44-019E0A1B-2C3D-7E4F-8A9B-0C1D2E3F4A5B.jsonl.zst",
            "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b",
        ),
        (
            "rollout-2026-07-01T09-12-44-019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b_019e0a99-0000-7000-8000-000000000002.jsonl",
            "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b",
        ),
        ("rollout-notes.jsonl", None),
        ("session.jsonl", None),
    ],
)
def test_thread_id_from_file_name(name, expected):
    assert codex.thread_id_from_name(name) == expected


def test_item_metadata_sits_beside_the_payload_never_wraps_it(isolated_env):
    """``RolloutLine`` (codex-rs ``history/src/rollout_payload.rs``): ``{timestamp, type, payload, metadata?}``. A
    ``payload.item`` wrapper never existed; a line shaped like one is not a user message."""
    beside = (
        '{"timestamp":"2026-07-01T09:12:51.300Z","type":"response_item","payload":{"type":"message",'
        '"role":"user","content":[{"type":"input_text","text":"Hello beside"}]},"metadata":{"turn_id":"t1"}}'
    )
    wrapped = (
        '{"timestamp":"2026-07-01T09:12:51.300Z","type":"response_item","payload":{"item":{"type":"message",'
        '"role":"user","content":[{"type":"input_text","text":"Wrapped hello"}]}}}'
    )
    assert _index(_write(isolated_env["CODEX_HOME"], [META_LINES[0], wrapped, beside])).thread.preview == "Hello beside"
