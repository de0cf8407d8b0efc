# ruff: noqa: W293  (REVIEW_DIFF holds git context lines that are a single space)
"""Deterministic memtui homes for the TUI tests, the screenshot script and the benchmark.

Rows go in with SQL (every stage-1 status the Rollouts screen can show), the conversation is a real Codex
rollout file, and Phase 2 runs offline through the domain so the review screen holds a real run.
Call with the clock frozen at ``FROZEN_NOW``; git dates are pinned so commit ids are stable.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from memtui.services.context import Context, open_context

FROZEN_NOW = 1_783_684_800  # 2026-07-10T12:00:00Z, the same instant as tests/conftest.py
HOUR = 3600
DAY = 24 * HOUR
GIT_DATE = "2026-07-10T12:00:00+00:00"

T_DOCS = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"  # has a stage-1 output and a conversation file
T_INFRA = "019e1c22-7a10-7b3e-9c41-5d6e7f809a1b"  # has a stage-1 output
T_FAILED = "019e2d33-0b1c-7d2e-8f30-4a5b6c7d8e9f"
T_STALE = "019e2e44-1c2d-7e3f-8a41-5b6c7d8e9fa0"
T_NOOP = "019e3f55-2d3e-7f40-9b52-6c7d8e9fa0b1"
T_PENDING = "019e4b77-4f50-7162-9d74-8e9fa0b1c2d3"
T_SKIPPED = "019e5c88-5061-7273-8e85-9fa0b1c2d3e4"
T_CLAUDE = "7c1e2f3a-4b5c-4d6e-8f70-81920a1b2c3d"

SECRET = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"  # planted: the UI must show it redacted

MEMORY_MD = """# Task Group: shop-api checkout tests
scope: the checkout service in ~/src/shop-api
applies_to: cwd=/home/ana/src/shop-api

## Task 1: timezone-dependent checkout test
- CI runs in UTC; reproduce locally with `TZ=UTC pnpm test checkout`.
- `startOfWeek` depends on the machine timezone |note=[keep literal]

# Task Group: infra terraform
- Never run `terraform apply` without showing the plan first.
- Use `AWS_PROFILE=infra` for the state bucket.
"""

ANSWER = """The failure is timezone-dependent: CI runs in UTC. Run `TZ=UTC pnpm test checkout`.

