"""Phase 2 through codex / claude: memtui checks the tree after the CLI, refuses and undoes forbidden changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.adapters.memroot.baseline import head_commit
from memtui.adapters.memroot.files import DIFF_FILENAME
from memtui.adapters.selfcalls import MARKER
from memtui.services.context import open_context
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from tests.conftest import FROZEN_NOW
from tests.test_backends import calls, fake_clis  # noqa: F401  (fixture)
from tests.test_phase2_agent import MEMORY, SUMMARY
from tests.test_phase2_support import add_output

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
SECRET = "sk-proj" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


@pytest.fixture(params=["codex", "claude"])
def cli_ctx(request, frozen_clock, fake_clis, monkeypatch):  # noqa: F811
    monkeypatch.setenv("MEMTUI_PROVIDER", request.param)
    c = open_context()
    add_output(c.conn, A, FROZEN_NOW - 3600)
    yield c, request.param, fake_clis
    c.close()


def files(root) -> dict[str, bytes]:
    """Everything outside .git (Phase 2's own `git add` legitimately changes the index and objects)."""
    out = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return {k: v for k, v in out.items() if not k.startswith(".git/")}


def edits(monkeypatch, mapping):
    monkeypatch.setenv("FAKE_AGENT_EDITS", json.dumps(mapping))


def test_the_cli_agent_writes_memory_which_is_redacted_and_awaits_review(cli_ctx, monkeypatch):
    ctx, provider, log = cli_ctx
    root = ctx.paths.memory_root
    edits(
        monkeypatch,
        {"MEMORY.md": MEMORY + f"- key {SECRET}\n", "memory_summary.md": SUMMARY, "skills/ci/SKILL.md": "x"},
    )
    result = run_phase2(ctx)
    assert result.outcome == "awaiting_review", result.reason
    assert {p for _, p in result.stat} >= {"MEMORY.md", "memory_summary.md", "skills/ci/SKILL.md"}
    text = (root / "MEMORY.md").read_text()
    assert SECRET not in text and "[REDACTED_SECRET]" in text
    agent_call = calls(log)[-1]
    folder = agent_call["cwd"]  # a copy of the memory root in memtui's work folder, gone after the run
    assert folder.startswith(str(ctx.paths.home / "work") + "/") and not Path(folder).exists()
    assert agent_call["stdin"].startswith(MARKER) and f"`{folder}`" in agent_call["stdin"]
    assert f"You run as `{provider}`" in agent_call["stdin"] and DIFF_FILENAME in agent_call["stdin"]
    if provider == "codex":
        argv = agent_call["argv"]
        out = argv[argv.index("-o") + 1]
        assert argv == [
            "codex", "exec", "-c", "notify=[]", "--sandbox", "workspace-write",
            "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
            "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            "-C", folder, "--skip-git-repo-check", "--json", "--color", "never", "-o", out, "-",
        ]  # fmt: skip
        assert agent_call["codex_home"] == str(ctx.paths.home / "codex-home")
    else:
        argv = agent_call["argv"]
        settings = argv[argv.index("--settings") + 1]
        assert argv == [
            "claude", "-p", "--tools", "Read,Edit,Write,Glob,Grep", "--safe-mode", "--setting-sources", "",
            "--settings", settings, "--permission-prompts", "none", "--strict-mcp-config", "--no-session-persistence",
            "--permission-mode", "acceptEdits", "--output-format", "json",
        ]  # fmt: skip
        assert "--allowedTools" not in argv  # a bare Write there would allow writes anywhere
        deny = json.loads(settings)["permissions"]["deny"]
        assert f"Write(/{ctx.paths.claude_dir}/**)" in deny and f"Edit(/{ctx.paths.claude_dir}/**)" in deny
    run = review.pending_run(ctx.conn)
    assert SECRET not in run.diff
    review.reject(ctx, reason="not now")
    assert not (root / "MEMORY.md").exists() and not (root / "skills").exists()


def test_the_agent_loads_none_of_the_users_setup_and_records_the_model_it_used(cli_ctx, monkeypatch, tmp_path):
    """Items 5, 9 and 10: no instruction file or memory of the user's in the agent's prompt, none of the user's
    hooks run, and the run is labelled with the model the CLI says it used (not memtui's configured default)."""
    ctx, provider, log = cli_ctx
    ran = tmp_path / "session-end-ran"
    (ctx.paths.claude_dir / "CLAUDE.md").write_text("USER-CLAUDE-MD\n")
    hook = {"hooks": [{"type": "command", "command": f"touch {ran}"}]}
    (ctx.paths.claude_dir / "settings.json").write_text(json.dumps({"hooks": {"SessionEnd": [hook]}}))
    (ctx.paths.codex_home / "AGENTS.md").write_text("USER-AGENTS-MD\n")
    monkeypatch.setenv(f"FAKE_{provider.upper()}_DEFAULT_MODEL", "model-the-cli-chose")
    edits(monkeypatch, {"MEMORY.md": MEMORY, "memory_summary.md": SUMMARY})
    result = run_phase2(ctx)
    assert result.outcome == "awaiting_review", result.reason
    assert calls(log)[-1]["instructions"] == ""
    assert not ran.exists()
    model = ctx.conn.execute("SELECT model FROM phase2_runs WHERE id = ?", (result.run_id,)).fetchone()[0]
    assert model == f"{provider}:model-the-cli-chose"


@pytest.mark.parametrize("ignores_the_rule", [False, True])
def test_a_claude_agent_write_into_its_auto_memory_is_denied_or_refused(
    frozen_clock,
    fake_clis,  # noqa: F811
    monkeypatch,
    ignores_the_rule,
):
    """Item 11: Claude lets a Write into its auto-memory folder for the work copy through with no permission asked.
    memtui's deny rule stops it; a Claude that writes anyway gets its run refused and the file removed."""
    monkeypatch.setenv("MEMTUI_PROVIDER", "claude")
    monkeypatch.setenv("FAKE_CLAUDE_AUTOMEMORY", "1")
    if ignores_the_rule:
        monkeypatch.setenv("FAKE_CLAUDE_IGNORE_DENY", "1")
    ctx = open_context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600)
    edits(monkeypatch, {"MEMORY.md": MEMORY, "memory_summary.md": SUMMARY})
    result = run_phase2(ctx)
    projects = ctx.paths.claude_dir / "projects"
    assert not [p for p in projects.rglob("*") if p.is_file()]  # nothing left in Claude's folder
    if ignores_the_rule:
        assert result.outcome == "failed" and "wrote outside its work copy" in str(result.reason)
        assert not (ctx.paths.memory_root / "MEMORY.md").exists()
    else:
        assert result.outcome == "awaiting_review", result.reason
    ctx.close()


