"""The forget trial: a marker planted in one rollout's user words, title and first prompt goes through every path
that can copy it (batch and sync Phase 1, Phase 2 with the HTTP agent and a CLI agent killed with -9, a left-out
hunk, a person deleting the marker line, a history restore, export, search, ``doctor --reset-state``, retention);
after ``forget`` and the next approved run, every byte under the home is scanned (file contents and names, the
database and its WAL read raw, set-aside databases, decompressed history versions and git objects, batch and work
folders). The forgotten marker is found 0 times while a second rollout's marker, planted the same way, is still
where it should be. The counts are printed (``pytest -s``)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from memtui.cli import main
from memtui.core import clock
from tests.conftest import FROZEN_NOW
from tests.fixtures.rollouts import write_claude_session
from tests.support.batch_server import VALID_OUTPUT, BatchServer, ok
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.support.waiting import HANG_GUARD, wait_until
from tests.test_backends import calls_of
from tests.test_backends import fake_clis as _fake_clis

GONE, KEEP = "QUOLLMARK8813", "WOMBATKEEP2271"
T_GONE = "7c1d2e3f-4a5b-4c6d-8e7f-000000000aaa"
T_KEEP = "7c1d2e3f-4a5b-4c6d-8e7f-000000000bbb"
SUMMARY = "v1\n## User Profile\n- a developer\n\n## User preferences\n- uv\n\n## General Tips\n- none\n\n## What's in Memory\n- shop-api\n"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def ok_cli(capsys, *args: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 0, (args, out, err)
    return out + err


def count_everywhere(home: Path, marker: str) -> dict[str, int]:
    """Occurrences of ``marker`` (as written, and lower-cased as in a file-name slug) per place under ``home``: each
    file's bytes and name, the decompressed history versions of every state database (live and set aside), and the
    objects of every git repository under the home (the memory root's, and a killed run's copy), decompressed by
    git."""
    needles = {marker.encode(), marker.lower().encode()}
    found: dict[str, int] = {}

    def add(place: str, data: bytes) -> None:
        n = sum(data.count(x) for x in needles)
        if n:
            found[place] = found.get(place, 0) + n

    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home).as_posix()
        add(f"name: {rel}", path.name.encode())
        if path.is_dir() and (path / "objects").is_dir() and (path / "HEAD").is_file():
            objects = subprocess.run(
                ["git", f"--git-dir={path}", "cat-file", "--batch-all-objects", "--batch"],
                capture_output=True,
                check=True,
            ).stdout
            add(f"{rel}: git objects (decompressed)", objects)
        if path.is_file() and not path.is_symlink():
            add(rel, path.read_bytes())
            if path.name.startswith("state.sqlite") and not path.name.endswith(("-wal", "-shm")):
                try:
                    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                    for (blob,) in conn.execute("SELECT data FROM history_snapshots"):
                        add(f"{rel}: history versions (decompressed)", zstandard.decompress(blob))
                    conn.close()
                except sqlite3.DatabaseError:
                    pass
    return found


KILL_BETWEEN_WRITE_AND_RENAME = """
import os, signal, sys
from pathlib import Path
from memtui.adapters.memroot import files
root = Path(sys.argv[1])
os.replace = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
files.write_if_changed(root / "MEMORY.md", (root / "MEMORY.md").read_text() + "- written when the process was killed\\n")
"""

KILL_WHILE_PUBLISHING = """
import os, shutil, signal, sys
from pathlib import Path
from memtui.adapters.memroot.approved import published_dir
from memtui.services import agent_view
root = Path(sys.argv[1])
link = published_dir(root)
shutil.rmtree(link.parent / os.readlink(link))  # the copy is built again, from the baseline, and killed
Path.rename = lambda self, target: os.kill(os.getpid(), signal.SIGKILL)
agent_view.publish(root)
"""


def _claude(claude: Path, session: str, marker: str, cwd: str) -> None:
    write_claude_session(
        claude,
        session_id=session,
        cwd=cwd,
        summary=f"Release tagging {marker}",  # the title
        # the first words name the summary file (its slug) and the preview
        user_messages=[f"{marker} release: the deploy broke. Always tag releases with {marker} before deploying."],
        assistant_messages=[f"Tagged the release {marker}."],
    )


@pytest.mark.slow
def test_forget_leaves_no_trace_of_a_rollout_on_any_path(
    isolated_env,
    capsys,
    frozen_clock,
    chat_server,
    agent_clis,
    monkeypatch,
    tmp_path,
):
    home = isolated_env["MEMTUI_HOME"]
    root = home / "memories"
    claude = isolated_env["CLAUDE_CONFIG_DIR"]
    _claude(claude, T_GONE, GONE, "/home/ana/src/infra")
    _claude(claude, T_KEEP, KEEP, "/home/ana/src/shop-api")
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
    ok_cli(capsys, "ingest")
    assert GONE in ok_cli(capsys, "search", GONE)  # user words indexed for search

    # Phase 1 through the Batch API: each result quotes its rollout's marker
    def answer(custom_id: str, body: dict) -> object:
        marker = GONE if custom_id.startswith(T_GONE) else KEEP
        raw = VALID_OUTPUT["raw_memory"] + f"- always tag releases with {marker} before deploying\n"
        return ok({**VALID_OUTPUT, "raw_memory": raw, "rollout_slug": f"tag-{marker.lower()}"})

    with BatchServer(answer) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
        monkeypatch.setenv("MEMTUI_PROVIDER", "openai")
        ok_cli(capsys, "phase1", "--batch", "--all")
        assert list((home / "batches").glob("*.jsonl")), "the request file holds the rollouts' text"
        assert "1 batch(es) finished" in ok_cli(capsys, "batch", "collect")
    assert not list((home / "batches").glob("*.jsonl")), "a collected batch's file is deleted"
    # synchronous Phase 1 over the same threads (offline extractor: the user's own words)
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
    for t in (T_GONE, T_KEEP):
        ok_cli(capsys, "phase1", "--thread", t)

    # Phase 2 with the HTTP agent: lines citing each rollout, one citing both
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("MEMTUI_PROVIDER", "openai")
    memory = (
        "# Task Group: /home/ana/src\nscope: releases\napplies_to: cwd=/home/ana/src; reuse_rule=always\n\n"
        f"## Task 1: tagging\n- tag releases with {GONE} (thread_id={T_GONE})\n"
        f"- tag releases with {KEEP} (thread_id={T_KEEP})\n"
        f"- releases are tagged before deploying (thread_id={T_GONE}, thread_id={T_KEEP})\n"
    )
    chat_server.script(
        reply_tool_calls(
            ("write_file", {"path": "MEMORY.md", "content": memory}),
            (
                "write_file",
                {
                    "path": "memory_summary.md",
                    "content": SUMMARY
                    + f"- tag releases with {GONE} (thread_id={T_GONE})\n- tag releases with {KEEP} (thread_id={T_KEEP})\n",
                },
            ),
        ),
        reply_text("wrote the memory"),
    )
    assert "awaiting review" in ok_cli(capsys, "phase2", "--force")
    ok_cli(capsys, "review", "approve")

    # a second HTTP run (a person's edit is new input) adds a line quoting the marker; that hunk is left out
    (root / "memory_summary.md").write_text((root / "memory_summary.md").read_text() + "- the staging host is blue\n")
    chat_server.script(
        reply_tool_calls(
            (
                "write_file",
                {"path": "MEMORY.md", "content": memory + f"- {GONE} is the hotfix tag (thread_id={T_GONE})\n"},
            ),
        ),
        reply_text("added a line"),
    )
    assert "awaiting review" in ok_cli(capsys, "phase2", "--force")
    hunks = json.loads(cli(capsys, "review", "show", "--json")[1])["hunks"]
    hotfix = next(h for h in hunks if "hotfix" in h["text"])
    ok_cli(capsys, "review", "approve", "--except", hotfix["id"], "--reason", "not a rule")

    # a person deletes the marker line by hand (new input for the next run)
    text = (root / "MEMORY.md").read_text()
    kept = [x for x in text.splitlines(keepends=True) if not x.startswith(f"- tag releases with {GONE} (thread_id=")]
    assert len(kept) < len(text.splitlines()), "the marker line (with any trust marker memtui gave it) is deleted"
    (root / "MEMORY.md").write_text("".join(kept))

    # Phase 2 through a CLI agent (the codex stand-in), killed with -9 mid-run: its copy of .git stays in work/
    env = {
        **os.environ,
        "MEMTUI_PROVIDER": "codex",
        "FAKE_AGENT_MODE": "hang",
        "MEMTUI_FROZEN_TIME": str(FROZEN_NOW),
        "MEMTUI_JOB_LEASE_SECONDS": "5",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memtui", "phase2", "--force"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # the stand-in runs (and hangs) in the run's finished copy of the memory root
        wait_until(lambda: calls_of(agent_clis), "the CLI agent", proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(HANG_GUARD)  # not communicate: the orphaned stand-in may still hold the pipes
    finally:
        if proc.poll() is None:
            proc.kill()
    killed_copy = count_everywhere(home, GONE)
    assert any(p.startswith("work/phase2-") for p in killed_copy), killed_copy
    clock.freeze(FROZEN_NOW + 10)  # the killed run's lease has expired

    # the next run bans the person's deletion (a tombstone) and recovers the killed run
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")
    ok_cli(capsys, "phase2", "--force")
    ok_cli(capsys, "review", "approve")
    assert not any((home / "work").glob("phase2-*")), "the next run removed the killed run's scratch"

    # history: bring back the first approved version (it holds the marker line) and approve the restore
    versions = json.loads(cli(capsys, "history", "--json")[1])["decisions"]
    first = min(d["id"] for d in versions if d["snapshot"])
    ok_cli(capsys, "history", "restore", str(first))
    ok_cli(capsys, "review", "approve")
    assert GONE in (root / "MEMORY.md").read_text()

    # export, search
    project = tmp_path / "project"
    project.mkdir()
    export = project / "CLAUDE.local.md"
    ok_cli(capsys, "export", "agents-md", str(export), "--scope", "global")
    export_before = export.read_text().count(GONE)
    assert GONE in ok_cli(capsys, "search", GONE)

    # reset the state database (the old one is set aside, holding the marker), rebuild, run retention
    ok_cli(capsys, "doctor", "--reset-state", "--yes")
    ok_cli(capsys, "ingest")
    ok_cli(capsys, "phase1", "--all")
    ok_cli(capsys, "retention")

    # two processes killed with -9 mid-write: an atomic write between its write and its rename, a publish of the
    # approved copy before its rename; each leaves a full-text temp copy behind
    for step in (KILL_BETWEEN_WRITE_AND_RENAME, KILL_WHILE_PUBLISHING):
        child = subprocess.run([sys.executable, "-c", step, str(root)], capture_output=True, text=True, check=False)
        assert child.returncode == -signal.SIGKILL, child.stderr
    temp_copies = sorted(p.name for p in [*root.glob(".*.tmp-*"), *home.glob(".memories-approved-*.tmp-*")])
    assert len(temp_copies) == 2, temp_copies

    before = count_everywhere(home, GONE)
    assert {"state.sqlite.broken-" in p for p in before} >= {True}, before
    assert sum(".tmp-" in p for p in before) >= 2, before
    assert any(p.startswith("memories/") for p in before) and "memories/.git: git objects (decompressed)" in before, (
        before
    )

    # forget, then the next approved run
    ok_cli(capsys, "forget", T_GONE, "--reason", "client work")
    assert "awaiting review" in ok_cli(capsys, "phase2", "--force")
    ok_cli(capsys, "review", "approve")
    ok_cli(capsys, "export", "agents-md", str(export), "--scope", "global")

    after = count_everywhere(home, GONE)
    kept = count_everywhere(home, KEEP)
    with capsys.disabled():  # the counts are printed (pytest -s), not written
        print(f"\nforget trial: '{GONE}' before forget: {sum(before.values())} in {len(before)} place(s)")
        for place, n in sorted(before.items()):
            print(f"  {n:>5}  {place}")
        print(f"forget trial: '{GONE}' after forget + approved run: {sum(after.values())} in {len(after)} place(s)")
        for place, n in sorted(after.items()):
            print(f"  {n:>5}  {place}")
        print(f"forget trial: '{KEEP}' (not forgotten): {sum(kept.values())} in {len(kept)} place(s)")
        for place, n in sorted(kept.items()):
            print(f"  {n:>5}  {place}")
        temps = {p: n for p, n in before.items() if ".tmp-" in p}
        print(
            f"forget trial: two kills mid-write left '{GONE}' {sum(temps.values())} time(s) in temp copies: {temp_copies}"
        )
        work = {p: n for p, n in killed_copy.items() if p.startswith("work/")}
        print(
            f"forget trial: the killed CLI run left '{GONE}' {sum(work.values())} time(s) in work/ ({len(work)} place(s))"
        )
        print(
            f"forget trial: the exported CLAUDE.local.md held '{GONE}' {export_before} time(s) before, "
            f"{export.read_text().count(GONE)} after"
        )
    assert after == {}, after
    assert not [*root.glob(".*.tmp-*"), *home.glob(".memories-approved-*.tmp-*")], "the temp copies were swept"
    assert export_before > 0 and export.read_text().count(GONE) == 0 and KEEP in export.read_text()
    assert kept.get("memories/MEMORY.md", 0) >= 1 and kept.get("memories/.git: git objects (decompressed)", 0), kept
    assert kept.get("state.sqlite", 0) + kept.get("state.sqlite-wal", 0) >= 1, kept
    assert KEEP in ok_cli(capsys, "search", KEEP)
    assert cli(capsys, "search", GONE)[0] == 1


agent_clis = _fake_clis  # the codex / claude stand-ins first on PATH


@pytest.fixture(autouse=True)
def _reset_clock():
    yield
    clock.reset()
