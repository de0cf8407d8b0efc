"""The transcript item as one typed shape: calls paired to their outputs, one text extractor, one list of call types
that every reader of memory items goes through."""

from __future__ import annotations

import re
from pathlib import Path

from memtui.adapters.rollouts.model import CALL_TYPES, OUTPUT_TYPES, Origin, Transcript, content_text
from memtui.domain.render import render_items
from memtui.domain.trust.classes import Trust, item_classes
from memtui.services.phase1.annotate import item_text
from memtui.services.phase1.offline import digest_items
from memtui.services.phase1.quotes import user_words
from memtui.services.search import message_docs
from memtui.tui.screens.detail import conversation

ITEMS = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the flaky test."}]},
    {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "pytest -x"}', "call_id": "a"},
    {"type": "function_call", "name": "read_file", "arguments": '{"path": "t.py"}', "call_id": "b"},
    {"type": "function_call_output", "call_id": "b", "output": "def test(): ..."},
    {"type": "function_call_output", "call_id": "a", "output": "1 failed\nexit code: 1"},
    {"type": "message", "role": "assistant", "phase": "commentary", "content": [{"type": "output_text", "text": "Looking."}]},
    {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c"},
    {"type": "custom_tool_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "Done"}]},
    {"type": "function_call_output", "call_id": "zzz", "output": "orphan"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]},
]  # fmt: skip


def test_outputs_pair_with_their_calls_out_of_order() -> None:
    t = Transcript(ITEMS)
    call_a, call_b, out_b, out_a = t[1], t[2], t[3], t[4]
    assert call_a.output is out_a and out_a.call is call_a
    assert call_b.output is out_b and out_b.call is call_b
    assert t[6].output is t[7] and t[7].text == "Done"  # a list-shaped output read by the one extractor
    assert t[8].call is None  # an output answering no call in this transcript stays alone
    assert [i.number for i in t.calls()] == [2, 3, 7]
    assert call_a.arguments == {"cmd": "pytest -x"} and t[6].arguments == "*** Begin Patch"
    assert out_a.tool == "exec_command" and t[7].tool == "apply_patch"


def test_an_output_pairs_with_the_latest_call_before_it() -> None:
    t = Transcript(
        [
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "x"},
            {"type": "function_call_output", "call_id": "x", "output": "first"},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "x"},
            {"type": "function_call_output", "call_id": "x", "output": "second"},
        ]
    )
    assert t[0].output is t[1] and t[2].output is t[3]


def test_one_text_extractor() -> None:
    content = [
        {"type": "input_text", "text": "look at this"},
        {"type": "input_image", "image_url": "data:..."},
        {"type": "encrypted_content", "encrypted_content": "gAAA"},
        "not a part",
    ]
    assert content_text(content) == "look at this\n[image]\n[encrypted content]"
    assert content_text("plain") == "plain" and content_text(None) == ""
    t = Transcript([{"type": "message", "role": "user", "content": content}])
    assert t[0].text == content_text(content)
    assert t.user_texts() == [content_text(content)]


def test_origins_are_typed() -> None:
    t = Transcript(ITEMS)
    assert [i.origin for i in t] == [
        Origin.USER,
        Origin.TOOL_CALL,
        Origin.TOOL_CALL,
        Origin.TOOL_OUTPUT,
        Origin.TOOL_OUTPUT,
        Origin.COMMENTARY,
        Origin.TOOL_CALL,
        Origin.TOOL_OUTPUT,
        Origin.TOOL_OUTPUT,
        Origin.ASSISTANT,
    ]


def test_every_reader_sees_the_same_pairing_and_text() -> None:
    t = Transcript(ITEMS)
    # Phase 1 rendering
    lines = render_items(t).split("\n")
    assert lines[7] == '[item 8] tool output: "Done"'
    # the offline digest: the failing command knows its own output, not the file read that came between
    d = digest_items(t)
    shell = next(c for c in d.calls if c.name == "exec_command")
    assert shell.output_item == 5 and shell.failed and shell.exit_code == 1
    # trust: an output of a shell tool is observed even when another output came first; commentary is the agent's
    classes = item_classes(t)
    assert classes[4] is Trust.OBSERVED and classes[3] is Trust.TOOL
    assert classes[5] is Trust.AGENT
    assert item_text(t[7]) == "Done"
    # quotes, search and the detail screen
    assert user_words(t) == "fix the flaky test."
    assert [d[2] for d in message_docs("t", "/w", t)] == [1, 6, 10]
    blocks = conversation(t, lambda s: s)
    tool_a = next(b for b in blocks if b.name == "exec_command")
    assert tool_a.items == [2, 5] and tool_a.output.startswith("1 failed")
    assert [b.output for b in blocks if b.name == "output"] == ["orphan"]


_NAMES = "|".join(sorted(CALL_TYPES | OUTPUT_TYPES | {"tool_use", "tool_result"}))
# Two call or output types side by side in a literal: a list of call types of its own.
CALL_LIST = re.compile(rf"""["'](?:{_NAMES})["']\s*,\s*["'](?:{_NAMES})["']""")
# The filter writes the wire items (and maps Claude Code's tool_use/tool_result onto them); the model reads them.
OWNERS = {"adapters/rollouts/filter.py", "adapters/rollouts/model.py"}


def test_one_list_of_call_types() -> None:
    root = Path(__file__).resolve().parents[1] / "memtui"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in OWNERS or rel.startswith("testing/"):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{rel}: {m.group(0)}" for m in CALL_LIST.finditer(text)]
    assert offenders == []
