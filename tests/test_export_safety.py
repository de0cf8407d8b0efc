"""Export never deletes a person's text: a lone begin marker is an error naming its line, and a relative
``applies_to: cwd=.`` means the project the group was recorded in, not the directory export runs in."""

from __future__ import annotations

import pytest

from memtui.cli import main
from memtui.domain.scope import parse_memory, scoped_text
from memtui.services.export import BEGIN_MARKER, END_MARKER
from memtui.services.export.cap import write_agents_md


def test_a_lone_begin_marker_is_an_error_naming_the_line_and_nothing_is_written(tmp_path, capsys):
    target = tmp_path / "CLAUDE.local.md"
    mine = f"# My notes\n\n{BEGIN_MARKER}\n- old memtui text\n\n## My own section after it\n- keep me\n"
    target.write_text(mine)
    assert main(["export", "agents-md", str(target), "--scope", "global"]) == 1
    assert "line 3" in capsys.readouterr().err and target.read_text() == mine
    # Twice in a row, as the old export did: the second run replaced "keep me" with the block.
    assert main(["export", "agents-md", str(target), "--scope", "global"]) == 1
    assert "- keep me" in target.read_text()


@pytest.mark.parametrize(
    "text, line",
    [
        (f"a\n{END_MARKER}\nb\n", "line 2"),
        (f"{BEGIN_MARKER}\nx\n{END_MARKER}\n{BEGIN_MARKER}\ny\n{END_MARKER}\n", "begin on line 4"),
    ],
)
def test_markers_that_do_not_make_one_block_are_refused(tmp_path, text, line):
    from memtui.services.export import MarkerError

    target = tmp_path / "AGENTS.md"
    target.write_text(text)
    with pytest.raises(MarkerError, match=line):
        write_agents_md(target, "- new\n")
    assert target.read_text() == text


def test_a_complete_block_is_still_replaced_in_place(tmp_path):
    target = tmp_path / "AGENTS.md"
    target.write_text(f"mine\n{BEGIN_MARKER}\nold\n{END_MARKER}\nafter\n")
    assert write_agents_md(target, "- new\n") == "updated"
    assert target.read_text() == f"mine\n{BEGIN_MARKER}\n- new\n{END_MARKER}\nafter\n"


MEMORY = """# Memory

# Task Group: blog-engine
applies_to: cwd=.; reuse_rule=when working on the blog

## Task 1: new theme, success

### rollout_summary_files
- rollout_summaries/b.md (cwd={blog}, rollout_path=/x/b.jsonl, thread_id=b)

## Reusable knowledge
- BLOGONLY keep posts under 800 words [Task 1]
"""


def test_a_relative_applies_to_is_resolved_against_the_project_it_was_recorded_in(tmp_path, monkeypatch):
    shop, blog = tmp_path / "shop-api", tmp_path / "blog-engine"
    shop.mkdir()
    blog.mkdir()
    groups = parse_memory(MEMORY.format(blog=blog))
    monkeypatch.chdir(shop)  # exporting from another project must not pull the blog's group in
    assert scoped_text(groups, shop) is None
    assert "BLOGONLY" in (scoped_text(groups, blog) or "")
    assert groups[0].cwd == str(blog)


def test_a_relative_applies_to_with_no_recorded_project_belongs_to_none(tmp_path, monkeypatch):
    text = MEMORY.replace("- rollout_summaries/b.md (cwd={blog}, rollout_path=/x/b.jsonl, thread_id=b)\n", "")
    monkeypatch.chdir(tmp_path)
    groups = parse_memory(text)
    assert groups[0].cwd is None and scoped_text(groups, tmp_path) is None
