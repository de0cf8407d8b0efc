"""What Phase 2 computes for the agent and obeys offline: tombstones, renames, stable stems, rejections, forget:.

Real SQLite, real git, the offline consolidator (the agent-side behaviour is in test_phase2_scripted.py).
"""

from __future__ import annotations

import json

import pytest

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import ROLLOUT_SUMMARIES, TOMBSTONES
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.offline import Forgetting, render_memory_block, render_summary
from memtui.services.phase2.prompt_inputs import (
    record_tombstones,
    rejections_since_last_approval,
    rollout_renames,
)
from memtui.services.phase2.workspace import sync_workspace
from memtui.state import tombstones
from memtui.state.db import connect
from memtui.state.selection import Stage1Output, get_phase2_input_selection
from tests.conftest import FROZEN_NOW
from tests.test_phase2_support import add_output, context

V7 = "0194f5a6-89ab-7cde-8123-456789abcdef"
V4 = "3f2c9e1a-5b7d-4c8e-9f0a-1b2c3d4e5f60"
RAW = (
    "---\ntask: ci\ntask_group: shop\ntask_outcome: success\ncwd: /work/proj\nkeywords: ci\n---\n"
    "### Task 1: ci\nPreference signals:\n"
    '- when installing, the user said: "use uv, not pip" -> use uv\n'
    '- when testing, the user said: "always run with TZ=UTC" -> set TZ=UTC\n'
)


@pytest.fixture
def ctx(frozen_clock):
    c = context()
    yield c
    c.close()


def _offline(ctx, **kw):
    result = run_phase2(ctx, offline=True, force=True, **kw)
    assert result.outcome in ("awaiting_review", "approved", "no_changes"), result.reason
    return result


def _summaries(root):
    return sorted(p.name for p in (root / ROLLOUT_SUMMARIES).iterdir())


# --- tombstones ----------------------------------------------------------------------------------------------------


def test_a_persons_deletion_becomes_a_tombstone_and_is_never_regenerated(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, V7, FROZEN_NOW - 3600, raw=RAW)
    _offline(ctx, auto_approve=True)
    memory = (root / "MEMORY.md").read_text()
    assert '"use uv, not pip"' in memory
    # the person deletes one bullet and moves another (a move is not a deletion)
    lines = memory.splitlines(keepends=True)
    uv = next(x for x in lines if '"use uv, not pip"' in x)
    tz = next(x for x in lines if "TZ=UTC" in x)
    edited = [x for x in lines if x not in (uv, tz)]
    edited.insert(2, tz)
    (root / "MEMORY.md").write_text("".join(edited))

    _offline(ctx, auto_approve=True)
    uv_line = '- when installing, the user said: "use uv, not pip" -> use uv'
    rows = ctx.conn.execute("SELECT hash, file, thread_ids FROM tombstones").fetchall()
    assert [tuple(r) for r in rows] == [(tombstones.line_hash(uv_line), "MEMORY.md", json.dumps([V7]))]
    assert '"use uv, not pip"' not in (root / "MEMORY.md").read_text()
    assert '"use uv, not pip"' not in (root / "memory_summary.md").read_text()
    assert "TZ=UTC" in (root / "MEMORY.md").read_text()

    # a re-extraction of the same rollout says it again: the tombstone holds
    add_output(ctx.conn, V7, FROZEN_NOW - 60, raw=RAW + "- a new learning about caching\n")
    _offline(ctx, auto_approve=True)
    text = (root / "MEMORY.md").read_text()
    assert "a new learning about caching" in text and '"use uv, not pip"' not in text
    assert tombstones.count(ctx.conn) == 1
    # no copy of the deleted words in a memory-root file (raw_memories.md is the rollout's own input): a hash only
    assert TOMBSTONES not in baseline.run_git(root, "ls-files")


