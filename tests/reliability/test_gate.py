"""The review gate under load and failure: UI diff refreshes racing Phase 2 and approve, a person's save during a run
that then fails (or is killed), and a leak scan of state.sqlite, its -wal, git objects and files after each decision.

Every trial counts what it tried and what held; a figure is only "survived" when its checks passed.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

from memtui.adapters.memroot.baseline import BaselineError
from memtui.adapters.memroot.edit import load_file, save_file
from memtui.adapters.memroot.lock import MemoryRootBusy, memory_root_lock
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.recovery import recover_interrupted_runs
from memtui.state.global_job import read_global_job
from tests.reliability import figures
from tests.reliability.harness import LEASE, NOW, Home, find_leaks, frozen, home_blobs, kill_when, spawn
from tests.reliability.scale import SEED
from tests.support.chat_server import ChatServer, reply_text, reply_tool_calls
from tests.support.waiting import HANG_GUARD, Gate
from tests.test_phase2_support import add_output

THREADS = ["0194f5a6-89ab-7cde-8123-0000000000" + f"{i:02d}" for i in range(1, 40)]
SUMMARY = "v1\n## User Profile\n- prefers uv\n"


def test_ui_diff_refresh_during_phase2_and_approve_never_fails_nor_backs_off(tmp_path: Path):
    """A UI thread refreshing the diff non-stop while another thread runs Phase 2 and approves, round after round."""
    home = Home(tmp_path).make()
    rounds = 8
    stop = threading.Event()
    refreshes, overlapping, view_errors = Counter(), Counter(), []
    busy_phase = threading.Event()
    outcomes: Counter[str] = Counter()
    problems: list[str] = []

    def ui_refresh():
        ctx = home.context(provider="offline")
        try:
            while not stop.is_set():
                during = busy_phase.is_set()
                try:
                    review.review_state(ctx)  # the review screen's load
                    review.workspace_diff(ctx)  # the memory screen's side panel
                except BaselineError as exc:
                    view_errors.append(str(exc))
                else:
                    overlapping["ok"] += during
                refreshes["all"] += 1
                overlapping["during"] += during
        finally:
            ctx.close()

    def consolidate():
        ctx = home.context(provider="offline")
        try:
            for i in range(rounds):
                add_output(ctx.conn, THREADS[i], NOW - 3600 + i, raw=f"- round {i} note\n")
                busy_phase.set()
                result = run_phase2(ctx, offline=True, force=True)
                outcomes[result.outcome] += 1
                if result.outcome == "awaiting_review":
                    try:
                        review.approve(ctx)
                        outcomes["approved"] += 1
                    except MemoryRootBusy:
                        outcomes["approve busy"] += 1
                elif result.outcome != "busy":
                    problems.append(f"round {i}: {result.outcome} {result.reason}")
                busy_phase.clear()
                job = read_global_job(ctx.conn)
                if job.retry_at is not None or job.last_error is not None:
                    problems.append(f"round {i}: backoff set: {job.last_error}")
        finally:
            ctx.close()

    with frozen(NOW):
        ui = [threading.Thread(target=ui_refresh) for _ in range(2)]
        for t in ui:
            t.start()
        worker = threading.Thread(target=consolidate)
        worker.start()
        worker.join(HANG_GUARD)
        stop.set()
        for t in ui:
            t.join(HANG_GUARD)
    assert not problems, problems
    assert not view_errors, view_errors[:3]
    assert outcomes["approved"] == rounds, outcomes
    assert overlapping["during"] > 0, "no refresh overlapped a run: the trial tested nothing"
    assert not (home.root / ".git" / "index.lock").exists()
    # A fault here is a UI refresh that ran while Phase 2 or approve held the root; it survived if it returned a
    # diff (the runs' own failures and backoffs are asserted above).
    figures.record("UI diff vs phase 2", trials=rounds, faults=overlapping["during"], survived=overlapping["ok"])


def _failing_agent(memory: Path, edit: str, mode: str, started: threading.Event):
    """Writes MEMORY.md; then (shell mode) a person saves it from a shell; then the run fails in its last turn."""

    def handler(body):
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if turn == 0:
            started.set()  # the run holds the memory root now
            return reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": "# agent version\n"}))
        if turn == 1:
            if mode == "shell":
                memory.write_text(edit)  # a person's save from a shell, while the agent works
            else:
                time.sleep(0.2)  # room for the editor's save to be waiting on the lock (it is correct either way)
            return reply_tool_calls(("write_file", {"path": "memory_summary.md", "content": "not v1\n"}))
        return reply_text("done")

    return handler


def test_a_save_during_a_run_that_then_fails_survives(tmp_path: Path):
    """Shell saves and editor saves made while a run is going survive the failed run's undo."""
    rng = random.Random(SEED)
    tried = survived = 0
    failures = []
    with ChatServer() as server:
        for trial in range(6):
            mode = ["shell", "editor"][trial % 2]
            home = Home(tmp_path / f"t{trial}").make()
            with frozen(NOW):
                ctx = home.context(server.base_url)
                add_output(ctx.conn, THREADS[0], NOW - 7200)
                run_phase2(ctx, offline=True, force=True, auto_approve=True)
                add_output(ctx.conn, THREADS[1], NOW - 3600)
                memory = home.root / "MEMORY.md"
                loaded = load_file(home.root, "MEMORY.md")
                edit = loaded.text + f"\n- the person's line {rng.randint(0, 10**6)}\n"
                started = threading.Event()
                server.handler = _failing_agent(memory, edit, mode, started)
                errors: list[str] = []

                def editor_save(loaded=loaded, edit=edit, started=started, errors=errors, root=home.root):
                    if started.wait(HANG_GUARD):
                        try:  # blocks on the lock while the run goes, then saves over the undone file
                            save_file(root, "MEMORY.md", edit, loaded.sha256, wait=HANG_GUARD)
                        except Exception as exc:
                            errors.append(f"{type(exc).__name__}: {exc}")

                saver = threading.Thread(target=editor_save) if mode == "editor" else None
                if saver is not None:
                    saver.start()
                result = run_phase2(ctx, force=True)
                if saver is not None:
                    saver.join(HANG_GUARD)
                tried += 1
                ok = result.outcome == "failed" and memory.read_text() == edit and not errors
                ok = ok and read_global_job(ctx.conn).status != "running"
                survived += ok
                if not ok:
                    failures.append((mode, result.outcome, result.reason, errors, memory.read_text()[:80]))
                ctx.close()
    figures.record("save during a run", trials=tried, faults=tried, survived=survived)
    assert not failures, failures