<oai-mem-citation>
<citation_entries>
MEMORY.md:5-7|note=[CI runs in UTC [see checkout]]
MEMORY.md:9-11|note=[terraform plan first]
MEMORY.md:40-44|note=[out of range]
missing.md:1-2|note=[no such file]
</citation_entries>
<rollout_ids>
019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b
</rollout_ids>
</oai-mem-citation>"""


def _line(ts: str, kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def codex_rollout(thread_id: str, cwd: str) -> str:
    """A small Codex rollout: a user request, two tool calls with outputs (one leaks a key), an answer."""
    ts = "2026-07-08T09:00:00.000Z"
    call = lambda cid, cmd: _line(  # noqa: E731
        ts,
        "response_item",
        {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": cmd}), "call_id": cid},
    )
    out = lambda cid, text: _line(  # noqa: E731
        ts, "response_item", {"type": "function_call_output", "call_id": cid, "output": text}
    )
    msg = lambda role, text: _line(  # noqa: E731
        ts,
        "response_item",
        {
            "type": "message",
            "role": role,
            "content": [{"type": "input_text" if role == "user" else "output_text", "text": text}],
        },
    )
    lines = [
        _line(
            ts,
            "session_meta",
            {
                "id": thread_id,
                "timestamp": ts,
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.141.0",
                "source": "cli",
            },
        ),
        msg("user", "The checkout test fails in CI but passes locally. Please find out why [urgent]."),
        call("call_1", "pnpm test checkout"),
        out("call_1", "PASS checkout.spec.ts (12 tests)\nOPENAI_API_KEY=" + SECRET),
        call("call_2", "TZ=UTC pnpm test checkout"),
        out("call_2", "FAIL checkout.spec.ts\n  expected Monday, got Sunday"),
        msg("assistant", "The failure is timezone-dependent: CI runs in UTC. Run `TZ=UTC pnpm test checkout`."),
    ]
    return "\n".join(lines) + "\n"


def _threads(home: Path, docs_path: Path) -> list[tuple]:
    now = FROZEN_NOW
    p = lambda name: f"/home/ana/.codex/sessions/2026/07/{name}"  # noqa: E731  (fixed: Phase 2 writes it out)
    # id, source_kind, path, cwd, session_source, updated_at, preview, bytes, ingest_status, reason, memory_mode
    return [
        (
            T_DOCS,
            "codex",
            p(docs_path.name),
            "/home/ana/src/shop-api",
            "cli",
            now - 2 * DAY,
            "The checkout test fails in CI but passes locally.",
            docs_path.stat().st_size,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_INFRA,
            "codex",
            p("infra.jsonl"),
            "/home/ana/src/infra",
            "cli",
            now - 3 * DAY,
            "Terraform plan fails with 403 on the state bucket",
            48_213,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_FAILED,
            "codex",
            p("failed.jsonl"),
            "/home/ana/src/shop-api",
            "vscode",
            now - 4 * DAY,
            "Refactor the cart reducer |note=[keep]",
            230_400,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_STALE,
            "codex",
            p("stale.jsonl"),
            "/home/ana/src/mobile",
            "cli",
            now - 5 * DAY,
            "Why does the iOS build time out?",
            91_000,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_NOOP,
            "codex",
            p("noop.jsonl"),
            "/home/ana/src/dotfiles",
            "cli",
            now - 6 * DAY,
            "ls",
            812,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_PENDING,
            "codex",
            p("pending.jsonl"),
            "/home/ana/src/shop-api",
            "cli",
            now - 7 * HOUR,
            "Bump the lockfile",
            5_120,
            "indexed",
            None,
            "enabled",
        ),
        (
            T_SKIPPED,
            "codex",
            p("skipped.jsonl"),
            "/home/ana/src/secret-project",
            "cli",
            now - 8 * DAY,
            "(memory disabled)",
            2_048,
            "indexed",
            None,
            "disabled",
        ),
        (
            T_CLAUDE,
            "claude",
            f"/home/ana/.claude/projects/docs/{T_CLAUDE}.jsonl",
            "/home/ana/src/docs-site",
            "cli",
            now - 1 * DAY,
            "The docs preview doesn't start",
            3_422,
            "indexed",
            None,
            "enabled",
        ),
    ]


def insert_rows(conn: sqlite3.Connection, home: Path, docs_path: Path) -> None:
    now = FROZEN_NOW
    conn.executemany(
        """INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, preview, bytes,
                               ingest_status, ingest_reason, memory_mode, ingested_at, created_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)""",
        [(*t, now, t[5] - HOUR) for t in _threads(home, docs_path)],
    )
    conn.executemany(
        """INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug,
                                       generated_at, usage_count, last_usage, offline) VALUES (?,?,?,?,?,?,?,?,1)""",
        [
            (
                T_DOCS,
                now - 2 * DAY,
                "---\ndescription: checkout test fails only in CI\ntask: find why\n---\n"
                "- CI runs in UTC; `startOfWeek` depends on TZ [item 5].\n- The run printed OPENAI_API_KEY=[REDACTED_SECRET] [item 3].",
                "# Checkout test timezone\nThe test failed in CI (UTC) and passed locally (Europe/Lisbon) [item 5].",
                "checkout_tz",
                now - DAY,
                3,
                now - 2 * HOUR,
            ),
            (
                T_INFRA,
                now - 3 * DAY,
                "---\ndescription: terraform 403 on the state bucket\n---\n- Use AWS_PROFILE=infra.",
                "# Terraform 403\nThe default profile lacked access; AWS_PROFILE=infra fixed it.",
                "terraform_403",
                now - DAY,
                1,
                now - DAY,
            ),
            (
                T_CLAUDE,
                now - 1 * DAY,
                "---\ndescription: docs preview port\n---\n- Serve mkdocs on 127.0.0.1:8001 (8000 is the API).",
                "# Docs preview\nmkdocs serve failed because port 8000 was taken.",
                "docs_preview",
                now - DAY,
                None,
                None,
            ),
        ],
    )
    jobs = [
        # kind, key, status, worker, token, lease_until, retry_at, retry_remaining, last_error, input_wm
        ("memory_stage1", T_DOCS, "done", None, None, None, None, 3, None, now - 2 * DAY),
        ("memory_stage1", T_INFRA, "done", None, None, None, None, 3, None, now - 3 * DAY),
        ("memory_stage1", T_CLAUDE, "done", None, None, None, None, 3, None, now - DAY),
        (
            "memory_stage1",
            T_FAILED,
            "error",
            None,
            None,
            None,
            now + 2 * HOUR,
            1,
            "model returned invalid JSON: expected `raw_memory` [schema]",
            now - 4 * DAY,
        ),
        ("memory_stage1", T_STALE, "running", "laptop:4242", "tok-stale", now - 30 * 60, None, 3, None, now - 5 * DAY),
        ("memory_stage1", T_NOOP, "done", None, None, None, None, 3, None, now - 6 * DAY),
        ("memory_consolidate_global", "global", "pending", None, None, None, None, 3, None, now - DAY),
    ]
    conn.executemany(
        """INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, lease_until, retry_at,
                             retry_remaining, last_error, input_watermark, started_at, finished_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?)""",
        [(*j, now - DAY, None if j[2] == "running" else now - DAY + 60) for j in jobs],
    )
    runs = [
        # key, started, outcome, error, noop, prompt, completion, latency, redactions
        (T_DOCS, now - DAY - 600, "failed", "request timed out after 120s", 0, None, None, 120_000, None),
        (T_DOCS, now - DAY, "succeeded", None, 0, 2_480, 312, 4_200, json.dumps({"openai_key": 1})),
        (T_INFRA, now - DAY, "succeeded", None, 0, 3_100, 290, 3_900, None),
        (T_CLAUDE, now - DAY, "succeeded", None, 0, 1_200, 150, 2_100, None),
        (
            T_FAILED,
            now - DAY,
            "failed",
            "model returned invalid JSON: expected `raw_memory` [schema]",
            0,
            5_400,
            80,
            6_100,
            None,
        ),
        (T_NOOP, now - DAY, "no_output", None, 1, 600, 12, 900, None),
    ]
    conn.executemany(
        """INSERT INTO job_runs (kind, job_key, started_at, finished_at, outcome, error, noop, prompt_tokens,
                                 completion_tokens, latency_ms, redactions, offline)
           VALUES ('memory_stage1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)""",
        [(r[0], r[1], r[1] + 5, *r[2:]) for r in runs],
    )
    conn.execute(
        """INSERT INTO citation_events (key, origin, thread_id, body, rollout_ids, recorded_at)
           VALUES ('fixture-1', 'rollout', ?, ?, ?, ?)""",
        (T_DOCS, ANSWER[ANSWER.index("<oai-mem-citation>") :], json.dumps([T_DOCS]), now - DAY),
    )