def test_tombstones_are_recorded_once_and_only_from_a_persons_files(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    conn = connect(tmp_path / "state.sqlite")
    (root / "MEMORY.md").write_text("# x\n- keep this line\n")
    diff = (
        "diff --git a/MEMORY.md b/MEMORY.md\n--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -1,3 +1,2 @@\n # x\n"
        "-- a deleted memory line [Task 2]\n- keep this line\n-- short\n"
        "diff --git a/raw_memories.md b/raw_memories.md\n--- a/raw_memories.md\n+++ b/raw_memories.md\n"
        "@@ -1 +0,0 @@\n-- removed from a generated input\n"
    )
    changes = [("M", "MEMORY.md"), ("M", "raw_memories.md")]
    assert record_tombstones(conn, root, changes, diff) == 1
    assert record_tombstones(conn, root, changes, diff) == 0  # already known
    assert tombstones.hashes(conn) == {tombstones.line_hash("- a deleted memory line")}
    assert not (root / TOMBSTONES).exists()
    assert b"a deleted memory line" not in (tmp_path / "state.sqlite").read_bytes()


def test_an_older_tombstones_md_moves_into_the_database_and_leaves_git_with_the_next_approval(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, V7, FROZEN_NOW - 3600, raw=RAW)
    _offline(ctx, auto_approve=True)
    # as an older memtui left it: committed in the baseline
    (root / TOMBSTONES).write_text(
        "# Tombstones\n\nmemtui adds a line here...\n\n"
        '- MEMORY.md: when installing, the user said: "use uv, not pip" -> use uv\n'
    )
    baseline.reset_baseline(root, "older memtui")
    assert TOMBSTONES in baseline.run_git(root, "ls-files")
    add_output(ctx.conn, V7, FROZEN_NOW - 60, raw=RAW + "- a new learning about caching\n")
    _offline(ctx, auto_approve=True)
    assert not (root / TOMBSTONES).exists() and TOMBSTONES not in baseline.run_git(root, "ls-files")
    assert tombstones.count(ctx.conn) == 1
    text = (root / "MEMORY.md").read_text()
    assert "a new learning about caching" in text and '"use uv, not pip"' not in text


# --- renames and stable stems --------------------------------------------------------------------------------------


def test_a_slug_change_keeps_a_v7_threads_file_name(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, V7, FROZEN_NOW - 3600, raw=RAW, slug="fix_ci")
    _offline(ctx, auto_approve=True)
    before = _summaries(root)
    add_output(ctx.conn, V7, FROZEN_NOW - 60, raw=RAW, slug="a_completely_different_slug", summary="# new text")
    _offline(ctx)
    assert _summaries(root) == before == ["2025-02-11T15-35-19-jqmb-fix_ci.md"]
    run = review.pending_run(ctx.conn)
    assert (("M", f"{ROLLOUT_SUMMARIES}/{before[0]}")) in run.stat
    assert f"rollout_summary_file: {before[0]}" in (root / "raw_memories.md").read_text()
    assert f"{ROLLOUT_SUMMARIES}/{before[0]}" in (root / "MEMORY.md").read_text()


def test_a_v4_re_extraction_is_reported_as_a_rename(ctx):
    root = ctx.paths.memory_root
    add_output(ctx.conn, V4, FROZEN_NOW - 3600, raw=RAW, slug="fix_ci")
    add_output(ctx.conn, V7, FROZEN_NOW - 3600, raw=RAW, slug="other")
    _offline(ctx, auto_approve=True)
    (old,) = [n for n in _summaries(root) if "jqmb" not in n]
    add_output(ctx.conn, V4, FROZEN_NOW - 60, raw=RAW, slug="fix_ci_again")
    selected = get_phase2_input_selection(ctx.conn, 256, 30)
    sync_workspace(root, selected)
    changes = baseline.changes(root)
    (new,) = [n for n in _summaries(root) if "jqmb" not in n]
    assert old != new and ("D", f"{ROLLOUT_SUMMARIES}/{old}") in changes
    (rename,) = rollout_renames(root, changes)
    assert (rename.old, rename.new, rename.thread_id) == (
        f"{ROLLOUT_SUMMARIES}/{old}",
        f"{ROLLOUT_SUMMARIES}/{new}",
        V4,
    )


# --- rejections ----------------------------------------------------------------------------------------------------


def test_only_rejections_since_the_last_approval_with_the_files_the_run_wrote(ctx):
    def run(status, reason=None, stat=(), pre=None):
        ctx.conn.execute(
            # A decided run keeps the list of files it wrote, not their pre-run content.
            "INSERT INTO phase2_runs (status, started_at, reason, stat, written_files) VALUES (?, 0, ?, ?, ?)",
            (status, reason, json.dumps(list(stat)), json.dumps(sorted(pre)) if pre is not None else None),
        )

    run("rejected", "too old to matter", [("M", "MEMORY.md")])
    run("approved")
    run("rejected", "do not merge projects", [("M", "MEMORY.md"), ("M", "raw_memories.md")])
    run("rejected", None, [("M", "MEMORY.md"), ("A", "skills/x/SKILL.md")], pre={"skills/x/SKILL.md": None})
    got = rejections_since_last_approval(ctx.conn)
    assert [(r.run_id, r.reason, r.files) for r in got] == [
        (4, None, ("skills/x/SKILL.md",)),
        (3, "do not merge projects", ("MEMORY.md",)),
    ]


# --- forget and remember, offline ------------------------------------------------------------------------------------


def _m(thread: str, raw: str, updated: int, cwd: str = "/work/proj") -> Stage1Output:
    return Stage1Output(thread, updated, raw, f"# {thread}", "s", updated, None, None, cwd, "/r.jsonl", None, updated)


FORGET = (
    "### Task 1: cleanup\nExplicit memory requests:\n"
    '- forget: "forget what I said about pip" -> use uv, not pip [item 4]\n'
    '- remember: "the staging database is read-only on Fridays" [item 6]\n'
)


def test_offline_forget_deletes_older_support_keeps_newer_and_remember_is_verbatim():
    older, request = _m("a", RAW, 100), _m("b", FORGET, 200)
    newer = _m("c", 'Preference signals:\n- when installing, the user said: "use uv, not pip" -> use uv\n', 300)
    block = render_memory_block([older, request])
    assert '"use uv, not pip"' not in block and "TZ=UTC" in block
    assert "forget:" not in block and "forget what I said" not in block
    assert 'the user asked to remember: "the staging database is read-only on Fridays"' in block
    summary = render_summary([older, request])
    assert '"use uv, not pip"' not in summary and "read-only on Fridays" in summary
    assert '"use uv, not pip"' in render_memory_block([older, request, newer])  # said again later: kept


def test_forget_matching_needs_the_targets_words_not_one_of_them():
    f = Forgetting([_m("b", '- forget: "drop the docker thing" -> docker compose profiles\n', 200)])
    assert f.drops("use docker compose profiles for tests", 100)
    assert not f.drops("docker is installed", 100)  # one shared word is not the target
    assert not f.drops("use docker compose profiles for tests", 300)  # newer than the request
