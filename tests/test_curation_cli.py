"""Curation through the CLI, on the real pipeline (ingest, offline Phase 1 and 2, git, SQLite):
hunks and ``approve --except``, the history with restore through review, and ``forget`` leaving nothing behind."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
import zstandard

from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY, RAW_MEMORIES
from memtui.cli import main
from memtui.services.context import open_context
from tests.conftest import approve_root
from tests.fixtures.rollouts import write_codex_rollout

MARKER = "ZEBRAQUARTZ4471"
T_KEEP = "019a0000-0000-7000-8000-00000000aaaa"
T_GONE = "019a0000-0000-7000-8000-00000000bbbb"
# The file a partial approve of the first run leaves out: without MEMORY.md or memory_summary.md the committed tree
# would fail the artifact validation of a full run, which a partial approve refuses.
LEFT_OUT = RAW_MEMORIES


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _home(isolated_env: dict[str, Path]) -> Path:
    return isolated_env["MEMTUI_HOME"]


@pytest.fixture
def pipeline(isolated_env, capsys, frozen_clock):
    return build_pipeline(isolated_env, capsys)


def build_pipeline(isolated_env, capsys, *, seed: dict[str, str] | None = None):
    """Two rollouts with durable user statements, extracted and consolidated offline, awaiting review.

    ``seed``: memory files a person wrote and committed before the first run, so the run's hunks change files that
    exist (a partial approval may then leave out a whole MEMORY.md hunk and still pass the artifact check)."""
    codex = isolated_env["CODEX_HOME"]
    write_codex_rollout(
        codex,
        thread_id=T_KEEP,
        cwd="/home/ana/src/shop-api",
        user_messages=["The checkout tests fail on CI. Always run the tests with TZ=UTC in this repo."],
    )
    write_codex_rollout(
        codex,
        thread_id=T_GONE,
        cwd="/home/ana/src/infra",
        user_messages=[f"The deploy broke. Always tag releases with {MARKER} before deploying to production."],
    )
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    code, out, err = cli(capsys, "--set", "provider=offline", "phase1", "--all")
    assert code == 0, err
    if seed:
        root = isolated_env["MEMTUI_HOME"] / "memories"
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in seed.items():
            (root / rel).write_text(text)
        approve_root(root)  # the person's own files, committed as the baseline before the first run
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert code == 0 and "awaiting review" in out, out + err
    return isolated_env


def show_json(capsys) -> dict:
    code, out, err = cli(capsys, "review", "show", "--json")
    assert code == 0, err
    return json.loads(out)


def test_review_show_json_lists_hunks_with_ids_ranges_hashes_text_and_evidence(pipeline, capsys):
    data = show_json(capsys)
    assert data["stat"] and data["diff"]
    hunks = data["hunks"]
    files = {h["file"] for h in hunks}
    assert {MEMORY_MD, MEMORY_SUMMARY} <= files
    for h in hunks:
        assert len(h["id"]) == 10 and len(h["content_hash"]) == 64 and h["text"].startswith("@@")
        assert {"old_start", "old_count", "new_start", "new_count"} <= set(h)
    memory = next(h for h in hunks if h["file"] == MEMORY_MD)
    threads = {e["thread_id"] for e in memory["evidence"]}
    assert threads == {T_KEEP, T_GONE}  # a new MEMORY.md: both tasks' rollout_summary_files
    for e in memory["evidence"]:
        assert e["rollout_summary_file"].startswith("rollout_summaries/") and "score" in e and "excerpt" in e
    # ids are stable: a second show agrees
    assert [h["id"] for h in show_json(capsys)["hunks"]] == [h["id"] for h in hunks]


def test_approve_except_leaves_a_generated_input_out_for_now_and_remembers_nothing(pipeline, capsys):
    """Issue 33.2: raw_memories.md is rendered from the memories at every run. Leaving its hunk out keeps it out of
    this baseline and says so; it is not remembered as a rejection (which kept every raw preference out of
    MEMORY.md and memory_summary.md in later runs), and the next run renders it again."""
    home = _home(pipeline)
    root = home / "memories"
    data = show_json(capsys)
    memory_hunks = [h for h in data["hunks"] if h["file"] == MEMORY_MD]
    summary_hunks = [h for h in data["hunks"] if h["file"] == LEFT_OUT]
    assert len(memory_hunks) == 1  # a new file is one hunk
    # Approve everything except raw_memories.md's hunk: the file stays as in the baseline (absent).
    leave = summary_hunks[0]["id"]
    listed = cli(capsys, "review", "show", "--hunks")[1]
    said = listed.split(leave, 1)[1].split("\n")[1]
    assert said.strip() == "--except: left out for now; the next run renders it again (nothing remembered)"
    code, out, err = cli(capsys, "review", "approve", "--except", leave[:7], "--reason", "summary is too vague")
    assert code == 0, err
    assert "1 left out" in out and "raw_memories.md not published now: the next run renders it again" in out
    assert "remembered as rejected" not in out
    assert (root / MEMORY_MD).is_file() and not (root / LEFT_OUT).exists()
    committed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert MEMORY_MD in committed and LEFT_OUT not in committed
    conn = sqlite3.connect(home / "state.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM rejected_hunks").fetchone()[0] == 0
    decision = conn.execute("SELECT kind, hunks_in, hunks_out, reason, tree FROM decisions").fetchone()
    assert decision[0] == "partial_approve" and decision[3] == "summary is too vague" and len(decision[4]) == 40
    assert [h["id"] for h in json.loads(decision[2])] == [leave]  # the history still says it was left out
    assert cli(capsys, "review", "rejections")[1].startswith("No remembered rejections")
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert "awaiting review" in out, out + err
    again = show_json(capsys)
    assert [h["file"] for h in again["hunks"]] == [LEFT_OUT]  # rendered again, and nothing else changes
    assert not any(line.startswith("-") for h in again["hunks"] for line in h["text"].split("\n")[1:])


def _new_rollout(capsys, codex: Path, thread_id: str, text: str, cwd: str = "/home/ana/src/shop-api") -> None:
    write_codex_rollout(codex, thread_id=thread_id, cwd=cwd, user_messages=[text])
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    assert cli(capsys, "--set", "provider=offline", "phase1", "--all")[0] == 0
    _code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert "awaiting review" in out, out + err


def test_a_rejected_line_does_not_come_back_in_the_next_offline_run(pipeline, capsys):
    home = _home(pipeline)
    root = home / "memories"
    codex = pipeline["CODEX_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    _new_rollout(capsys, codex, "019a0000-0000-7000-8000-00000000cccc", "Lockfile noise. Always use pnpm, never npm.")
    hunks = [h for h in show_json(capsys)["hunks"] if h["file"] == MEMORY_MD]
    bad = next(h for h in hunks if any("never npm" in a for a in h["text"].split("\n") if a.startswith("+")))
    line = next(a[1:] for a in bad["text"].split("\n") if a.startswith("+") and "never npm" in a)
    assert cli(capsys, "review", "approve", "--except", bad["id"], "--reason", "we moved to bun")[0] == 0
    assert "never npm" not in (root / MEMORY_MD).read_text()
    # The next run is a full offline regeneration from every selected memory, the rejected one included.
    _new_rollout(capsys, codex, "019a0000-0000-7000-8000-00000000dddd", "Docs build. Always build docs with mkdocs.")
    text = (root / MEMORY_MD).read_text()
    assert "mkdocs" in text  # the run did regenerate the block
    assert "never npm" not in text, line
    assert all("never npm" not in h["text"] for h in show_json(capsys)["hunks"] if h["file"] == MEMORY_MD)
    # the agent prompt lists it as "do not re-learn", with the reason
    from memtui.services.review.decide import do_not_relearn_lines

    ctx = open_context()
    section = "\n".join(do_not_relearn_lines(ctx.conn))
    ctx.close()
    assert "never npm" in section and "we moved to bun" in section


def test_a_rejection_that_acts_is_named_in_the_review_and_lifting_it_lets_the_line_back(pipeline, capsys):
    """Issue 33.2: the review of a later run says which line a remembered rejection kept out, when it was made and
    how to lift it; `review rejections` lists it, `review lift` lifts it (on the record), and the next run may
    propose the line again."""
    home = _home(pipeline)
    root = home / "memories"
    codex = pipeline["CODEX_HOME"]
    assert cli(capsys, "review", "approve")[0] == 0
    _new_rollout(capsys, codex, "019a0000-0000-7000-8000-00000000cccc", "Lockfile noise. Always use pnpm, never npm.")
    bad = next(h for h in show_json(capsys)["hunks"] if h["file"] == MEMORY_MD and "never npm" in h["text"])
    assert cli(capsys, "review", "approve", "--except", bad["id"], "--reason", "we moved to bun")[0] == 0
    code, out, _ = cli(capsys, "review", "rejections")
    rid = int(out.split()[0])
    assert code == 0 and "MEMORY.md" in out and "never npm" in out and "we moved to bun" in out
    listed = json.loads(cli(capsys, "review", "rejections", "--json")[1])["rejections"]
    assert [r["id"] for r in listed] == [rid] and listed[0]["file"] == MEMORY_MD
    assert not any(line.lstrip("- ").startswith("## Task") for line in listed[0]["added"])  # structure stays

    _new_rollout(capsys, codex, "019a0000-0000-7000-8000-00000000dddd", "Docs build. Always build docs with mkdocs.")
    code, _out, err = cli(capsys, "review", "show", "--stat")
    assert 'MEMORY.md: left out \'- the user said: "Always use pnpm, never npm."' in err, err
    assert "because you rejected it on 2026-07-10 (run 2)" in err and f"`memtui review lift {rid}`" in err
    assert any(f"memtui review lift {rid}" in n for n in show_json(capsys)["rejections_acted"])

    code, out, _ = cli(capsys, "review", "lift", str(rid))
    assert code == 0 and f"lifted rejection #{rid}" in out
    assert cli(capsys, "review", "lift", str(rid))[0] == 1  # lifted once
    kinds = [d["kind"] for d in json.loads(cli(capsys, "history", "--json")[1])["decisions"]]
    assert kinds[0] == "lift"
    assert cli(capsys, "review", "approve")[0] == 0
    _new_rollout(capsys, codex, "019a0000-0000-7000-8000-00000000eeee", "Lint. Always run ruff before committing.")
    assert "never npm" in (root / MEMORY_MD).read_text()  # proposed again
    assert "left out" not in cli(capsys, "review", "show", "--stat")[2]


def test_history_lists_decisions_shows_a_version_and_restore_goes_through_review(pipeline, capsys):
    home = _home(pipeline)
    root = home / "memories"
    assert cli(capsys, "review", "approve")[0] == 0
    first = (root / MEMORY_MD).read_text()
    (root / MEMORY_MD).write_text(first + "\n- a person's own line\n")
    assert cli(capsys, "review", "approve")[0] == 1  # nothing awaits review
    ctx = open_context()
    from memtui.services.phase2.review import commit_manual_edit

    commit_manual_edit(ctx, "my note")
    ctx.close()
    code, out, _ = cli(capsys, "history", "--json")
    decisions = json.loads(out)["decisions"]
    assert [d["kind"] for d in decisions] == ["manual_commit", "approve"]
    assert all(d["snapshot"] and len(d["tree"]) == 40 for d in decisions)
    v1 = decisions[1]["id"]
    code, out, _ = cli(capsys, "history")
    assert "manual commit" in out and "approve run #" in out
    code, out, _ = cli(capsys, "history", "show", str(v1))
    assert code == 0 and "-- a person's own line" in out  # restoring v1 would remove the manual line
    code, out, err = cli(capsys, "history", "restore", str(v1))
    assert code == 0 and "awaiting review" in out, err
    assert (root / MEMORY_MD).read_text() == first  # in the workspace, not committed
    head = subprocess.run(["git", "show", "HEAD:MEMORY.md"], cwd=root, capture_output=True, text=True).stdout
    assert "a person's own line" in head
    data = show_json(capsys)
    assert data["kind"] == "restore" and [s[1] for s in data["stat"]] == [MEMORY_MD]
    code, out, _ = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert "skipped: awaiting review" in out  # a restore blocks Phase 2 like any run awaiting review
    code, out, _ = cli(capsys, "review", "reject", "--reason", "changed my mind")
    assert code == 0 and (root / MEMORY_MD).read_text() == first + "\n- a person's own line\n"
    assert cli(capsys, "history", "restore", str(v1))[0] == 0
    assert cli(capsys, "review", "approve")[0] == 0
    head = subprocess.run(["git", "show", "HEAD:MEMORY.md"], cwd=root, capture_output=True, text=True).stdout
    assert head == first
    kinds = [d["kind"] for d in json.loads(cli(capsys, "history", "--json")[1])["decisions"]]
    assert kinds[:2] == ["restore", "reject"]
    code, out, _ = cli(capsys, "history", "purge")
    assert code == 0 and "dropped 3" in out
    code, _, err = cli(capsys, "history", "show", str(v1))
    assert code == 1 and "no snapshot" in err


def test_history_versions_bounds_the_snapshots_and_zero_keeps_none(pipeline, capsys):
    home = _home(pipeline)
    (home / "config.toml").write_text('history_versions = 1\nprovider = "offline"\n')
    assert cli(capsys, "review", "approve")[0] == 0
    root = home / "memories"
    ctx = open_context()
    from memtui.services.phase2.review import commit_manual_edit

    for i in range(3):
        (root / MEMORY_MD).write_text((root / MEMORY_MD).read_text() + f"- note {i}\n")
        commit_manual_edit(ctx, f"note {i}")
    assert ctx.conn.execute("SELECT COUNT(*) FROM history_snapshots").fetchone()[0] == 1
    ctx.close()
    (home / "config.toml").write_text('history_versions = 0\nprovider = "offline"\n')
    ctx = open_context()
    (root / MEMORY_MD).write_text((root / MEMORY_MD).read_text() + "- note x\n")
    commit_manual_edit(ctx, "note x")
    assert ctx.conn.execute("SELECT COUNT(*) FROM history_snapshots").fetchone()[0] == 0
    assert ctx.conn.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 5
    ctx.close()


def scan_home(home: Path, marker: str) -> list[str]:
    """Every place under ``home`` that still holds ``marker``: files as bytes, the decompressed history snapshots,
    and every git object (reachable or not), decompressed by git itself."""
    found = []
    conn = sqlite3.connect(home / "state.sqlite")
    for (data,) in conn.execute("SELECT data FROM history_snapshots"):
        if marker.encode() in zstandard.ZstdDecompressor().decompress(data):
            found.append("history snapshot")
    conn.close()
    for path in home.rglob("*"):
        if path.is_file() and marker.encode() in path.read_bytes():
            found.append(str(path.relative_to(home)))
    root = home / "memories"
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True, check=True
    ).stdout
    if marker.encode() in objects:
        found.append("git objects")
    return found


def test_forget_removes_everything_derived_from_a_rollout_after_the_next_run_is_approved(pipeline, capsys):
    home = _home(pipeline)
    root = home / "memories"
    assert cli(capsys, "review", "approve")[0] == 0
    # More history holding the marker: a manual commit (a second snapshot) and an old run record.
    (root / MEMORY_MD).write_text((root / MEMORY_MD).read_text() + "- a person's note about shop-api\n")
    ctx = open_context()
    from memtui.services.phase2.review import commit_manual_edit

    commit_manual_edit(ctx, "note")
    ctx.close()
    before = scan_home(home, MARKER)
    assert "state.sqlite" in " ".join(before) or "history snapshot" in before
    assert "git objects" in before and any(p.startswith("memories/") for p in before)  # the test can fail

    code, out, err = cli(capsys, "forget", T_GONE, "--reason", "client work, must not be remembered")
    assert code == 0 and f"forgot {T_GONE}" in out, err
    conn = sqlite3.connect(home / "state.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM stage1_outputs WHERE thread_id=?", (T_GONE,)).fetchone()[0] == 0
    conn.close()
    # never extracted again, even when forced
    code, out, err = cli(capsys, "--set", "provider=offline", "phase1", "--thread", T_GONE, "--json")
    assert json.loads(out)["succeeded"] == 0
    code, out, err = cli(capsys, "--set", "provider=offline", "phase2", "--force")
    assert "awaiting review" in out, out + err
    assert MARKER not in (root / MEMORY_MD).read_text()
    data = show_json(capsys)
    removals = [h for h in data["hunks"] if h["file"] == MEMORY_MD and MARKER in h["text"]]
    assert removals and all(MARKER not in a for h in removals for a in h["text"].split("\n") if a[:1] in " +")
    assert cli(capsys, "review", "approve")[0] == 0
    # a later re-ingest of the (changed) rollout file does not bring its words back
    gone_file = next(isolated for isolated in (pipeline["CODEX_HOME"] / "sessions").rglob(f"*{T_GONE}.jsonl"))
    gone_file.write_text(gone_file.read_text())
    import os

    os.utime(gone_file, (gone_file.stat().st_mtime + 10, gone_file.stat().st_mtime + 10))
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    assert cli(capsys, "--set", "provider=offline", "phase1", "--all")[0] == 0
    conn = sqlite3.connect(home / "state.sqlite")
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    conn.close()
    assert scan_home(home, MARKER) == []
    # the other rollout's memory is intact
    assert "TZ=UTC" in (root / MEMORY_MD).read_text()
    # history says what happened
    kinds = [d["kind"] for d in json.loads(cli(capsys, "history", "--json")[1])["decisions"]]
    assert kinds[:2] == ["approve", "forget"]
    # undo lifts the mark: Phase 1 may extract it again
    code, out, _ = cli(capsys, "forget", "--undo", T_GONE)
    assert code == 0
    assert cli(capsys, "--set", "provider=offline", "ingest")[0] == 0
    code, out, _ = cli(capsys, "--set", "provider=offline", "phase1", "--thread", T_GONE, "--json")
    assert json.loads(out)["succeeded"] == 1


def test_forget_refuses_unknown_threads_and_a_pending_review(pipeline, capsys):
    code, _, err = cli(capsys, "forget", "no-such-thread")
    assert code == 1 and "no rollout" in err
    code, _, err = cli(capsys, "forget", T_GONE)
    assert code == 1 and "awaits review" in err


def test_partial_approve_is_pinned_to_the_reviewed_tree(pipeline, capsys):
    root = _home(pipeline) / "memories"
    data = show_json(capsys)
    summary = next(h for h in data["hunks"] if h["file"] == LEFT_OUT)["id"]
    reviewed_memory, reviewed_summary = (root / MEMORY_MD).read_text(), (root / LEFT_OUT).read_text()
    (root / MEMORY_MD).write_text(reviewed_memory + "- sneaked in after the review\n")
    code, _, err = cli(capsys, "review", "approve", "--except", summary)
    assert code == 1 and "changed since run" in err  # the gate holds for a partial approve too
    (root / LEFT_OUT).write_text("v1\n- a person's summary\n")
    code, _, err = cli(capsys, "review", "approve", "--except", summary, "--include-changes")
    assert code == 1 and "cannot be applied" in err  # a decided file changed: its hunks are not what was seen
    (root / LEFT_OUT).write_text(reviewed_summary)  # undo that edit; the MEMORY.md one is approved knowingly
    code, _out, err = cli(capsys, "review", "approve", "--except", summary, "--include-changes")
    assert code == 0, err
    head = subprocess.run(["git", "show", "HEAD:MEMORY.md"], cwd=root, capture_output=True, text=True).stdout
    assert head.endswith("- sneaked in after the review\n")
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout
    assert LEFT_OUT not in listing and not (root / LEFT_OUT).exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert status == ""  # the root is exactly the committed tree


def test_a_partial_approve_cut_short_before_its_commit_finishes_when_run_again(pipeline, capsys, monkeypatch):
    from memtui.adapters.memroot import baseline

    root = _home(pipeline) / "memories"
    summary = next(h for h in show_json(capsys)["hunks"] if h["file"] == LEFT_OUT)["id"]
    real = baseline.commit_tree

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies between writing the root and committing

    monkeypatch.setattr(baseline, "commit_tree", killed)
    with pytest.raises(KeyboardInterrupt):
        from memtui.services.phase2 import review

        ctx = open_context()
        try:
            review.approve(ctx, except_ids=[summary], reason="vague")
        finally:
            ctx.close()
    assert not (root / LEFT_OUT).exists()  # the root already shows the decision
    monkeypatch.setattr(baseline, "commit_tree", real)
    code, _out, err = cli(capsys, "review", "approve", "--except", summary, "--reason", "vague")
    assert code == 0, err
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout
    assert MEMORY_MD in listing and LEFT_OUT not in listing
