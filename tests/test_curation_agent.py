"""The consolidation agent learns from decisions: forgotten rollouts and rejected hunks reach its prompt, and a
deterministic pass removes what came only from a forgotten rollout even when the agent leaves it in."""

from __future__ import annotations

import pytest

from memtui.domain.stems import rollout_summary_file_stem
from memtui.services import forget
from memtui.services.phase2 import forgotten, review
from memtui.services.phase2.consolidate import run_phase2
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
T_A, T_B = FROZEN_NOW - 7200, FROZEN_NOW - 3600
STEM_A = rollout_summary_file_stem(A, T_A, "fix_ci")
STEM_B = rollout_summary_file_stem(B, T_B, "deploy")


def memory() -> str:
    return (
        "# Task Group: /work/proj\nscope: ci\napplies_to: cwd=/work/proj; reuse_rule=always\n\n"
        "## Task 1: fixed CI\n\n### rollout_summary_files\n"
        f"- rollout_summaries/{STEM_A}.md (cwd=/work/proj, thread_id={A})\n\n### keywords\n- ci\n\n"
        "## Task 2: deploy tags\n\n### rollout_summary_files\n"
        f"- rollout_summaries/{STEM_B}.md (cwd=/work/proj, thread_id={B})\n\n### keywords\n- deploy\n\n"
        "## Reusable knowledge\n- the user prefers uv over pip [Task 1]\n"
        "- tag every release with the ZEBRA4471 label before deploying [Task 2]\n"
        "- both sessions ran pytest with -x [Task 1] [Task 2]\n"
    )


SUMMARY = (
    "v1\n## User Profile\n- a developer\n\n## What's in Memory\n### /work/proj\n"
    f"- fixed CI: ci\n  - desc: see rollout_summaries/{STEM_A}.md\n"
    f"- deploy tags: deploy\n  - desc: see rollout_summaries/{STEM_B}.md\n"
)


@pytest.fixture
def ctx(frozen_clock, model_env):
    c = context()
    add_output(c.conn, A, T_A)
    add_output(
        c.conn,
        B,
        T_B,
        raw="- Tag every release with the ZEBRA4471 label before deploying.\n- the user prefers uv over pip",
        summary="# Deploy tags\nThe release needed the ZEBRA4471 label [item 3].",
        slug="deploy",
    )
    model_env.script(
        reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": memory()})),
        reply_tool_calls(("write_file", {"path": "memory_summary.md", "content": SUMMARY})),
        reply_text("done"),
    )
    assert run_phase2(c, auto_approve=True).outcome == "approved"
    yield c
    c.close()


def test_lineage_names_the_rollouts_own_lines_and_not_shared_ones(ctx):
    lin = forget.lineage(ctx, B)
    assert lin.summary_files == [f"rollout_summaries/{STEM_B}.md"]
    assert any("zebra4471" in k for k in lin.keys)
    assert not any("uv over pip" in k for k in lin.keys)  # A has it too: not "only from B"
    texts = [x.text for x in lin.lines]
    assert "## Task 2: deploy tags" in texts and any("ZEBRA4471" in t for t in texts)
    assert not any("both sessions" in t for t in texts) and not any("uv over pip" in t for t in texts)
    assert any(t.startswith("- deploy tags") for t in texts)  # memory_summary.md's topic line


def test_forget_reaches_the_agent_prompt_and_leftovers_are_removed_after_the_agent(ctx, model_env):
    root = ctx.paths.memory_root
    result = forget.forget(ctx, B, "client work")
    assert result.removed_output and result.removed_files == [f"rollout_summaries/{STEM_B}.md"]
    model_env.script(reply_text("I changed nothing."))  # an agent that ignores the request
    run = run_phase2(ctx, force=True)
    assert run.outcome == "awaiting_review", run.reason
    prompt = model_env.requests[-1]["messages"][-1]["content"]
    section = prompt.split("7. Forgotten rollouts", 1)[1].split("\n## ", 1)[0]
    assert f"thread_id={B}" in section and "ZEBRA4471" in section
    text = (root / "MEMORY.md").read_text()
    assert "ZEBRA4471" not in text and "## Task 2" not in text and STEM_B not in text
    assert "both sessions ran pytest" in text and "uv over pip" in text and "## Task 1: fixed CI" in text
    assert STEM_B not in (root / "memory_summary.md").read_text()
    assert "- fixed CI: ci" in (root / "memory_summary.md").read_text()
    review.approve(ctx)
    row = ctx.conn.execute("SELECT contributed, done_at FROM forgotten_threads").fetchone()
    assert row[0] is None and row[1] is not None


