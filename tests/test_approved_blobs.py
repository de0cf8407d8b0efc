"""A snapshot of the approved memory reads its blobs through one ``git cat-file --batch``, byte for byte as
``git cat-file blob`` gives them (an approve used to spawn a git process for every read of every file, four a file)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.approved import approved


def test_a_snapshot_reads_every_blob_with_one_git_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "memory"
    (root / "rollout_summaries").mkdir(parents=True)
    files = {
        "MEMORY.md": b"# Memory\n- use uv\n",
        "memory_summary.md": b"",  # empty
        "raw_memories.md": "caf\xe9 \xff not utf-8\n\n".encode("latin-1"),  # any bytes, trailing newlines kept
        **{f"rollout_summaries/s{i:03}.md": f"# Session {i}\n".encode() * (i + 1) for i in range(40)},
    }
    for rel, data in files.items():
        (root / rel).write_bytes(data)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "baseline"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, env={**env, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    snapshot = approved(root)
    assert set(snapshot.files) >= set(files), "not a usable baseline for this test"
    calls: list[list[str]] = []
    real = subprocess.run

    def counting(args: list[str], *a: object, **k: object) -> object:
        calls.append(list(args))
        return real(args, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(baseline.subprocess, "run", counting)
    for _ in range(3):  # a view reads each file more than once
        for rel, data in files.items():
            assert snapshot.read_bytes(rel) == data, rel
    assert len(calls) == 1 and "--batch" in calls[0]
    assert baseline.read_blobs(root, ["0" * 40]) == {}  # a blob the store does not hold is left out
