"""Codex reads only the first 32 KiB of AGENTS.md (project_doc_max_bytes): the memtui block is never the part cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.services.export import BEGIN_MARKER, END_MARKER, render_prompt, summary_budget_bytes
from memtui.services.export.cap import PROJECT_DOC_MAX_BYTES, fit_agents_md, write_agents_md
from tests.conftest import approve_root

CAP = PROJECT_DOC_MAX_BYTES


@pytest.fixture
def root() -> Path:
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    return root


def _summary(root: Path, size: int) -> None:
    body = "".join(f"- topic {i}: keyword{i}, another{i}\n" for i in range(size // 30))
    (root / "memory_summary.md").write_text("v1\n## User Profile\n- dev\n" + body[:size])
    approve_root(root)


def _block_end(text: str) -> int:
    return len(text[: text.index(END_MARKER) + len(END_MARKER)].encode())


def test_small_files_are_unchanged_and_claude_md_is_never_capped(root):
    _summary(root, 2000)
    block = render_prompt(root)
    fit = fit_agents_md("AGENTS.md", "# Project\n", block)
    assert fit.warnings == [] and fit.text.startswith("# Project\n")
    big = "# Notes\n" + "x" * 40_000 + "\n"
    fit = fit_agents_md("CLAUDE.md", big, block)
    assert fit.warnings == [] and fit.text.startswith(big)


def test_summary_is_trimmed_so_the_block_stays_whole_inside_the_cap(root):
    _summary(root, summary_budget_bytes())  # the most export keeps: about 7.5 KB
    block = render_prompt(root)
    person = "# Project rules\n" + "- a rule of this project\n" * ((CAP - 8_000) // 25)
    fit = fit_agents_md("AGENTS.md", person, block)
    assert _block_end(fit.text) <= CAP < len(person.encode()) + len(block.encode())
    assert fit.text.startswith(person) and "cut to fit Codex's 32 KiB AGENTS.md limit" in fit.text
    assert "trimmed in the middle" in fit.warnings[0] and "project_doc_max_bytes" in fit.warnings[0]
    assert "Citing memory" in fit.text and "========= MEMORY_SUMMARY ENDS =========" in fit.text


def test_block_moves_to_the_top_when_the_persons_text_fills_the_cap(root, tmp_path, capsys):
    _summary(root, 3000)
    person = "# Big AGENTS.md\n" + "- an instruction line of this repository\n" * 1000  # ~41 KB
    target = tmp_path / "AGENTS.md"
    target.write_text(person)
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    text = target.read_text()
    assert text.startswith(BEGIN_MARKER) and _block_end(text) <= CAP
    assert text.endswith(person) and text.count(BEGIN_MARKER) == 1  # the person's bytes are all there, after it
    err = capsys.readouterr().err
    assert "moved to the top of the file" in err and "are not loaded" in err
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0  # refreshing keeps it on top, once
    assert target.read_text() == text


def test_text_after_the_block_being_cut_is_only_a_warning(root):
    _summary(root, 2000)
    block = render_prompt(root)
    existing = f"# Top\n{BEGIN_MARKER}\nold\n{END_MARKER}\n" + "- trailing rule\n" * 2500
    fit = fit_agents_md("AGENTS.md", existing, block)
    assert fit.text.startswith("# Top\n" + BEGIN_MARKER) and _block_end(fit.text) <= CAP
    assert "after the memtui block, are not loaded" in fit.warnings[0]


def test_write_agents_md_reports_warnings(root, tmp_path):
    _summary(root, 3000)
    target = tmp_path / "AGENTS.md"
    target.write_text("x" * 40_000 + "\n")
    seen: list[str] = []
    assert write_agents_md(target, render_prompt(root), warn=seen.append) == "updated"
    assert len(seen) == 1 and "32,768" in seen[0]
