"""`memtui demo` builds a home that shows every state a reviewer should meet, with no secret in it."""

import json
import sqlite3
import subprocess

from memtui.cli import main
from memtui.demo.build import build_demo_home

PLANTED = [
    "sk_live_51HxQwErTy0123456789abcdefGHIJ",
    "sk-proj-Zx81kLmN0pQrStUvWxYz0123456789AbCdEf",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_R2d2C3poL0ngT0kenValue1234567890abcd",
]


def test_demo_home_reaches_awaiting_review_offline(tmp_path):
    demo = build_demo_home(tmp_path / "demo")
    assert demo.status.skipped_files_by_reason == {"corrupt zstd stream": 1}
    assert demo.status.threads == 10 and demo.status.citations == 1
    assert (demo.phase1.succeeded, demo.phase1.noop, demo.phase1.failed) == (5, 1, 1)
    assert demo.phase1.offline and sum(demo.phase1.redactions.values()) >= 3
    assert demo.approved.status == "approved" and demo.phase2.outcome == "awaiting_review"
    memory = (demo.home / "memories" / "MEMORY.md").read_text()
    assert "# Task Group: /home/ana/src/shop-api" in memory and "TZ=UTC" in memory
    assert (demo.home / "memories" / "memory_summary.md").read_text().startswith("v1\n")
    conn = sqlite3.connect(demo.home / "state.sqlite")
    # the later session cites the checkout memory: counted as usage of that stage-1 row
    uses = conn.execute("SELECT usage_count FROM stage1_outputs WHERE thread_id LIKE '019e0a1b%'").fetchone()[0]
    assert uses == 1
    assert conn.execute("SELECT last_error FROM jobs WHERE status='error'").fetchone()[0].startswith("cannot read")
    # Injected text in the Claude sample (compaction summary, /cost, interrupt) is never the user's words.
    memories = " ".join(r[0] for r in conn.execute("SELECT raw_memory FROM stage1_outputs"))
    assert "127.0.0.1:8001" in memories and "production on every commit" not in memories
    title = conn.execute("SELECT title FROM threads WHERE id='7c1e2f3a-4b5c-4d6e-8f70-81920a1b2c3d'").fetchone()[0]
    assert title == "Docs site local preview"  # its own summary line, not the other session's


def test_no_planted_secret_anywhere_in_the_demo_home(tmp_path):
    demo = build_demo_home(tmp_path / "demo")
    sqlite3.connect(demo.home / "state.sqlite").execute("PRAGMA wal_checkpoint(TRUNCATE)")
    blobs = [p.read_bytes() for p in demo.home.rglob("*") if p.is_file()]
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=demo.home / "memories",
        capture_output=True,
        check=True,
    ).stdout
    for secret in PLANTED:
        assert not any(secret.encode() in blob for blob in [*blobs, objects]), secret
    # the rollouts themselves (outside the home) still hold them: the test would catch a no-op
    assert any(PLANTED[0].encode() in p.read_bytes() for p in (tmp_path / "demo" / "rollouts").rglob("*.jsonl"))


def test_demo_command_without_tui_prints_a_summary(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "d"), "--no-tui"]) == 0
    out = capsys.readouterr().out
    assert "awaiting review" in out and "5 memories, 1 no-op, 1 failed" in out
    assert main(["--home", str(tmp_path / "d" / "home"), "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["phase2"]["awaiting_review"] is True and status["outputs"] == 5


def test_a_demo_built_months_after_its_samples_still_consolidates_every_memory(tmp_path):
    """Sessions are dated by their transcripts; the demo moves the samples' dates so the newest is a day old.

    Without that, a demo built long after July 2026 saw every memory but the cited one as unused for months: Phase 2
    selected one memory and retention deleted the rest.
    """
    from memtui.core import clock

    clock.freeze(1_804_000_000)  # 2027-03-01
    try:
        demo = build_demo_home(tmp_path / "demo")
        conn = sqlite3.connect(demo.home / "state.sqlite")
        newest = conn.execute("SELECT MAX(updated_at) FROM threads").fetchone()[0]
        assert 0 < clock.now_s() - newest <= 2 * 86_400
        assert conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == 5  # none pruned
    finally:
        clock.reset()
    memory = (demo.home / "memories" / "MEMORY.md").read_text()
    assert "# Task Group: /home/ana/src/shop-api" in memory and "# Task Group: /home/ana/src/docs-site" in memory
