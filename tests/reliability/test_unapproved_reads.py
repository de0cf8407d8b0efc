"""Nothing reaches an agent that a person did not approve: Phase 2 runs whose agent (HTTP tools, codex, claude) writes
allowed and forbidden files (``.gitignore``, dotfiles, ``tombstones.md``...), each line a counted marker, then every
agent read path (export in each form, search, each MCP tool and resource) while the run is pending and after reject.

The figure: agent reads made, bytes of unapproved text planted, bytes of it served (must be 0). A positive control
(the approved marker is served) keeps the count from passing vacuously.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from tests.agent_reads import agent_reads
from tests.conftest import FROZEN_NOW
from tests.reliability import figures
from tests.support.chat_server import reply_text, reply_tool_calls
from tests.test_backends import fake_clis  # noqa: F401  (fixture)
from tests.test_phase2_support import add_output, context

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"
WORD = "quokkaunapproved"  # every unapproved line carries it: one search finds them all
APPROVED = "wombatapproved"
ALLOWED = ["MEMORY.md", "memory_summary.md", "skills/ci/SKILL.md"]
FORBIDDEN = [".gitignore", "skills/.gitignore", ".env", "skills/ci/.hidden.md", "tombstones.md", "raw_memories.md",
             "notes.md", ".hidden/x.md"]  # fmt: skip
FILES = ["MEMORY.md", "memory_summary.md", "skills/ci/SKILL.md", *FORBIDDEN]


def _line(rel: str) -> str:
    return f"- {WORD} line written to {rel}\n"


def _contents(root: Path, rels: list[str]) -> dict[str, str]:
    """What the agent writes: the file as it is plus one marker line (a .gitignore hiding everything near it)."""
    out = {}
    for rel in rels:
        path = root / rel
        before = (
            path.read_text() if path.is_file() else ("---\nname: ci\ndescription: x\n---\n" if "SKILL" in rel else "")
        )
        out[rel] = before + ("*\n" if rel.endswith(".gitignore") else "") + _line(rel)
    return out


def _served(reads: dict[str, str]) -> int:
    """Bytes of unapproved text in what the read paths served (each marker line counted in full)."""
    return sum(text.count(WORD) * len(_line("x")) for text in reads.values())


def _approved_memory(ctx) -> None:
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw=f"- {APPROVED} rule the person approved")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- another session")


def _check(ctx, out: Path, planted: int, stage: str, counts: dict[str, int]) -> None:
    reads = agent_reads(ctx, out / stage, WORD, FILES)
    served = _served(reads)
    counts["reads"] += len(reads)
    counts["served_bytes"] += served
    assert served == 0, {k: v for k, v in reads.items() if WORD in v}
    control = agent_reads(ctx, out / f"{stage}-control", APPROVED, ["MEMORY.md"])
    assert APPROVED in control["export prompt --project"] and APPROVED in control["search"]


def _exported_during(out: Path) -> int:
    return sum(p.read_text().count(WORD) for p in out.rglob("CLAUDE-*.md"))


def test_http_agent_pending_and_rejected_runs_serve_no_unapproved_byte(frozen_clock, model_env, tmp_path):
    counts = {"reads": 0, "served_bytes": 0}
    with figures.trial("unapproved reads", faults=2) as t:
        ctx = context()
        _approved_memory(ctx)
        root = ctx.paths.memory_root
        contents = _contents(root, ALLOWED + FORBIDDEN)
        refused = []

        def handler(body):
            turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
            if turn == 0:
                return reply_tool_calls(*(("write_file", {"path": r, "content": c}) for r, c in contents.items()))
            refused.extend(m["content"] for m in body["messages"] if m.get("role") == "tool")
            return reply_text("done")

        model_env.handler = handler
        assert run_phase2(ctx, offline=False, force=True).outcome == "awaiting_review"
        assert sum(r.startswith("error:") for r in refused) == len(FORBIDDEN)
        planted = sum(len(_line(r)) for r in ALLOWED)
        assert all(WORD in (root / r).read_text() for r in ALLOWED)  # the working tree holds the run
        _check(ctx, tmp_path, planted, "pending", counts)
        review.reject(ctx, "no")
        _check(ctx, tmp_path, planted, "rejected", counts)
        assert _exported_during(tmp_path) == 0
        t.passed = 2
        ctx.close()
    figures.record("unapproved reads", reads=counts["reads"], unapproved_bytes=2 * planted,
                   served_bytes=counts["served_bytes"])  # fmt: skip


@pytest.mark.parametrize("provider", ["codex", "claude"])
def test_cli_agent_runs_serve_no_unapproved_byte(frozen_clock, fake_clis, monkeypatch, tmp_path, provider):  # noqa: F811
    monkeypatch.setenv("MEMTUI_PROVIDER", provider)
    monkeypatch.setenv("MEMTUI_JOB_RETRY_DELAY_SECONDS", "0")  # the refused run's backoff would skip the next one
    counts = {"reads": 0, "served_bytes": 0}
    planted = 0
    with figures.trial("unapproved reads", faults=3) as t:
        ctx = context()
        _approved_memory(ctx)
        root = ctx.paths.memory_root
        # forbidden files beside allowed ones: the run is refused and undone, nothing pends
        monkeypatch.setenv("FAKE_AGENT_EDITS", json.dumps(_contents(root, ALLOWED + FORBIDDEN)))
        assert run_phase2(ctx, force=True).outcome == "failed"
        planted += sum(len(_line(r)) for r in ALLOWED + FORBIDDEN)
        _check(ctx, tmp_path, planted, "refused", counts)
        # allowed files only: the run pends, then is rejected
        monkeypatch.setenv("FAKE_AGENT_EDITS", json.dumps(_contents(root, ALLOWED)))
        assert run_phase2(ctx, force=True).outcome == "awaiting_review"
        planted += 2 * sum(len(_line(r)) for r in ALLOWED)
        _check(ctx, tmp_path, planted, "pending", counts)
        review.reject(ctx, "no")
        _check(ctx, tmp_path, planted, "rejected", counts)
        assert _exported_during(tmp_path) == 0
        t.passed = 3
        ctx.close()
    figures.record("unapproved reads", reads=counts["reads"], unapproved_bytes=planted,
                   served_bytes=counts["served_bytes"])  # fmt: skip
