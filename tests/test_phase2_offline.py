"""The offline consolidator's MEMORY.md block follows the reference's task-group schema (§8.5)."""

from memtui.services.phase2.offline import _sections, render_memory_block
from memtui.state.selection import Stage1Output

RAW = """---
description: explicit user statements from: Fix the flaky test
task: Fix the flaky test
task_group: shop-api
task_outcome: success
cwd: /src/shop
keywords: test, tz
---
_Extracted offline by memtui (no model): a deterministic digest of the rollout._

### Task 1: Fix the flaky test
task: Fix the flaky test
Preference signals:
- the user said: "always run tests with TZ=UTC" -> follow this
Reusable knowledge:
- `TZ=UTC pnpm test` reproduces CI
Failures and how to do differently:
- `pnpm test` failed locally
"""


def _memory(**kw) -> Stage1Output:
    base = dict(
        thread_id="019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b",
        source_updated_at=1_783_684_800,
        raw_memory=RAW,
        rollout_summary="# Fix the flaky test\n",
        rollout_slug="fix_flaky_test",
        cwd="/src/shop",
        rollout_path="/r.jsonl",
        git_branch=None,
        generated_at=1_783_684_800,
        usage_count=None,
        last_usage=None,
        fresh_at=1_783_684_800,
    )
    base.update(kw)
    return Stage1Output(**base)


def test_sections_drop_metadata_and_sort_bullets():
    sections = _sections(RAW)
    assert sections["preferences"] == ['the user said: "always run tests with TZ=UTC" -> follow this']
    assert sections["knowledge"] == ["`TZ=UTC pnpm test` reproduces CI"]
    assert sections["failures"] == ["`pnpm test` failed locally"]


def test_free_text_without_headings_is_kept_as_knowledge():
    assert _sections("Use uv, not pip.\n\nRun make lint first.")["knowledge"] == [
        "Use uv, not pip.",
        "Run make lint first.",
    ]


def test_block_has_task_group_sections_with_task_references():
    block = render_memory_block([_memory()])
    assert "# Task Group: /src/shop" in block
    task = "0c1d2e3f4a5b"[-8:]  # the session's stable id: the end of its thread id
    assert f"## Task {task}: Fix the flaky test" in block
    assert f'## User preferences\n- the user said: "always run tests with TZ=UTC" -> follow this [Task {task}]' in block
    assert f"## Failures and how to do differently\n- `pnpm test` failed locally [Task {task}]" in block
    assert "task_group:" not in block and "description:" not in block


def test_task_ids_are_stable_when_another_task_comes_before():
    """Issue 33.3: a new session's task does not renumber the others (a hunk can be left out alone)."""
    alone = render_memory_block([_memory()])
    newer = _memory(thread_id="019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f9999", source_updated_at=1_783_700_000)
    both = render_memory_block([_memory(), newer])
    task = next(line for line in alone.splitlines() if line.startswith("## Task "))
    assert task in both and "## Task 2e3f9999:" in both
    clash = _memory(thread_id="019e0a1b-2c3d-7e4f-8a9b-aaaa2e3f4a5b")  # same last 8 characters
    ids = [
        line.split(":")[0]
        for line in render_memory_block([_memory(), clash]).splitlines()
        if line.startswith("## Task ")
    ]
    assert len(set(ids)) == 2


def test_summary_keeps_a_persons_text_after_the_generated_part():
    from memtui.services.phase2.offline import merge_summary, render_summary

    first = merge_summary(None, render_summary([_memory()]))
    assert first.startswith("v1\n<!-- memtui:offline:begin")
    edited = first + "\n## My own notes\n- prefer short answers\n"
    again = merge_summary(
        edited, render_summary([_memory(), _memory(thread_id="019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5c")])
    )
    assert again.startswith("v1\n") and again.count("memtui:offline:begin") == 1
    assert again.endswith("## My own notes\n- prefer short answers\n")
    assert "2 session(s)" in again
    assert merge_summary("v2\nold format\n", render_summary([])).startswith("v1\n<!-- memtui:offline:begin")
    hand = merge_summary("v1\n## Hand written\n- keep me\n", render_summary([]))
    assert hand.startswith("v1\n<!-- memtui:offline:begin") and hand.endswith("## Hand written\n- keep me\n")