def test_a_shell_save_during_a_killed_run_survives_the_recovery(tmp_path: Path):
    """kill -9 mid-agent after the agent wrote MEMORY.md and a person then saved it: the recovery keeps the save."""
    tried = survived = 0
    failures = []
    with ChatServer() as server:
        for trial in range(3):
            home = Home(tmp_path / f"k{trial}").make()
            with frozen(NOW):
                ctx = home.context(server.base_url)
                add_output(ctx.conn, THREADS[0], NOW - 7200)
                run_phase2(ctx, offline=True, force=True, auto_approve=True)
                add_output(ctx.conn, THREADS[1], NOW - 3600)
                ctx.close()
            memory = home.root / "MEMORY.md"
            wrote = Gate()  # the agent wrote MEMORY.md; its next call is held until the kill

            def handler(body, wrote=wrote):
                turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
                if turn == 0:
                    return reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": "# agent partial\n"}))
                wrote.hold()
                return reply_text("done")

            server.handler = handler
            proc = spawn(home, ["phase2", "--force"], home.env(server.base_url))
            mine = f"# Memory\n\n- saved by a person during the run {trial}\n"

            def save_then_kill(wrote=wrote, memory=memory, mine=mine):
                if not wrote.reached.is_set():
                    return False
                memory.write_text(mine)
                return True

            with wrote:
                faulted = kill_when(proc, save_then_kill)
            with frozen(NOW + LEASE + 1):
                ctx = home.context(server.base_url)
                with memory_root_lock(home.root, "recovery"):
                    recovered = recover_interrupted_runs(ctx.conn, home.root)
                ctx.close()
            tried += faulted
            ok = faulted and bool(recovered) and memory.read_text() == mine
            survived += ok
            if not ok:  # not faulted: the run ended before the agent's held call (the trial tested nothing)
                failures.append((trial, faulted, recovered, memory.read_text()[:80]))
    figures.record("save during a run", trials=3, faults=tried, survived=survived)
    assert not failures, failures