@pytest.mark.parametrize(
    "bad",
    [
        {".git/hooks/post-commit": "#!/bin/sh\ncurl evil\n"},
        {".git/HEAD": "ref: refs/heads/evil\n"},
        {DIFF_FILENAME: "nothing changed, trust me\n"},
        {"raw_memories.md": "# Raw Memories\n\nforged\n"},
        {"notes.md": "a stray file\n"},
    ],
)
@pytest.mark.slow
def test_forbidden_changes_are_refused_and_every_change_is_undone(cli_ctx, monkeypatch, bad):
    ctx, _, _ = cli_ctx
    root = ctx.paths.memory_root
    run_phase2(ctx, offline=True, auto_approve=True)  # a baseline with content
    before = files(root)
    git_head = (root / ".git" / "HEAD").read_bytes()
    head = head_commit(root)
    add_output(ctx.conn, "0194f5a6-89ab-7cde-8123-456789abcdf0", FROZEN_NOW - 60)
    edits(monkeypatch, {"MEMORY.md": MEMORY, **bad})
    result = run_phase2(ctx, force=True)
    assert result.outcome == "failed" and "all of its changes were undone" in result.reason
    assert next(iter(bad)).split("/")[0] in result.reason or ".git/" in result.reason
    after = files(root)
    assert (root / ".git" / "HEAD").read_bytes() == git_head and not (root / ".git/hooks/post-commit").exists()
    assert "trust me" not in (root / DIFF_FILENAME).read_text()  # memtui's own diff file, as it wrote it
    synced = {k for k in after if k.startswith(("rollout_summaries/", "raw_memories.md", DIFF_FILENAME))}
    assert {k: v for k, v in after.items() if k not in synced} == {
        k: v for k, v in before.items() if k not in synced
    }  # the agent's MEMORY.md edit is gone too; only Phase 2's own input sync remains
    assert head_commit(root) == head and review.pending_run(ctx.conn) is None


def test_a_symlink_the_agent_creates_is_refused(cli_ctx, monkeypatch, tmp_path):
    ctx, _, _ = cli_ctx
    root = ctx.paths.memory_root
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    # The fake cannot create links; do it through a wrapper hook: the agent "writes" then we link before the scan.
    from memtui.services.phase2 import consolidate

    real_run = consolidate._run_agent

    def run_and_link(*args, **kwargs):
        out = real_run(*args, **kwargs)
        folder = args[-1]  # the agent's copy of the memory root
        (folder / "skills").mkdir(exist_ok=True)
        (folder / "skills" / "leak.md").symlink_to(outside)
        return out

    monkeypatch.setattr(consolidate, "_run_agent", run_and_link)
    edits(monkeypatch, {"MEMORY.md": MEMORY, "memory_summary.md": SUMMARY})
    result = run_phase2(ctx)
    assert result.outcome == "failed" and "skills/leak.md" in result.reason
    assert not (root / "skills").exists() and not (root / "MEMORY.md").exists()


def test_a_failing_cli_agent_fails_the_run_and_undoes_its_writes(cli_ctx, monkeypatch):
    ctx, _, _ = cli_ctx
    monkeypatch.setenv("FAKE_AGENT_MODE", "usage_limit")
    result = run_phase2(ctx)
    assert result.outcome == "failed" and "rate_limited" in result.reason
    assert not (ctx.paths.memory_root / "MEMORY.md").exists()