def pin_git_dates() -> None:
    """Commit ids depend on dates: pin them (the caller restores the environment if it cares)."""
    os.environ["GIT_AUTHOR_DATE"] = GIT_DATE
    os.environ["GIT_COMMITTER_DATE"] = GIT_DATE


REVIEW_DIFF = """diff --git a/MEMORY.md b/MEMORY.md
index 1111111..2222222 100644
--- a/MEMORY.md
+++ b/MEMORY.md
@@ -4,7 +4,8 @@ applies_to: cwd=/home/ana/src/shop-api
 
 ## Task 1: timezone-dependent checkout test
 - CI runs in UTC; reproduce locally with `TZ=UTC pnpm test checkout`.
-- `startOfWeek` depends on the machine timezone |note=[keep literal]
+- `startOfWeek` depends on the machine timezone; pin `TZ=UTC` in the test script.
+- The failing run printed OPENAI_API_KEY=[REDACTED_SECRET]; rotate it.
 
 # Task Group: infra terraform
 - Never run `terraform apply` without showing the plan first.
@@ -12,3 +13,6 @@ applies_to: cwd=/home/ana/src/shop-api
 - Use `AWS_PROFILE=infra` for the state bucket.
+
+# Task Group: docs-site
+- Serve mkdocs on 127.0.0.1:8001 (8000 is the API).
diff --git a/memory_summary.md b/memory_summary.md
index 3333333..4444444 100644
--- a/memory_summary.md
+++ b/memory_summary.md
@@ -1,3 +1,4 @@
 v1
 - shop-api: CI runs in UTC.
 - infra: plan before apply.
+- docs-site: mkdocs on port 8001.
diff --git a/rollout_summaries/2026-07-09T12-00-00-tqt7-docs_preview.md b/rollout_summaries/2026-07-09T12-00-00-tqt7-docs_preview.md
new file mode 100644
index 0000000..5555555
--- /dev/null
+++ b/rollout_summaries/2026-07-09T12-00-00-tqt7-docs_preview.md
@@ -0,0 +1,2 @@
+# Docs preview
+mkdocs serve failed because port 8000 was taken.
diff --git a/rollout_summaries/old_note.md b/rollout_summaries/old_note.md
deleted file mode 100644
index 6666666..0000000
--- a/rollout_summaries/old_note.md
+++ /dev/null
@@ -1 +0,0 @@
-# An old note nobody cited in 30 days
"""

SUMMARY_MD = "v1\n- shop-api: CI runs in UTC.\n- infra: plan before apply.\n"


