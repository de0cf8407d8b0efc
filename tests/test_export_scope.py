"""Scoped export and lint: a project's AGENTS.md gets that project's memory only, and lint finds what would leak."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.domain.scope import parse_memory, scoped_text
from memtui.services.export.scope import resolve_target
from memtui.services.lint import lint_memory
from tests.conftest import approve_root


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def projects() -> dict[str, Path]:
    home = Path.home()
    shop, blog = home / "src" / "shop-api", home / "src" / "blog-engine"
    for p in (shop, blog):
        p.mkdir(parents=True)
        git(p, "init", "-q")
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "memory_summary.md").write_text("v1\n## What's in Memory\n- SUMMARYMARKER of every project\n")
    (root / "MEMORY.md").write_text(
        f"""# Memory

# Task Group: shop-api
scope: the shop API
applies_to: cwd={shop}; reuse_rule=when working in the shop API

## Task 1: fixed the CI cache, success

### rollout_summary_files
- rollout_summaries/a.md (cwd={shop}, rollout_path={home}/.codex/sessions/a.jsonl, thread_id=a)

## User preferences
- the user wants pnpm, not npm [Task 1]

## Reusable knowledge
- run `make test-api` from {shop} [Task 1]

# Task Group: blog-engine
scope: the blog
applies_to: cwd={blog}; reuse_rule=when working on the blog

## Task 2: new theme, success

## User preferences
- the user likes terse commit messages [global] [Task 1] [Task 2]
- BLOGONLYPREF keep posts under 800 words [Task 2]

## Reusable knowledge
- BLOGSECRETWORD: deploys go through the preview site [Task 2]
- copied the lint config from {shop}/.eslintrc [Task 2]

# Task Group: User-level preferences
scope: how the user works everywhere
applies_to: global; reuse_rule=always

## User preferences
- answer in British English [Task 1] [Task 2]
- always use uv for Python [Task 2]