def test_a_rejected_removal_keeps_the_forget_pending_for_the_next_run(ctx, model_env):
    forget.forget(ctx, B)
    model_env.script(reply_text("nothing"))
    run_phase2(ctx, force=True)
    review.reject(ctx, "not now")
    row = ctx.conn.execute("SELECT run_id, done_at, contributed FROM forgotten_threads").fetchone()
    assert row[0] is None and row[1] is None and row[2]
    assert any("ZEBRA4471" in line for line in forgotten.prompt_lines(ctx.conn))


def test_rejected_hunks_reach_the_prompt_as_do_not_relearn(ctx, model_env):
    root = ctx.paths.memory_root
    add_output(ctx.conn, "0194f5a6-89ab-7cde-8123-456789abcdf1", FROZEN_NOW - 60)
    model_env.script(
        reply_tool_calls(
            ("write_file", {"path": "MEMORY.md", "content": memory() + "- always deploy on Fridays [Task 1]\n"})
        ),
        reply_text("added"),
    )
    assert run_phase2(ctx, force=True).outcome == "awaiting_review"
    from memtui.services.review.hunks import hunks_of

    pending = review.pending_run(ctx.conn)
    bad = next(h for h in hunks_of(pending.diff) if h.file == "MEMORY.md")
    result = review.approve(ctx, except_ids=[bad.id], reason="never deploy on Fridays")
    assert result.hunks_out == 1 and "Fridays" not in (root / "MEMORY.md").read_text()
    add_output(ctx.conn, "0194f5a6-89ab-7cde-8123-456789abcdf2", FROZEN_NOW - 30)
    model_env.script(reply_text("nothing"))
    second = run_phase2(ctx, force=True)
    prompt = model_env.requests[-1]["messages"][-1]["content"]
    section = prompt.split("6. Do not re-learn", 1)[1].split("7. Forgotten", 1)[0]
    assert "always deploy on Fridays" in section and "never deploy on Fridays" in section
    assert "in MEMORY.md only" in section  # a rejection acts in the file it was made in (issue 33.2)
    # the run's review says which rejections its prompt carried, and how to lift them
    from memtui.services.review.decide import acted_notes
    from memtui.state import runs

    notes = acted_notes(ctx.conn, runs.get(ctx.conn, second.run_id).rejections_acted)
    assert len(notes) == 1 and "the agent was told not to learn '- always deploy on Fridays" in notes[0], notes
    assert "`memtui review lift" in notes[0]


def test_evidence_task_section_tags_bm25_excerpt_and_cited_items(ctx, model_env):
    from memtui.services.review.evidence import evidence_for_hunks, item_refs
    from memtui.services.review.hunks import hunks_of

    assert item_refs("see [item 3] and [items 5, 7] and [items 9-11]") == [3, 5, 7, 9, 10, 11]
    add_output(ctx.conn, "0194f5a6-89ab-7cde-8123-456789abcdf1", FROZEN_NOW - 60)
    text = memory().replace(
        "- tag every release with the ZEBRA4471 label before deploying [Task 2]",
        "- tag every release with the ZEBRA4471 label before deploying to production [Task 2]",
    )
    model_env.script(reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": text})), reply_text("ok"))
    assert run_phase2(ctx, force=True).outcome == "awaiting_review"
    run = review.pending_run(ctx.conn)
    (hunk,) = [h for h in hunks_of(run.diff) if h.file == "MEMORY.md"]
    (evidence,) = evidence_for_hunks(ctx, [hunk], run).values()
    first = evidence[0]
    assert first.thread_id == B and first.via == "task"  # the [Task 2] tag names B's task
    assert first.rollout_summary_file == f"rollout_summaries/{STEM_B}.md"
    assert "ZEBRA4471" in first.excerpt and first.score > 0
    assert first.items == [3]  # from the summary line that cites [item 3]
    assert first.project == "/work/proj" and first.date == T_B
    # A raw-memory match from another rollout ranks below, if any, and never repeats B
    assert len({e.thread_id for e in evidence}) == len(evidence)
