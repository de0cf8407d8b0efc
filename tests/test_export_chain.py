"""The whole AGENTS.md chain Codex loads (global file, repository root down to the folder) shares one
project_doc_max_bytes budget; memtui's block fits in what the files before it leave, and an AGENTS.override.md
beside the target is reported as hiding it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.services.export import END_MARKER
from memtui.services.export.cap import PROJECT_DOC_MAX_BYTES
from memtui.services.export.chain import measure_chain
from tests.test_export_cap import _summary


@pytest.fixture
def repo(tmp_path) -> Path:
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    _summary(root, 6000)
    repo = tmp_path / "repo"
    (repo / "svc").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("# repo rules\n" + "- a rule of this repository, kept short\n" * 400)  # ~16 KB
    codex_home = resolve_paths().codex_home
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "AGENTS.md").write_text("# mine\n" + "- a global instruction line\n" * 300)  # ~8.7 KB
    return repo


def _block_end(text: str) -> int:
    return len(text[: text.index(END_MARKER) + len(END_MARKER)].encode())


def test_the_block_fits_in_what_the_chain_leaves(repo, capsys):
    target = repo / "svc" / "AGENTS.md"
    target.write_text("# svc\n- run make svc-test\n")
    chain = measure_chain(target, resolve_paths().codex_home, repo)
    used = (repo / "AGENTS.md").stat().st_size + (resolve_paths().codex_home / "AGENTS.md").stat().st_size
    assert [f.path.name for f in chain.before] == [
        "AGENTS.md",
        "AGENTS.md",
    ] and chain.cap == PROJECT_DOC_MAX_BYTES - used
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    text = target.read_text()
    assert _block_end(text) <= chain.cap  # loaded whole, after the global file and the repository's
    err = capsys.readouterr().err
    assert f"leaving {chain.cap:,} bytes" in err and f"{used:,} of its {PROJECT_DOC_MAX_BYTES:,}-byte" in err
    assert "trimmed in the middle" in err


def test_a_block_that_cannot_fit_is_a_warning_with_numbers(repo, capsys):
    (repo / "AGENTS.md").write_text("# repo rules\n" + "- a rule of this repository, kept short\n" * 580)  # ~23 KB
    target = repo / "svc" / "AGENTS.md"
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    err = capsys.readouterr().err
    assert "the memtui block is" in err and "Codex loads only its first" in err


def test_project_doc_max_bytes_from_codex_config_is_the_budget(repo):
    codex_home = resolve_paths().codex_home
    (codex_home / "config.toml").write_text("project_doc_max_bytes = 65536\n")
    chain = measure_chain(repo / "svc" / "AGENTS.md", codex_home, repo)
    assert chain.budget == 65536 and chain.cap > 30_000


def test_an_override_beside_the_target_is_reported(repo, capsys):
    (repo / "svc" / "AGENTS.override.md").write_text("# temporary rules\n")
    target = repo / "svc" / "AGENTS.md"
    assert main(["export", "agents-md", "--scope", "global", str(target)]) == 0
    assert "AGENTS.override.md exists, and Codex reads it instead of AGENTS.md" in capsys.readouterr().err
    # an override higher up replaces that folder's AGENTS.md in the chain
    (repo / "AGENTS.override.md").write_text("# short override\n")
    chain = measure_chain(target, resolve_paths().codex_home, repo)
    assert repo / "AGENTS.override.md" in [f.path for f in chain.before]


def test_claude_md_is_not_measured(repo):
    assert measure_chain(repo / "CLAUDE.md", resolve_paths().codex_home, repo) is None
