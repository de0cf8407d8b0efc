"""Exports into Claude Code's memory files: two files one session loads are never both given the memory silently,
a CLAUDE.local.md memtui creates stays out of git, and the auto memory index keeps its one-line-pointer shape."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from memtui.cli import main
from memtui.services.export.claude_files import TOPIC_FILE, project_slug
from tests.conftest import approve_root
from tests.test_export_scope import git, projects  # noqa: F401  (the fixture: two projects, an approved memory)


def test_a_second_file_claude_loads_with_the_first_is_refused_without_force(projects, capsys):  # noqa: F811
    shop = projects["shop"]
    assert main(["export", "agents-md", str(shop / "CLAUDE.md")]) == 0
    capsys.readouterr()
    local = shop / "CLAUDE.local.md"
    assert main(["export", "agents-md", str(local)]) == 2
    err = capsys.readouterr().err
    assert f"Claude Code loads {shop / 'CLAUDE.md'} together with {local}" in err and "--force" in err
    assert not local.exists()
    assert main(["export", "agents-md", "--force", str(local)]) == 0
    assert "warning: Claude Code loads" in capsys.readouterr().err and "pnpm" in local.read_text()
    assert main(["export", "agents-md", str(shop / "CLAUDE.md")]) == 2  # either way round
    assert main(["export", "agents-md", "--force", str(shop / "CLAUDE.md")]) == 0  # refreshing the same file is fine


def test_the_user_file_and_a_project_file_are_loaded_together(projects, isolated_env, capsys):  # noqa: F811
    user = isolated_env["CLAUDE_CONFIG_DIR"] / "CLAUDE.md"
    assert main(["export", "agents-md", str(user)]) == 0
    capsys.readouterr()
    assert main(["export", "agents-md", str(projects["blog"] / "CLAUDE.local.md")]) == 2
    assert f"Claude Code loads {user}" in capsys.readouterr().err


def test_an_emptied_section_elsewhere_is_no_duplicate(projects, capsys):  # noqa: F811
    shop = projects["shop"]
    (shop / "CLAUDE.md").write_text("# rules\n<!-- memtui:memory:begin -->\n<!-- memtui:memory:end -->\n")
    assert main(["export", "agents-md", str(shop / "CLAUDE.local.md")]) == 0


def test_a_created_claude_local_md_is_excluded_from_git(projects, capsys):  # noqa: F811
    shop = projects["shop"]
    assert main(["export", "agents-md", str(shop / "CLAUDE.local.md")]) == 0
    err = capsys.readouterr().err
    exclude = shop / ".git" / "info" / "exclude"
    assert "/CLAUDE.local.md" in exclude.read_text().splitlines()
    assert f"added /CLAUDE.local.md to {exclude}" in err
    status = subprocess.run(["git", "status", "--porcelain"], cwd=shop, capture_output=True, text=True, check=True)
    assert "CLAUDE.local.md" not in status.stdout
    assert not (shop / ".gitignore").exists()  # the team's ignore file is not edited


def test_a_claude_local_md_git_already_ignores_is_not_added_again(projects, capsys):  # noqa: F811
    blog = projects["blog"]
    (blog / ".gitignore").write_text("CLAUDE.local.md\n")
    exclude = blog / ".git" / "info" / "exclude"
    before = exclude.read_text() if exclude.exists() else ""
    assert main(["export", "agents-md", str(blog / "CLAUDE.local.md")]) == 0
    assert (exclude.read_text() if exclude.exists() else "") == before
    assert "info/exclude" not in capsys.readouterr().err


# ---- the auto memory index ------------------------------------------------------------------------------------


def auto_memory(claude_dir: Path, project: Path, *, session: bool = True) -> Path:
    """``projects/<slug>/memory/MEMORY.md`` as Claude Code keeps it: an index of one-line pointers, with a session
    transcript of the project beside the memory folder (what tells memtui which project it is)."""
    folder = claude_dir / "projects" / project_slug(project)
    (folder / "memory").mkdir(parents=True)
    if session:
        line = {"type": "user", "sessionId": "s1", "cwd": str(project), "message": {"role": "user", "content": "hi"}}
        (folder / "3f0c2b1a-0000-4000-8000-000000000001.jsonl").write_text(json.dumps(line) + "\n")
    index = folder / "memory" / "MEMORY.md"
    index.write_text("- [Testing](testing.md) — run the suite with pytest -q\n")
    return index


def _index_lines(index: Path) -> list[str]:
    text = index.read_text()
    inside = text.split("<!-- memtui:memory:begin -->\n", 1)[1].split("<!-- memtui:memory:end -->", 1)[0]
    return inside.splitlines()


def test_export_into_the_auto_memory_index_writes_one_pointer_and_a_topic_file(projects, isolated_env, capsys):  # noqa: F811
    index = auto_memory(isolated_env["CLAUDE_CONFIG_DIR"], projects["shop"])
    assert main(["export", "agents-md", str(index)]) == 0
    assert "scope project" in capsys.readouterr().err
    assert index.read_text().startswith("- [Testing](testing.md) — run the suite with pytest -q\n")  # Claude's own
    [pointer] = _index_lines(index)
    assert pointer.startswith(f"- [memtui memory]({TOPIC_FILE}) — ")
    topic = (index.parent / TOPIC_FILE).read_text()
    assert "pnpm" in topic and "BLOGSECRETWORD" not in topic  # the project the sessions beside it belong to
    assert "<!-- memtui:scope project ~/src/shop-api -->" in topic


def test_an_export_without_project_never_empties_an_earlier_one(projects, isolated_env, capsys):  # noqa: F811
    index = auto_memory(isolated_env["CLAUDE_CONFIG_DIR"], projects["shop"])
    assert main(["export", "agents-md", "--project", str(projects["shop"]), str(index)]) == 0
    assert main(["export", "agents-md", str(index)]) == 0  # the same project, told from its sessions
    assert "pnpm" in (index.parent / TOPIC_FILE).read_text() and len(_index_lines(index)) == 1
    root = projects["root"]  # now a memory with nothing for the blog (no user-level preferences either)
    (root / "MEMORY.md").write_text(
        f"# Memory\n\n# Task Group: shop-api\nscope: the shop API\napplies_to: cwd={projects['shop']}\n\n"
        "## Reusable knowledge\n- always pnpm\n"
    )
    approve_root(root)
    empty = projects["blog"]
    capsys.readouterr()
    assert main(["export", "agents-md", "--project", str(empty), str(index)]) == 1
    assert "holds an export with project ~/src/shop-api, which is kept" in capsys.readouterr().err
    assert "pnpm" in (index.parent / TOPIC_FILE).read_text() and len(_index_lines(index)) == 1


def test_an_auto_memory_index_of_an_unknown_project_is_refused(projects, isolated_env, capsys):  # noqa: F811
    index = auto_memory(isolated_env["CLAUDE_CONFIG_DIR"], projects["blog"], session=False)
    before = index.read_text()
    assert main(["export", "agents-md", str(index)]) == 2
    assert "--project DIR" in capsys.readouterr().err
    assert index.read_text() == before and not (index.parent / TOPIC_FILE).exists()
