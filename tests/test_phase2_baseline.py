"""The git baseline with real git: one parentless commit, A/M/D diff, recovery, memtui's own identity, no hooks."""

from __future__ import annotations

import os
import stat

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import DIFF_FILENAME
from tests.test_phase2_support import git_commits, git_objects


def test_reset_creates_fresh_one_commit_baseline_with_memtui_identity(tmp_path):
    root = tmp_path / "mem"
    root.mkdir()
    (root / "a.md").write_text("a\n")
    first = baseline.reset_baseline(root)
    (root / "a.md").write_text("secret that will be deleted\n")
    baseline.reset_baseline(root)
    (root / "a.md").write_text("a2\n")
    second = baseline.reset_baseline(root)
    assert first != second
    assert (
        baseline.run_git(root, "log", "--format=%an <%ae>|%cn <%ce>|%P").strip()
        == "memtui <memtui@localhost>|memtui <memtui@localhost>|"
    )
    assert git_commits(root) == [second]
    assert "secret that will be deleted" not in git_objects(root)


def test_diff_reports_added_modified_and_deleted_files(tmp_path):
    root = tmp_path / "mem"
    root.mkdir()
    (root / "keep.md").write_text("k\n")
    (root / "mod.md").write_text("1\n2\n3\n")
    (root / "gone.md").write_text("bye\n")
    (root / "sub").mkdir()
    (root / "sub" / "x.md").write_text("x\n")
    baseline.ensure_baseline(root)
    assert baseline.changes(root) == []
    (root / "mod.md").write_text("1\nTWO\n3\n")
    (root / "gone.md").unlink()
    (root / "new file é.md").write_text("n\n")
    (root / DIFF_FILENAME).write_text("never part of the workspace")
    os.chmod(root / "keep.md", os.stat(root / "keep.md").st_mode | stat.S_IXUSR)
    found, diff = baseline.stat_and_diff(root)
    assert found == [("D", "gone.md"), ("M", "keep.md"), ("M", "mod.md"), ("A", "new file é.md")]
    assert "-2\n+TWO\n" in diff and "deleted file mode 100644" in diff and "new file mode 100644" in diff
    assert "old mode 100644\nnew mode 100755" in diff
    assert DIFF_FILENAME not in diff


def test_ensure_recovers_from_unusable_git_dirs(tmp_path):
    root = tmp_path / "mem"
    (root / ".git").mkdir(parents=True)  # empty .git dir
    (root / "MEMORY.md").write_text("m\n")
    baseline.ensure_baseline(root)
    assert baseline.changes(root) == []
    (root / ".git" / "HEAD").write_text("ref: refs/heads/nowhere\n")  # unborn HEAD
    baseline.ensure_baseline(root)
    assert baseline.changes(root) == [] and baseline.is_usable(root)
    (root / ".git" / "HEAD").write_text("garbage")  # corrupt
    assert not baseline.is_usable(root)
    commit = baseline.ensure_baseline(root)
    assert baseline.head_commit(root) == commit and baseline.changes(root) == []
    assert baseline.ensure_baseline(root) == commit  # a usable repo is kept


def test_git_ignores_user_config_hooks_and_enclosing_repos(tmp_path, monkeypatch):
    home = tmp_path / "user-home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (hooks / "pre-commit").chmod(0o755)
    (home / ".gitconfig").write_text(
        f"[core]\n\thooksPath = {hooks}\n[user]\n\tname = Someone Else\n[commit]\n\tgpgsign = true\n"
    )
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # an enclosing repo must never be used
    outer = tmp_path / "outer"
    outer.mkdir()
    root = outer / "mem"
    root.mkdir()
    (root / "a.md").write_text("a\n")
    baseline.reset_baseline(root)
    assert baseline.run_git(root, "log", "--format=%an").strip() == "memtui"
    assert (root / ".git").is_dir() and not (tmp_path / "elsewhere").exists()
