"""The read path: prompt rendering, middle truncation, the AGENTS.md section, loader-limit warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.services.export import (
    BEGIN_MARKER,
    END_MARKER,
    loader_warnings,
    read_path_template,
    render_prompt,
    splice_block,
    truncate_middle,
)
from memtui.services.export.cap import write_agents_md
from tests.conftest import approve_root

BEGINS = "========= MEMORY_SUMMARY BEGINS ========="
ENDS = "========= MEMORY_SUMMARY ENDS ========="


@pytest.fixture
def root() -> Path:
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    return root


def test_truncate_middle_keeps_head_and_tail_with_marker():
    assert truncate_middle("short", 10, 3.0) == ("short", 0)
    text = "a" * 500 + "z" * 500
    out, cut = truncate_middle(text, 100, 3.0)  # 300 bytes kept
    assert out.startswith("a" * 150) and out.endswith("z" * 150)
    assert cut == 234 and "…234 tokens truncated…" in out  # ceil(700 / 3)


def test_truncate_middle_cuts_on_character_boundaries():
    text = "é" * 100 + "漢" * 100  # 2-byte then 3-byte characters
    out, cut = truncate_middle(text, 20, 3.0)  # 60 bytes: 30 left, 30 right
    head, _, tail = out.partition("…")
    assert head == "é" * 15 and tail.endswith("漢" * 10) and cut > 0
    out, _ = truncate_middle("漢" * 50, 11, 3.0)  # left = 16 bytes -> 5 whole chars
    assert out.startswith("漢" * 5 + "…")


def test_template_is_package_data_with_both_placeholders():
    template = read_path_template()
    assert "{{ base_path }}" in template and "{{ memory_summary }}" in template
    assert "<oai-mem-citation>" in template and "do NOT open it again" in template


def test_render_prompt(root):
    assert render_prompt(root) is None  # no summary: agents get nothing
    (root / "memory_summary.md").write_text("\n\n   \n")
    approve_root(root)
    assert render_prompt(root) is None  # blank counts as none
    (root / "memory_summary.md").write_text("\nv1\n## shop-api: {{ base_path }} stays literal\n\n")
    approve_root(root)
    out = render_prompt(root)
    assert str(root.resolve()) in out and "{{" not in out.replace("{{ base_path }} stays", "")
    assert out.count(BEGINS) == 1 and out.count(ENDS) == 1
    assert f"{BEGINS}\nv1\n## shop-api: {{{{ base_path }}}} stays literal\n{ENDS}" in out


def test_render_prompt_truncates_summary_to_budget(root):
    (root / "memory_summary.md").write_text("v1\n" + "x" * 20_000 + "\nTAIL")
    approve_root(root)
    out = render_prompt(root, bytes_per_token=3.0)
    summary = out.split(BEGINS + "\n", 1)[1].split("\n" + ENDS, 1)[0]
    assert summary.startswith("v1\n") and summary.endswith("TAIL") and "tokens truncated…" in summary
    assert len(summary.encode()) < 7_500 + 40


def test_cli_export_prompt(root, capsys):
    assert main(["export", "prompt"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no memory summary" in captured.err
    (root / "memory_summary.md").write_text("v1\nhello\n")
    (root / "MEMORY.md").write_text("line\n" * 201)
    approve_root(root)
    assert main(["export", "prompt"]) == 0
    captured = capsys.readouterr()
    assert BEGINS in captured.out and "hello" in captured.out
    assert "MEMORY.md has 201 lines" in captured.err


def test_agents_md_created_then_unchanged_then_updated(root, tmp_path, capsys):
    (root / "memory_summary.md").write_text("v1\nalpha-summary\n")
    approve_root(root)
    target = tmp_path / "proj" / "AGENTS.md"
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    text = target.read_text()
    assert (
        text.startswith(BEGIN_MARKER + "\n## Memory") and text.endswith(END_MARKER + "\n") and "alpha-summary" in text
    )
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"created {target}", f"unchanged {target}"]
    (root / "memory_summary.md").write_text("v1\nbeta-summary\n")
    approve_root(root)
    assert write_agents_md(target, render_prompt(root)) == "updated"
    assert "beta-summary" in target.read_text() and "alpha-summary" not in target.read_text()


def test_agents_md_refresh_keeps_the_rest_byte_for_byte(tmp_path):
    before = b"# Project\r\n\r\nUse pnpm.\r\n"
    after = b"\r\n## Later\r\nno trailing newline \xff"  # CRLF, a non-UTF-8 byte, no final newline
    target = tmp_path / "CLAUDE.md"
    target.write_bytes(before + BEGIN_MARKER.encode() + b"\r\nold block\r\n" + END_MARKER.encode() + after)
    assert write_agents_md(target, "new\nblock") == "updated"
    assert target.read_bytes() == before + BEGIN_MARKER.encode() + b"\r\nnew\r\nblock\r\n" + END_MARKER.encode() + after
    assert write_agents_md(target, "new\nblock") == "unchanged"
    assert write_agents_md(target, None) == "updated"  # no summary any more: section emptied, markers kept
    assert target.read_bytes() == before + BEGIN_MARKER.encode() + b"\r\n" + END_MARKER.encode() + after


def test_agents_md_appends_section_to_a_file_without_markers(tmp_path):
    target = tmp_path / "AGENTS.md"
    target.write_bytes(b"# Rules\nno newline at end")
    write_agents_md(target, "block")
    data = target.read_bytes()
    assert data.startswith(b"# Rules\nno newline at end\n\n" + BEGIN_MARKER.encode())
    assert data.endswith(b"block\n" + END_MARKER.encode() + b"\n")
    write_agents_md(target, "block 2")
    assert target.read_bytes().count(BEGIN_MARKER.encode()) == 1
    assert splice_block("x\n", None) == "x\n"  # nothing to empty, nothing added
    assert write_agents_md(tmp_path / "absent.md", None) == "unchanged" and not (tmp_path / "absent.md").exists()


def test_loader_warnings(root):
    assert loader_warnings(root) == []
    (root / "memory_summary.md").write_text("x" * 7_500)  # 2,500 tokens at 3 B/token: at the limit
    (root / "MEMORY.md").write_text("line\n" * 200)
    approve_root(root)
    assert loader_warnings(root) == []
    (root / "memory_summary.md").write_text("x" * 7_503)
    (root / "MEMORY.md").write_text("y" * 26_000)
    approve_root(root)
    warnings = loader_warnings(root)
    assert len(warnings) == 2
    assert "memory_summary.md is about 2,501 tokens" in warnings[0] and "25 KB" in warnings[1]
