"""Workspace files: stems (§8.3 vector), raw_memories.md / summaries format and order, the diff file, validation."""

from __future__ import annotations

import os

from memtui.adapters.memroot.files import DIFF_FILENAME, write_if_changed
from memtui.core import clock
from memtui.domain.stems import rollout_summary_file_stem
from memtui.services.phase2.workspace import (
    render_diff_file,
    render_raw_memories,
    sync_workspace,
    validate_artifacts,
)
from memtui.state.selection import Stage1Output

VECTOR_ID = "0194f5a6-89ab-7cde-8123-456789abcdef"
PREFIX = "2025-02-11T15-35-19-jqmb"


def out(
    thread_id: str, ts: int = 1_783_684_800, slug: str | None = "fix_ci", branch: str | None = None, **kw
) -> Stage1Output:
    fields = {
        "raw_memory": f"\n  raw memory of {thread_id}\n\n",
        "rollout_summary": f"summary of {thread_id}",
        "rollout_slug": slug,
        "generated_at": ts,
        "usage_count": None,
        "last_usage": None,
        "cwd": f"/work/{thread_id}",
        "rollout_path": f"/rollouts/{thread_id}.jsonl",
        "git_branch": branch,
        "fresh_at": ts,
    }
    fields.update(kw)
    return Stage1Output(thread_id=thread_id, source_updated_at=ts, **fields)


def test_rollout_summary_file_stem_uses_uuid_timestamp_and_hash_when_slug_missing():
    assert rollout_summary_file_stem(VECTOR_ID, 123, None) == PREFIX


def test_rollout_summary_file_stem_sanitizes_and_truncates_slug():
    stem = rollout_summary_file_stem(
        VECTOR_ID, 123, "Unsafe Slug/With Spaces & Symbols + EXTRA_LONG_12345_67890_ABCDE_fghij_klmno"
    )
    slug = stem.removeprefix(PREFIX + "-")
    assert len(slug) == 60
    assert slug == "unsafe_slug_with_spaces___symbols___extra_long_12345_67890_a"


def test_rollout_summary_file_stem_when_slug_is_empty_or_only_symbols():
    assert rollout_summary_file_stem(VECTOR_ID, 123, "") == PREFIX
    assert rollout_summary_file_stem(VECTOR_ID, 123, "///") == PREFIX


def test_rollout_summary_file_stem_v4_and_non_uuid_use_source_updated_at():
    v4 = "8c5e2c2a-5a3b-4c8d-9e0f-0123456789ab"
    assert rollout_summary_file_stem(v4, 1_783_684_800, None).startswith("2026-07-10T12-00-00-")
    seed = 0
    for b in b"claude-session-1":
        seed = (seed * 31 + b) & 0xFFFF_FFFF
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    v, chars = seed % 62**4, []
    for _ in range(4):
        chars.append(alphabet[v % 62])
        v //= 62
    assert rollout_summary_file_stem("claude-session-1", 0, "x") == f"1970-01-01T00-00-00-{''.join(reversed(chars))}-x"


def test_raw_memories_format_and_thread_id_order():
    text = render_raw_memories([out("b-thread", 100), out("a-thread", 200)])
    assert text.startswith(
        "# Raw Memories\n\nMerged stage-1 raw memories (stable ascending thread-id order):\n\n## Thread `a-thread`\n"
    )
    assert text.index("## Thread `a-thread`") < text.index("## Thread `b-thread`")
    block = text.split("## Thread `a-thread`\n", 1)[1].split("\n## Thread", 1)[0]
    stem = rollout_summary_file_stem("a-thread", 200, "fix_ci")
    assert block == (
        f"updated_at: {clock.iso(200)}\ncwd: /work/a-thread\nrollout_path: /rollouts/a-thread.jsonl\n"
        f"rollout_summary_file: {stem}.md\n\nraw memory of a-thread\n"
    )
    assert render_raw_memories([]) == "# Raw Memories\n\nNo raw memories yet.\n"


def test_sync_keeps_latest_memories_only_and_rewrites_nothing_unchanged(tmp_path):
    root = tmp_path / "mem"
    (root / "rollout_summaries").mkdir(parents=True)
    (root / "rollout_summaries" / "a-thread.md").write_text("old thread-id-only name")
    (root / "rollout_summaries" / "notes.txt").write_text("not markdown: kept")
    sync_workspace(root, [out("a-thread", branch="main")])
    files = sorted(p.name for p in (root / "rollout_summaries").iterdir())
    stem = rollout_summary_file_stem("a-thread", 1_783_684_800, "fix_ci")
    assert files == [f"{stem}.md", "notes.txt"]
    body = (root / "rollout_summaries" / f"{stem}.md").read_text()
    assert body == (
        "thread_id: a-thread\nupdated_at: 2026-07-10T12:00:00+00:00\nrollout_path: /rollouts/a-thread.jsonl\n"
        "cwd: /work/a-thread\ngit_branch: main\n\nsummary of a-thread\n"
    )
    raw = (root / "raw_memories.md").read_text()
    assert "a-thread" in raw and "cwd: /work/a-thread" in raw and f"rollout_summary_file: {stem}.md" in raw
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*.md")}
    os.utime(root / "raw_memories.md", ns=(1, 1))
    stats = sync_workspace(root, [out("a-thread", branch="main")])
    assert stats == {"summaries_written": 0, "summaries_deleted": 0, "raw_rewritten": 0, "pruned": 0}
    assert (root / "raw_memories.md").stat().st_mtime_ns == 1  # same bytes: not rewritten
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.md") if p.name != "raw_memories.md"} == {
        p: t for p, t in before.items() if p.name != "raw_memories.md"
    }


