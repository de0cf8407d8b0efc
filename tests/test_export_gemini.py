"""``memtui export gemini-md``: the approved memory in Gemini CLI's context file (~/.gemini/GEMINI.md, or the name
``context.fileName`` gives), between memtui's markers, the person's own text kept; scoped as the other exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.adapters.sources.gemini import gemini_dir
from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.services.export import BEGIN_MARKER, END_MARKER
from tests.conftest import approve_root
from tests.test_export_scope import git

APPROVED = "APPROVEDMARKER deploys need the --blue flag"
PENDING = "PENDINGMARKER not reviewed yet"
MINE = "# My notes\n\nAnswer briefly.\n"


@pytest.fixture
def memory(isolated_env: dict[str, Path]) -> Path:
    shop = Path.home() / "src" / "shop"
    shop.mkdir(parents=True)
    git(shop, "init", "-q")
    root = resolve_paths().ensure().memory_root
    (root / "memory_summary.md").write_text(f"v1\n## What's in Memory\n- {APPROVED}\n")
    (root / "MEMORY.md").write_text(
        f"# Task Group: shop\nscope: the shop\napplies_to: cwd={shop}; reuse_rule=in the shop\n\n"
        "## Reusable knowledge\n- SHOPMARKER run make test [Task 1]\n"
    )
    approve_root(root)
    with (root / "memory_summary.md").open("a") as fh:  # written after the approval: pending review
        fh.write(f"- {PENDING}\n")
    return shop


def test_the_user_context_file_gets_the_whole_approved_block_and_keeps_the_person_s_text(memory, capsys):
    context = gemini_dir() / "GEMINI.md"
    context.parent.mkdir(parents=True)
    context.write_text(MINE)
    assert main(["export", "gemini-md"]) == 0
    out, err = capsys.readouterr()
    assert "scope global" in err and "a user-level file" in err and str(context) in out
    text = context.read_text()
    assert text.startswith(MINE) and text.count(BEGIN_MARKER) == 1 and text.count(END_MARKER) == 1
    assert APPROVED in text and PENDING not in text
    assert main(["export", "gemini-md"]) == 0 and context.read_text() == text  # idempotent


def test_context_file_name_from_gemini_settings_is_the_default(memory):
    gemini_dir().mkdir(parents=True)
    (gemini_dir() / "settings.json").write_text(json.dumps({"context": {"fileName": ["CONTEXT.md", "GEMINI.md"]}}))
    assert main(["export", "gemini-md"]) == 0
    assert APPROVED in (gemini_dir() / "CONTEXT.md").read_text() and not (gemini_dir() / "GEMINI.md").exists()


def test_project_scope_writes_the_project_s_context_file_with_its_memory_only(memory, capsys):
    assert main(["export", "gemini-md", "--project", str(memory)]) == 0
    assert "scope project" in capsys.readouterr().err
    text = (memory / "GEMINI.md").read_text()
    assert "SHOPMARKER" in text and APPROVED not in text and PENDING not in text  # not the all-projects summary


def test_a_broken_marker_block_is_refused_and_nothing_is_written(memory, capsys):
    context = gemini_dir() / "GEMINI.md"
    context.parent.mkdir(parents=True)
    context.write_text(MINE + BEGIN_MARKER + "\nmine now\n")
    assert main(["export", "gemini-md"]) == 1
    assert "no end marker" in capsys.readouterr().err
    assert context.read_text() == MINE + BEGIN_MARKER + "\nmine now\n"