# Task Group: loose notes
scope: misc
- NOAPPLIESMARKER something
"""
    )
    approve_root(root)
    return {"home": home, "shop": shop, "blog": blog, "root": root}


def test_project_scope_is_the_default_inside_a_git_work_tree(projects, capsys):
    target = projects["shop"] / "AGENTS.md"
    assert main(["export", "agents-md", str(target)]) == 0
    err = capsys.readouterr().err
    assert "scope project" in err and "git work tree" in err
    text = target.read_text()
    assert "pnpm" in text and "make test-api" in text  # the project's own group
    assert "British English" in text and "terse commit messages" in text  # user-level preferences
    for foreign in ("BLOGSECRETWORD", "BLOGONLYPREF", "blog-engine", "NOAPPLIESMARKER", "SUMMARYMARKER"):
        assert foreign not in text  # never another project's group, nor the all-projects summary
    assert str(projects["home"]) not in text  # no absolute path under the home...
    assert "~/src/shop-api" in text
    assert "PROJECT_MEMORY BEGINS" in text


def test_other_projects_paths_are_masked_and_no_home_path_leaks(projects):
    groups = parse_memory((projects["root"] / "MEMORY.md").read_text())
    text = scoped_text(groups, projects["blog"])
    assert "BLOGSECRETWORD" in text and "pnpm" not in text
    assert "[another project]/.eslintrc" in text and "shop-api" not in text
    assert str(projects["home"]) not in text


def test_a_tracked_target_needs_allow_tracked(projects, capsys):
    target = projects["shop"] / "AGENTS.md"
    target.write_text("# Team rules\n")
    git(projects["shop"], "add", "AGENTS.md")
    git(projects["shop"], "commit", "-q", "-m", "rules")
    assert main(["export", "agents-md", str(target)]) == 2
    err = capsys.readouterr().err
    assert "tracked by git" in err and "--allow-tracked" in err and "CLAUDE.local.md" in err
    assert target.read_text() == "# Team rules\n"  # untouched
    local = projects["shop"] / "CLAUDE.local.md"
    assert main(["export", "agents-md", str(local)]) == 0  # untracked: fine
    assert main(["export", "agents-md", "--allow-tracked", str(target)]) == 0
    assert "pnpm" in target.read_text() and target.read_text().startswith("# Team rules\n")


def test_global_scope_is_the_default_for_the_user_level_files(projects, isolated_env, capsys):
    for target in (isolated_env["CODEX_HOME"] / "AGENTS.md", isolated_env["CLAUDE_CONFIG_DIR"] / "CLAUDE.md"):
        assert main(["export", "agents-md", str(target)]) == 0
        assert "scope global" in capsys.readouterr().err
        assert "SUMMARYMARKER" in target.read_text()  # the whole read-path block


def test_a_folder_outside_git_defaults_to_its_own_project(projects, tmp_path):
    paths = resolve_paths()
    target = resolve_target(tmp_path / "loose" / "AGENTS.md", paths)
    assert target.scope == "project" and target.project == (tmp_path / "loose").resolve()
    explicit = resolve_target(tmp_path / "loose" / "AGENTS.md", paths, project=projects["blog"])
    assert explicit.scope == "project" and explicit.project == projects["blog"].resolve()


def test_export_prompt_with_project_prints_the_scoped_block(projects, capsys):
    assert main(["export", "prompt", "--project", str(projects["blog"])]) == 0
    out = capsys.readouterr().out
    assert "BLOGSECRETWORD" in out and "make test-api" not in out and "British English" in out
    assert str(projects["home"]) not in out
    assert main(["export", "prompt", "--project", str(projects["home"] / "elsewhere")]) == 0
    assert "British English" in capsys.readouterr().out  # a new project still gets the user-level preferences


def test_lint_flags_the_three_kinds(projects, capsys):
    findings = lint_memory(projects["root"])
    rules = {(f.rule, f.group) for f in findings}
    assert ("cross_project", "blog-engine") in rules  # mentions shop-api's path
    assert ("global_single_project", "User-level preferences") in rules  # "always use uv" from Task 2 only
    assert ("no_applies_to", "loose notes") in rules
    assert not any(f.rule == "cross_project" and f.group == "shop-api" for f in findings)
    single = [f for f in findings if f.rule == "global_single_project"]
    assert len(single) == 1 and "uv" in single[0].message  # British English has evidence from both projects
    assert main(["lint", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert {d["rule"] for d in data} == {"cross_project", "global_single_project", "no_applies_to"}
    assert all(d["file"] == "MEMORY.md" and d["line"] > 0 for d in data)


def test_lint_clean_memory_exits_zero(capsys):
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Task Group: x\napplies_to: cwd=/work/x; reuse_rule=always\n")
    approve_root(root)
    assert main(["lint"]) == 0
    assert "no findings" in capsys.readouterr().out


def test_lint_flags_another_projects_folder_name():
    from memtui.services.lint import lint_groups

    groups = parse_memory(
        "# Task Group: shop\napplies_to: cwd=/work/shop-api; reuse_rule=x\n- copied the setup from blog-engine\n\n"
        "# Task Group: blog\napplies_to: cwd=/work/blog-engine; reuse_rule=x\n- a src folder and docs, nothing else\n"
    )
    findings = lint_groups(groups, ["/work/shop-api", "/work/blog-engine", "/work/src"])
    assert [(f.rule, f.group, f.line) for f in findings] == [("cross_project", "shop", 3)]  # generic names ignored


def test_a_memory_root_under_the_home_is_exported_as_a_tilde_path(projects, monkeypatch):
    home_memtui = projects["home"] / ".memtui"
    monkeypatch.setenv("MEMTUI_HOME", str(home_memtui))
    root = home_memtui / "memories"
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text((projects["root"] / "MEMORY.md").read_text())
    approve_root(root)
    from memtui.services.export.scope import render_project_prompt

    text = render_project_prompt(root, projects["shop"])
    assert "~/.memtui/memories" in text and str(projects["home"]) not in text
