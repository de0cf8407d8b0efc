"""Every format generation, read faithfully: the index, Phase 1's items, previews, titles and the offline extractor
all agree on what the user said, and none of them takes injected text for it (fixtures: ``tests/fixtures/formats``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memtui.adapters.rollouts.model import Origin, Transcript
from memtui.adapters.sources import memory_items
from memtui.domain.render import render_item
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.eligibility import select_candidates
from memtui.services.phase1.offline import build_offline_output
from memtui.state.threads import get_thread
from tests.fixtures import formats
from tests.fixtures.formats import CAVEAT, CODEX_COMPACTION, COMPACTION_SUMMARY, Written

INJECTED_PHRASES = [
    "This session is being continued",
    "Another language model",
    "Caveat:",
    "Request interrupted",
    "<command-",
    "local-command",
    "bash-",
    "AGENTS.md",
    "user_instructions",
    "turn_aborted",
    "user_shell_command",
    "system-reminder",
    "ide_opened_file",
    "Review the image pipeline. Report",  # a slash command's meta expansion
    "Always answer in French",
]


@pytest.fixture
def home(isolated_env):
    written = formats.write_all(isolated_env["CODEX_HOME"], isolated_env["CLAUDE_CONFIG_DIR"])
    ctx = open_context()
    summary = run_ingest(ctx)
    yield ctx, written, summary
    ctx.close()


def _kind(written: Written) -> str:
    return "claude" if "claude" in str(written.path) else "codex"


def _user_texts(items: list[dict]) -> list[str]:
    out = []
    for item in items:
        if item.get("type") == "message" and item.get("role") == "user":
            out.append("\n".join(p["text"] for p in item["content"] if isinstance(p, dict) and "text" in p))
    return out


def _singles(written: dict) -> list[tuple[str, Written]]:
    return [(name, w) for name, w in written.items() if isinstance(w, Written)]


def test_every_file_is_indexed_with_no_bad_line(home):
    _ctx, written, summary = home
    assert summary.skipped == 0 and summary.lines_skipped == 0
    # each sub-agent comes with its own main session
    assert summary.new == len(_singles(written)) + 2 * len(written["claude_subagents"])


def test_ids_dates_and_sources_come_from_the_transcript(home):
    ctx, written, _ = home
    for name, w in _singles(written):
        t = get_thread(ctx.conn, w.thread_id)
        assert t is not None, name
        assert (t.created_at, t.updated_at) == (w.created_at, w.updated_at), name
    old = get_thread(ctx.conn, written["codex_old"].thread_id)
    assert (old.cwd, old.git_branch, old.session_source) == ("/home/ana/src/legacy-app", "main", "vscode")
    assert "pre-session_meta format" in old.ingest_reason
    assert get_thread(ctx.conn, written["codex_07x"].thread_id).session_source == "vscode"  # no source: the default
    assert get_thread(ctx.conn, written["codex_exec"].thread_id).session_source == "exec"
    assert get_thread(ctx.conn, written["codex_archived"].thread_id).archived
    assert get_thread(ctx.conn, written["codex_desktop"].thread_id).originator == "Codex Desktop"


def test_phase1_takes_interactive_sessions_of_every_generation(home):
    ctx, written, _ = home
    candidates, skipped = select_candidates(ctx.conn, ctx.settings, all_threads=True)
    chosen = {c.thread_id for c in candidates}
    for name in (
        "codex_old",
        "codex_07x",
        "codex_cli",
        "codex_zst",
        "codex_desktop",
        "claude_injected",
        "claude_continued",
    ):
        assert written[name].thread_id in chosen, name
    assert written["codex_exec"].thread_id not in chosen and written["codex_archived"].thread_id not in chosen
    assert skipped["not_interactive"] == 3 and skipped["archived"] == 1  # exec + two sub-agents; the archived copy


def test_items_hold_exactly_the_users_own_words(home):
    _ctx, written, _ = home
    for name, w in _singles(written):
        items = memory_items(w.path, _kind(w))
        assert _user_texts(items) == w.prompts, name
        for text in _user_texts(items):
            assert not any(p in text for p in INJECTED_PHRASES), (name, text)


def test_context_codex_keeps_is_labelled_never_the_user(home):
    _ctx, written, _ = home
    items = memory_items(written["codex_cli"].path, "codex")
    context = [i for i in items if i.get("role") == "context"]
    assert [i["label"] for i in context] == ["environment_context"]
    assert all(i.get("role") != "user" or "<environment_context>" not in str(i) for i in items)


def test_desktop_prompt_kept_only_as_an_event_is_recovered_once(home):
    _ctx, written, _ = home
    w = written["codex_desktop"]
    texts = _user_texts(memory_items(w.path, "codex"))
    assert texts == w.prompts  # the event-only prompt is there, the duplicated one is not doubled


def test_previews_and_titles_are_the_first_real_prompt(home):
    ctx, written, _ = home
    for name, w in _singles(written):
        t = get_thread(ctx.conn, w.thread_id)
        assert t.preview == w.prompts[0], name
    claude = get_thread(ctx.conn, written["claude_injected"].thread_id)
    # The only summary line points into another session: the title is the first real prompt instead.
    assert claude.title == written["claude_injected"].prompts[0]
    own = get_thread(ctx.conn, written["claude_summary"].thread_id)
    assert own.title == "Dark mode for the docs theme"  # the summary whose leafUuid is a message of this file


def test_subagents_with_the_same_name_under_two_sessions_are_two_threads(home):
    ctx, written, summary = home
    assert "duplicate" not in str(summary.skipped_by_reason)
    flat, nested = written["claude_subagents"]
    for w in (flat, nested):
        t = get_thread(ctx.conn, w.thread_id)
        assert t is not None and t.session_source == "subagent" and t.parent_thread_id == w.extra["parent"]
        assert t.preview == w.extra["parent_prompt"]  # shown as the thread's first message, never as the user's
    assert flat.path.parent.name != "subagents" and nested.path.parent.name == "subagents"


def test_offline_extractor_quotes_only_what_the_user_said(home):
    _ctx, written, _ = home
    for name, w in _singles(written):
        out = build_offline_output(Transcript(memory_items(w.path, _kind(w))), None)
        quoted = re.findall(r'the user said: "(.*)" \[item (\d+)\]', out.raw_memory)
        for text, _ in quoted:
            assert any(text in prompt for prompt in w.prompts), (name, text)
        for phrase in ("deploy on Fridays", "staging cluster", "answer in French", "push to main"):
            assert phrase not in out.raw_memory, (name, phrase)  # from summaries and instructions, never quoted
    claude = build_offline_output(Transcript(memory_items(written["claude_injected"].path, "claude")), None)
    assert '"The docs build must stay under 10 seconds; check what slowed it down."' in claude.raw_memory
    assert '"Prefer sharp over imagemagick for image work."' in claude.raw_memory


def test_item_numbers_cited_by_the_offline_extractor_point_at_those_words(home):
    _ctx, written, _ = home
    w = written["codex_desktop"]
    items = memory_items(w.path, "codex")
    out = build_offline_output(Transcript(items), None)
    for text, number in re.findall(r'the user said: "(.*)" \[item (\d+)\]', out.raw_memory):
        assert text in _user_texts([items[int(number) - 1]])[0]


def test_the_injected_texts_of_the_fixtures_are_really_there(home):
    """The fixtures would prove nothing if the injected text were missing from the files."""
    _, written, _ = home
    raw = Path(written["claude_injected"].path).read_text()
    assert COMPACTION_SUMMARY.split("\n")[0] in raw and CAVEAT[:40] in raw and "[Request interrupted" in raw
    assert CODEX_COMPACTION[:40] in Path(written["codex_cli"].path).read_text()


def test_a_synced_folder_keeps_its_dates_through_phase1_and_phase2(isolated_env, frozen_clock):
    """Every file touched "now" (a copy, a sync): summaries, headings and the age window still use the transcript."""
    from memtui.services.phase1.run import run_phase1
    from memtui.services.phase2.consolidate import run_phase2
    from tests.fixtures.rollouts import set_mtime

    written = formats.write_all(isolated_env["CODEX_HOME"], isolated_env["CLAUDE_CONFIG_DIR"])
    for path in (isolated_env["CODEX_HOME"], isolated_env["CLAUDE_CONFIG_DIR"]):
        for f in path.rglob("*.jsonl*"):
            set_mtime(f, frozen_clock)
    ctx = open_context()
    run_ingest(ctx)
    # The age window (10 days) sees the transcripts' July dates, not today's mtime: only the recent ones qualify.
    candidates, skipped = select_candidates(ctx.conn, ctx.settings)
    assert written["codex_old"].thread_id not in {c.thread_id for c in candidates} and skipped.get("too_old")
    p1 = run_phase1(ctx, offline=True, all_threads=True)
    assert p1.succeeded >= 3 and p1.dropped_quotes == 0  # every offline quote passes the model's quote check
    assert run_phase2(ctx, offline=True).outcome == "awaiting_review"
    root = ctx.paths.memory_root
    claude = written["claude_injected"]
    (stem,) = [
        p.name for p in (root / "rollout_summaries").iterdir() if claude.thread_id in p.read_text().split("\n", 1)[0]
    ]
    assert stem.startswith("2026-07-04T08-00-")  # its last event, not the mtime (2026-07-10)
    summary = (root / "memory_summary.md").read_text()
    assert "#### 2026-07-04" in summary and "#### 2026-07-10" not in summary
    ctx.close()


# --- what the agents write today ---------------------------------------------------------------------------------


def _said_anywhere(ctx, w: Written, kind: str, phrase: str) -> list[str]:
    """Where ``phrase`` shows up among what memtui takes from a rollout: Phase 1 input, offline output, preview,
    title."""
    from memtui.domain.render import render_items
    from memtui.services.phase1.prompt import build_stage_one_input_message

    items = memory_items(w.path, kind)
    found = []
    message = build_stage_one_input_message(str(w.path), None, render_items(Transcript(items)), ctx.settings).message
    if phrase in message:
        found.append("phase1 input")
    out = build_offline_output(Transcript(items), None)
    if phrase in out.raw_memory or phrase in out.rollout_summary:
        found.append("offline output")
    t = get_thread(ctx.conn, w.thread_id)
    if phrase in t.preview or phrase in (t.title or ""):
        found.append("preview/title")
    return found


def test_a_rewound_branch_is_never_said(home):
    """``claude_rewound``: "Fridays" was said on the branch the person rewound past; only "Tuesdays" stands."""
    ctx, written, _ = home
    w = written["claude_rewound"]
    assert "Fridays" in Path(w.path).read_text()  # the abandoned branch is really in the file
    assert _said_anywhere(ctx, w, "claude", "Fridays") == []
    assert "phase1 input" in _said_anywhere(ctx, w, "claude", "Tuesdays")
    # what came before the compaction boundary (followed through logicalParentUuid) still stands
    assert _user_texts(memory_items(w.path, "claude"))[0] == "Set up the release pipeline for the bot."


@pytest.mark.parametrize("name", ["codex_harness", "codex_rolled_first"])
def test_rolled_back_codex_turns_are_never_said(home, name):
    ctx, written, _ = home
    w = written[name]
    assert w.extra["undone"] in Path(w.path).read_text()
    assert _said_anywhere(ctx, w, "codex", w.extra["undone"]) == []
    assert _user_texts(memory_items(w.path, "codex")) == w.prompts


def test_harness_context_is_labelled_by_kind_first_then_by_tag(home):
    _ctx, written, _ = home
    items = memory_items(written["codex_harness"].path, "codex")
    assert [i["label"] for i in items if i.get("role") == "context"] == formats.HARNESS_LABELS
    said = "\n".join(_user_texts(items))
    for injected in ("French", "house style", formats.HOOK_CONTEXT, "Warning:", "plugins", "staging logs"):
        assert injected not in said


@pytest.mark.parametrize("fragment", formats.HARNESS_FRAGMENTS)
def test_every_contextual_fragment_of_current_codex_is_not_the_user(fragment):
    from memtui.adapters.rollouts.user_words import classify

    assert classify(fragment).kind in ("context", "drop")
    assert classify("  " + fragment + "\n").kind in ("context", "drop")


def test_titles_the_person_set_win(home):
    ctx, written, _ = home
    for name in ("claude_rewound", "codex_harness"):
        assert get_thread(ctx.conn, written[name].thread_id).title == written[name].extra["title"], name


def test_a_codex_rename_is_read_without_the_rollout_changing(home):
    ctx, written, _ = home
    w = written["codex_harness"]
    index = Path(w.path).parents[4] / "session_index.jsonl"
    with index.open("a") as f:
        f.write(json.dumps({"id": w.thread_id, "thread_name": "Renamed later", "updated_at": "2026-07-09"}) + "\n")
    summary = run_ingest(ctx)
    assert summary.updated == 0 and get_thread(ctx.conn, w.thread_id).title == "Renamed later"


def test_queued_prompts_are_the_users_and_other_sessions_messages_are_not(home):
    _ctx, written, _ = home
    said = _user_texts(memory_items(written["claude_rewound"].path, "claude"))
    assert "Also post the changelog to the team channel." in said
    assert not any("deploy now" in s for s in said)
    assert said.count("Also post the changelog to the team channel.") == 1  # the queue-operation lines add nothing


def test_api_error_lines_are_not_the_assistants_words_and_spilled_output_is_followed(home):
    _ctx, written, _ = home
    items = memory_items(written["claude_rewound"].path, "claude")
    assert not any("API Error" in str(i) for i in items)
    outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and formats.SPILL_TAIL in outputs[0]


def test_spilled_output_is_read_only_from_the_sessions_own_folder(home, tmp_path):
    from memtui.adapters.rollouts.claude_tree import SpillReader

    _ctx, written, _ = home
    w = written["claude_rewound"]
    outside = tmp_path / "tool-results" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("not this session's")
    reader = SpillReader(Path(w.path))
    notice = f"Full output saved to: {outside}"
    assert reader.follow("call_x", notice) == notice
    assert reader.follow("../../etc", "tool-results/../../x.txt") == "tool-results/../../x.txt"


def test_sub_agent_threads_show_their_items(home):
    _ctx, written, _ = home
    for w in written["claude_subagents"]:
        items = memory_items(w.path, "claude")
        assert _user_texts(items) == w.prompts == []  # the parent model's prompt is not the user's
        first = Transcript(items)[0]
        assert (first.origin, first.author, first.text) == (Origin.AGENT, "parent agent", w.extra["parent_prompt"])
        assert render_item(first) == f'[item 1] agent message from parent agent: "{w.extra["parent_prompt"]}"'
        assert any(i.get("role") == "assistant" for i in items)


def test_memory_turned_off_midway_is_recorded_and_never_extracted(home):
    from memtui.services.phase1.run import run_phase1

    ctx, written, _ = home
    w = written["codex_memory_off"]
    assert get_thread(ctx.conn, w.thread_id).memory_mode == "disabled"
    candidates, _ = select_candidates(ctx.conn, ctx.settings, all_threads=True)
    assert w.thread_id not in {c.thread_id for c in candidates}
    run_phase1(ctx, offline=True, all_threads=True)
    assert ctx.conn.execute("SELECT 1 FROM stage1_outputs WHERE thread_id=?", (w.thread_id,)).fetchone() is None


def test_memory_turned_off_after_ingest_is_honoured_before_the_next_ingest(isolated_env):
    """The file grows by the opt-out after it was indexed: extraction refuses it at once, ingest records it."""
    from memtui.services.phase1.extractor import MEMORY_TURNED_OFF
    from memtui.services.phase1.run import run_phase1

    w = formats.codex_memory_off_midway(isolated_env["CODEX_HOME"], with_opt_out=False)
    ctx = open_context()
    run_ingest(ctx)
    assert get_thread(ctx.conn, w.thread_id).memory_mode == "enabled"
    with Path(w.path).open("ab") as f:
        f.write(w.extra["tail"])
    summary = run_phase1(ctx, offline=True, all_threads=True, thread_id=w.thread_id)
    assert summary.succeeded == 0 and summary.failed == 1
    error = ctx.conn.execute("SELECT error FROM job_runs ORDER BY rowid DESC LIMIT 1").fetchone()[0]
    assert error == MEMORY_TURNED_OFF
    assert ctx.conn.execute("SELECT 1 FROM stage1_outputs WHERE thread_id=?", (w.thread_id,)).fetchone() is None
    assert run_ingest(ctx).updated == 1
    assert get_thread(ctx.conn, w.thread_id).memory_mode == "disabled"
    ctx.close()