def test_write_if_changed(tmp_path):
    p = tmp_path / "f.md"
    assert write_if_changed(p, "x") and not write_if_changed(p, "x") and write_if_changed(p, "y")


def test_prune_old_extension_resources(tmp_path, frozen_clock):
    root = tmp_path / "mem"
    res = root / "extensions" / "chronicle" / "resources"
    res.mkdir(parents=True)
    (root / "extensions" / "chronicle" / "instructions.md").write_text("x")
    (res / "2026-07-02T12-00-00-old.md").write_text("8 days")
    (res / "2026-07-03T12-00-00-cutoff.md").write_text("exactly 7 days")
    (res / "2026-07-04T12-00-00-new.md").write_text("6 days")
    (res / "undated.md").write_text("kept")
    other = root / "extensions" / "noinstr" / "resources"
    other.mkdir(parents=True)
    (other / "2020-01-01T00-00-00-x.md").write_text("no instructions.md: kept")
    assert sync_workspace(root, [])["pruned"] == 2
    assert sorted(p.name for p in res.iterdir()) == ["2026-07-04T12-00-00-new.md", "undated.md"]
    assert (other / "2020-01-01T00-00-00-x.md").exists()


def test_render_workspace_diff_file_none_and_bounded():
    assert render_diff_file([], "") == (
        "# Memory Workspace Diff\n\nGenerated by memtui before Phase 2 memory consolidation. "
        "Read this file first and do not edit it.\n\n## Status\n- none\n"
    )
    big = "+" + "é" * 3_000_000 + "\n"
    text = render_diff_file([("M", "MEMORY.md")], big)
    assert "## Status\n- M MEMORY.md\n" in text
    assert "\n[workspace diff truncated at 4194304 bytes]\n" in text
    assert text.endswith("```\n")
    assert len(text.encode()) < 4 * 1024 * 1024 + 1000
    text.encode("utf-8")  # the cut kept whole characters


def test_validate_consolidation_artifacts(tmp_path):
    assert "MEMORY.md" in validate_artifacts(tmp_path)
    (tmp_path / "MEMORY.md").mkdir()
    assert "MEMORY.md" in validate_artifacts(tmp_path)
    (tmp_path / "MEMORY.md").rmdir()
    (tmp_path / "MEMORY.md").write_text("# m\n")
    assert "memory_summary.md" in validate_artifacts(tmp_path)
    (tmp_path / "memory_summary.md").write_text("v2\n## User Profile\n")
    assert "v1" in validate_artifacts(tmp_path)
    (tmp_path / "memory_summary.md").write_text(" v1\n")
    assert validate_artifacts(tmp_path) is not None
    (tmp_path / "memory_summary.md").write_text("v1\n## User Profile\n")
    assert validate_artifacts(tmp_path) is None
    assert DIFF_FILENAME == "phase2_workspace_diff.md"


def test_the_sync_manifest_only_saves_work_never_skips_a_needed_write(tmp_path, monkeypatch) -> None:
    """A no-change sync with the manifest renders and reads nothing; any change on disk or in the row is written."""
    import memtui.services.phase2.workspace as workspace

    root, manifest = tmp_path / "memories", tmp_path / "phase2_sync.json"
    rows = [out(f"t-{i}") for i in range(5)]
    assert sync_workspace(root, rows, manifest)["summaries_written"] == 5
    folder = root / "rollout_summaries"
    files = sorted(folder.iterdir())
    rendered: list[str] = []
    real = workspace.render_rollout_summary
    monkeypatch.setattr(workspace, "render_rollout_summary", lambda m: rendered.append(m.thread_id) or real(m))
    assert sync_workspace(root, rows, manifest)["summaries_written"] == 0
    assert rendered == []  # nothing rendered or compared: the manifest matched every file
    # a person's edit of one file (another size), a changed row, a lost manifest: each is written back
    files[0].write_text("edited by hand\n")
    changed = [*rows[:1], out("t-1", rollout_summary="a new summary of t-1"), *rows[2:]]
    assert sync_workspace(root, changed, manifest)["summaries_written"] == 2
    assert sorted(rendered) == ["t-0", "t-1"]
    assert files[0].read_text() == real(rows[0]) and "a new summary" in files[1].read_text()
    manifest.write_text("{cut sho")
    rendered.clear()
    assert sync_workspace(root, changed, manifest)["summaries_written"] == 0
    assert len(rendered) == 5  # without a readable manifest every file is compared by its bytes
    # the same size and content but touched: compared by bytes, not rewritten
    rendered.clear()
    os.utime(files[2], ns=(1, 1))
    assert sync_workspace(root, changed, manifest)["summaries_written"] == 0
    assert rendered == ["t-2"]