def build_snapshot_home(home: Path) -> Context:
    """Like ``build_ui_home`` but the memory files and the run awaiting review are fixed text, so snapshots
    change only when the UI does (not when the offline consolidator's wording changes)."""
    ctx = build_ui_home(home, phase2=False)
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (root / "memory_summary.md").write_text(SUMMARY_MD, encoding="utf-8")
    from memtui.services.phase2.review import baseline_commit

    commit = baseline_commit(ctx)
    add_history(ctx)
    # A person's pending edit, shown by the memory editor as the diff against the baseline.
    (root / "MEMORY.md").write_text(MEMORY_MD.replace("plan first.", "plan first (ask Ana)."), encoding="utf-8")
    stat = [
        ["M", "MEMORY.md"],
        ["M", "memory_summary.md"],
        ["A", "rollout_summaries/2026-07-09T12-00-00-tqt7-docs_preview.md"],
        ["D", "rollout_summaries/old_note.md"],
    ]
    from memtui.adapters.memroot.baseline import tree_files, write_worktree_tree

    tree = write_worktree_tree(root)  # as Phase 2 records it: the run "produced" the tree on disk
    ctx.conn.execute(
        """INSERT INTO phase2_runs (status, started_at, finished_at, offline, baseline_commit, diff, stat, selected,
                                    claimed_watermark, new_watermark, reviewed_tree, reviewed_files)
           VALUES ('awaiting_review', ?, ?, 1, ?, ?, ?, '[]', 0, ?, ?, ?)""",
        (
            FROZEN_NOW - 600,
            FROZEN_NOW - 590,
            commit,
            REVIEW_DIFF,
            json.dumps(stat),
            FROZEN_NOW - DAY,
            tree,
            json.dumps(tree_files(root, tree)),
        ),
    )
    return ctx


def add_history(ctx: Context) -> None:
    """Decisions for the History screen: an older version (before the infra group), a partial approve whose
    snapshot is the current baseline, and a forget."""
    from memtui.services import history

    conn, root = ctx.conn, ctx.paths.memory_root
    old = history.record_decision(
        conn, "approve", run_id=1, files_in=["MEMORY.md", "memory_summary.md"], tree="5" * 40, commit="6" * 40
    )
    data, raw = history._pack(
        {
            "MEMORY.md": MEMORY_MD.split("# Task Group: infra")[0],
            "memory_summary.md": "v1\n- shop-api: CI runs in UTC.\n",
        }
    )
    conn.execute(
        "INSERT INTO history_snapshots (decision_id, tree, created_at, files, raw_bytes, data) VALUES (?,?,?,?,?,?)",
        (old, "5" * 40, FROZEN_NOW - 2 * DAY, 2, raw, data),
    )
    conn.execute("UPDATE decisions SET at=? WHERE id=?", (FROZEN_NOW - 2 * DAY, old))
    partial = history.record_decision(
        conn,
        "partial_approve",
        run_id=2,
        files_in=["MEMORY.md"],
        files_out=["memory_summary.md"],
        hunks_in=[history.HunkRef(id="3f2a9c1b7d", file="MEMORY.md", hash="a" * 64)],
        hunks_out=[history.HunkRef(id="9e8d7c6b5a", file="memory_summary.md", hash="b" * 64)],
        reason="the summary line is too vague",
        tree=history.baseline_tree(root),
    )
    history.take_snapshot(conn, root, partial, 20)
    history.record_decision(conn, "forget", thread_id=T_STALE, reason="client project, not mine to keep")


def build_ui_home(home: Path, *, phase2: bool = True) -> Context:
    """Fill ``home`` (rows, a rollout file, an offline Phase 2 run awaiting review). Pin git dates first."""
    home.mkdir(parents=True, exist_ok=True)
    sources = home / "sources"
    docs_path = sources / "codex" / "sessions" / "2026" / "07" / "08" / f"rollout-2026-07-08T09-00-00-{T_DOCS}.jsonl"
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    docs_path.write_text(codex_rollout(T_DOCS, "/home/ana/src/shop-api"), encoding="utf-8")
    (home / "config.toml").write_text(
        f'provider = "offline"\ncodex_home = "{sources / "codex"}"\nclaude_dir = "{sources / "claude"}"\n',
        encoding="utf-8",
    )
    ctx = open_context(home=home)
    ctx.paths.ensure()
    insert_rows(ctx.conn, home, docs_path)
    if phase2:
        from memtui.services.phase2.consolidate import run_phase2

        result = run_phase2(ctx, offline=True, force=True)
        if result.outcome != "awaiting_review":
            raise RuntimeError(f"fixture Phase 2 did not reach review: {result.message()}")
    # Only now point the thread at its real file (under tmp), so no tmp path reaches the memory files.
    ctx.conn.execute("UPDATE threads SET path=? WHERE id=?", (str(docs_path), T_DOCS))
    return ctx


def write_memory(ctx: Context, text: str = MEMORY_MD) -> Path:
    path = ctx.paths.memory_root / "MEMORY.md"
    path.write_text(text, encoding="utf-8")
    return path