def _marker_leaks(home: Home, marker: str) -> list[tuple[str, str]]:
    """Where ``marker`` still is: state.sqlite and its -wal as they are on disk (no checkpoint first), every file
    under MEMTUI_HOME, and every git object."""
    wal = home.memtui / "state.sqlite-wal"
    blobs = list(home_blobs(home))
    names = {name for name, _ in blobs}
    assert "state.sqlite" in names and (not wal.exists() or "state.sqlite-wal" in names)
    return find_leaks(blobs, [marker])


def test_sqlite_leak_scan_after_approve_reject_and_a_manual_commit(tmp_path: Path):
    leaks: dict[str, list] = {}
    with ChatServer() as server:
        # approve: a consolidation deletes what only a forgotten input supported.
        home = Home(tmp_path / "approve").make()
        marker = "deleted-marker-approve-4471"
        with frozen(NOW):
            ctx = home.context(provider="offline")
            add_output(ctx.conn, THREADS[0], NOW - 7200, raw=f"- {marker}\n")
            run_phase2(ctx, offline=True, force=True)
            review.approve(ctx)
            ctx.conn.execute("DELETE FROM stage1_outputs WHERE thread_id=?", (THREADS[0],))
            add_output(ctx.conn, THREADS[1], NOW - 3600)
            assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
            assert marker in review.pending_run(ctx.conn).diff  # the deletion, to review
            review.approve(ctx)
            ctx.close()
        leaks["approve"] = _marker_leaks(home, marker)

        # reject: what the agent wrote goes, and so do the stored diffs.
        home = Home(tmp_path / "reject").make()
        marker = "rejected-marker-agent-9902"
        server.handler = lambda body: (
            reply_tool_calls(
                ("write_file", {"path": "MEMORY.md", "content": f"# Memory\n- {marker}\n"}),
                ("write_file", {"path": "memory_summary.md", "content": SUMMARY}),
            )
            if not any(m.get("role") == "assistant" for m in body["messages"])
            else reply_text("done")
        )
        with frozen(NOW):
            ctx = home.context(server.base_url)
            add_output(ctx.conn, THREADS[0], NOW - 3600)
            assert run_phase2(ctx, force=True).outcome == "awaiting_review"
            assert marker in review.pending_run(ctx.conn).diff
            review.reject(ctx, "not this")
            ctx.close()
        leaks["reject"] = _marker_leaks(home, marker)

        # manual commit: a person's line went into a run's input, the run was rejected, the person deleted the line
        # and committed.
        home = Home(tmp_path / "commit").make()
        marker = "person-deleted-marker-3318"
        with frozen(NOW):
            ctx = home.context(provider="offline")
            add_output(ctx.conn, THREADS[0], NOW - 7200)
            run_phase2(ctx, offline=True, force=True, auto_approve=True)
            original = load_file(home.root, "MEMORY.md")
            save_file(home.root, "MEMORY.md", original.text + f"- {marker}\n", original.sha256)
            add_output(ctx.conn, THREADS[1], NOW - 3600)
            run_phase2(ctx, offline=True, force=True)
            assert marker in review.pending_run(ctx.conn).input_diff
            review.reject(ctx, "later")
            current = load_file(home.root, "MEMORY.md")
            # (and writes another, so there is something to commit: an unchanged memory is refused as empty)
            save_file(
                home.root, "MEMORY.md", current.text.replace(f"- {marker}\n", "- keep PRs small\n"), current.sha256
            )
            shown = review.review_state(ctx).own_edits
            review.commit_manual_edit(ctx, "drop the line", expected_tree=shown.tree)
            ctx.close()
        leaks["manual commit"] = _marker_leaks(home, marker)
    found = {k: v for k, v in leaks.items() if v}
    figures.record("deleted content", deleted=len(leaks), found=len(found))
    assert not found, found


def test_leak_scan_reads_the_wal_as_it_is(tmp_path: Path):
    """The scan must see content sitting in -wal: a row written and not checkpointed is found."""
    home = Home(tmp_path).make()
    ctx = home.context(provider="offline")
    keep = ctx.new_conn()  # a second connection keeps the WAL from being checkpointed away on close
    ctx.conn.execute("PRAGMA wal_autocheckpoint=0")
    ctx.conn.execute("INSERT INTO meta (key, value) VALUES ('probe', 'wal-probe-marker-1234')")
    wal = home.memtui / "state.sqlite-wal"
    assert wal.exists() and b"wal-probe-marker-1234" in wal.read_bytes()
    assert _marker_leaks(home, "wal-probe-marker-1234")
    keep.close()
    ctx.close()
