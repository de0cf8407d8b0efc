"""Pilot tests of the flows a person runs: filter, open, approve, reject, edit, cite, fail and carry on."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Label, TabbedContent, TextArea

from memtui.adapters.memroot import baseline
from memtui.services import views
from memtui.services.citations import CitationEntry
from memtui.services.context import open_context
from memtui.tui.screens.citations import CitationsScreen
from memtui.tui.screens.detail import RolloutDetailScreen
from memtui.tui.screens.dialogs import ConfirmModal, TextPromptModal
from memtui.tui.screens.file_view import FileViewScreen
from memtui.tui.screens.help import HelpScreen
from memtui.tui.screens.jobs import JobsScreen
from memtui.tui.screens.memory import MemoryScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.rollouts import RolloutsScreen
from memtui.tui.widgets.windowed_table import WindowedTable
from tests.support.waiting import HANG_GUARD
from tests.tui.conftest import SIZE, app_for, settle, wait_for
from tests.tui.homes import ANSWER, SECRET, T_DOCS, T_FAILED, T_INFRA, T_STALE


def _run(home: Path) -> dict:
    conn = open_context(home=home).conn
    return dict(conn.execute("SELECT * FROM phase2_runs ORDER BY id DESC LIMIT 1").fetchone())


async def test_filter_narrows_the_list(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert table.row_count == 8
        await pilot.press("slash", *"infra")
        await settle(pilot)
        assert table.row_count == 1
        assert table.coordinate_to_cell_key((0, 0)).row_key.value == T_INFRA
        assert str(app.screen.query_one("#position", Label).content).startswith("1 of 1")
        filt = app.screen.query_one("#filter", Input)
        filt.value = "status:failed"
        await settle(pilot)
        assert table.row_count == 1
        assert table.coordinate_to_cell_key((0, 0)).row_key.value == T_FAILED
        await pilot.press("escape")  # clears the filter
        await settle(pilot)
        assert table.row_count == 8


async def test_sort_by_column_and_open_detail(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RolloutsScreen)
        screen.sort, screen.descending = "size", True
        screen._resort()
        await settle(pilot)
        table = screen.query_one(WindowedTable)
        assert table.coordinate_to_cell_key((0, 0)).row_key.value == T_FAILED  # the biggest file
        await pilot.press("r")  # reverse
        await settle(pilot)
        assert table.coordinate_to_cell_key((0, 0)).row_key.value != T_FAILED
        # Enter opens the highlighted rollout.
        screen.filter_text = T_DOCS[:13]
        screen.load_window(0)
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetailScreen)
        assert app.screen.thread_id == T_DOCS


async def test_detail_marks_redactions_and_never_shows_the_secret(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(T_DOCS)
        await settle(pilot)
        await wait_for(pilot, lambda: app.screen.query("#conversation Collapsible"))
        await pilot.press("o")  # expand tool outputs
        await settle(pilot)
        await pilot.pause(0.1)
        svg = app.export_screenshot()
        assert SECRET not in svg
        assert "[REDACTED_SECRET]" in svg
        assert "[urgent]." in svg  # user text with brackets stays literal
        history = app.screen.query_one("#job-history", DataTable)
        assert history.row_count == 2


async def test_windowing_reaches_the_end_of_a_long_list(ui_home: Path) -> None:
    conn = open_context(home=ui_home).conn
    conn.executemany(
        "INSERT INTO threads (id, source_kind, path, session_source, updated_at, ingested_at) VALUES (?,?,?,?,?,?)",
        [(f"bulk-{i:05d}", "codex", f"/x/{i}.jsonl", "cli", 1_000_000 + i, 0) for i in range(1500)],
    )
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert table.row_count == table.window == SIZE[1] + WindowedTable.MARGIN  # what fits, plus a margin
        await pilot.press("G")
        await settle(pilot)
        assert table.row_total == 1508
        assert table.absolute_row == 1507
        assert table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value == "bulk-00000"
        await pilot.press("up")
        assert table.absolute_row == 1506
        await pilot.press("g")
        await settle(pilot)
        assert table.absolute_row == 0
        table.move_cursor(row=table.window - 1)
        await pilot.press("down")
        await settle(pilot)
        assert table.absolute_row == table.window  # moved past the first window


async def test_approve_changes_the_baseline_commit(ui_home: Path) -> None:
    root = ui_home / "memories"
    before = baseline.head_commit(root)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen) and app.screen.awaiting
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(pilot)
        assert not app.task_errors
        assert isinstance(app.screen, ReviewScreen) and not app.screen.awaiting
    assert baseline.head_commit(root) != before
    assert _run(ui_home)["status"] == "approved"


async def test_reject_restores_the_workspace(ui_home: Path) -> None:
    root = ui_home / "memories"
    assert (root / "MEMORY.md").exists()  # written by the run awaiting review
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press("enter")  # an empty reason is refused
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press(*"too vague")
        await pilot.press("enter")
        await settle(pilot)
        assert not app.task_errors
    assert not (root / "MEMORY.md").exists()
    run = _run(ui_home)
    assert (run["status"], run["reason"]) == ("rejected", "too vague")


async def test_cancelling_a_decision_changes_nothing(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("a", "n")
        await settle(pilot)
    assert _run(ui_home)["status"] == "awaiting_review"


async def test_editing_and_saving_memory_changes_the_file(ui_home: Path) -> None:
    path = ui_home / "memories" / "MEMORY.md"
    original = path.read_text()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        await pilot.press("enter")  # into the editor
        assert isinstance(app.focused, TextArea)
        await pilot.press(*"Hi", "enter")
        assert str(screen.query_one(TabbedContent).get_tab("pane-memory-md").label).endswith("●")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert str(screen.query_one(TabbedContent).get_tab("pane-memory-md").label) == "MEMORY.md"
    assert path.read_text() == "Hi\n" + original


async def test_summary_without_v1_is_flagged(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        area = app.screen.query_one("#summary-md", TextArea)
        area.load_text("no version header\n")
        await pilot.pause()
        warnings = str(app.screen.query_one("#memory-warnings").render())
        assert "does not start with `v1`" in warnings


async def test_commit_manual_edit_makes_a_new_baseline(ui_home: Path) -> None:
    root = ui_home / "memories"
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("a", "y")  # a run awaiting review blocks manual commits: decide it first
        await settle(pilot)
        before = baseline.head_commit(root)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("enter", *"# mine", "enter", "ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press("enter")  # default message
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    assert baseline.head_commit(root) != before
    assert (root / "MEMORY.md").read_text().startswith("# mine\n")


async def test_citation_jump_lands_on_the_cited_lines(ui_home: Path) -> None:
    from memtui.services.citations.check import check_entry
    from memtui.services.phase2.review import approve

    ctx = open_context(home=ui_home)
    cited = CitationEntry(path="MEMORY.md", line_start=5, line_end=7, note="")
    unapproved = check_entry(ctx.paths.memory_root, cited)
    assert unapproved.status == "missing_file"  # the run awaiting review wrote it: no agent has read it yet
    assert unapproved.detail == "MEMORY.md is not in the approved memory agents read"
    approve(ctx)
    ctx.close()
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CitationsScreen)
        screen.set_answer(ANSWER)
        await settle(pilot)
        entries = screen.query_one("#entries", DataTable)
        assert entries.row_count == 4
        statuses = [e["status"] for e in screen.entries]
        assert (statuses[0], statuses[1], statuses[3]) == ("ok", "ok", "missing_file")
        assert screen.entries[0]["note"] == "CI runs in UTC [see checkout]"
        entries.focus()
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, FileViewScreen)
        area = view.query_one(TextArea)
        assert area.cursor_location == (4, 0)  # line 5, the first cited line
        assert area.selection.start == (6, len(area.document.get_line(6)))  # through line 7
        assert area.has_focus
        title = str(view.query_one("#file-title").render())
        assert title == "MEMORY.md:5-7  |note=[CI runs in UTC [see checkout]]"
        await pilot.press("escape")
        await settle(pilot)
        # A rollout id opens that rollout.
        ids = app.screen.query_one("#rollout-ids", DataTable)
        ids.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RolloutDetailScreen) and app.screen.thread_id == T_DOCS


async def test_pasting_an_answer_parses_it(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        app.screen.post_message(__import__("textual.events", fromlist=["Paste"]).Paste(ANSWER))
        await settle(pilot)
        assert len(app.screen.entries) == 4


async def test_a_worker_failure_shows_an_error_and_the_app_stays_usable(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memtui.services.ingest

    def boom(ctx, progress=None, cancel=None):  # type: ignore[no-untyped-def]
        progress(1, 4, "reading [rollout].jsonl")
        raise RuntimeError("disk on fire [errno 5]")

    monkeypatch.setattr(memtui.services.ingest, "run_ingest", boom)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        assert app.task_errors == ["RuntimeError: disk on fire [errno 5]"]
        messages = [n.message for n in app._notifications]
        assert "RuntimeError: disk on fire [errno 5]" in messages  # literal: brackets survive
        assert not app.task_states  # the progress line is gone
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)
        assert app.screen.query_one(WindowedTable).row_count == 7
        await pilot.press("f5")  # and the work can be started again
        await settle(pilot)
        assert len(app.task_errors) == 2


async def test_release_a_stale_lease_and_retry_now(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        keys = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
        table.move_cursor(row=keys.index(f"memory_stage1/{T_STALE}"))
        await pilot.press("l")
        await settle(pilot)
        keys = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(table.row_count)]
        table.move_cursor(row=keys.index(f"memory_stage1/{T_FAILED}"))
        started: list[str | None] = []
        app.run_phase1 = started.append  # type: ignore[method-assign,assignment]  (no extraction here)
        await pilot.press("t")
        await settle(pilot)
        assert started == [T_FAILED]  # retry now extracts it now
    conn = open_context(home=ui_home).conn
    stale = conn.execute("SELECT status, ownership_token FROM jobs WHERE job_key=?", (T_STALE,)).fetchone()
    assert tuple(stale) == ("pending", None)
    failed = conn.execute("SELECT retry_at FROM jobs WHERE job_key=?", (T_FAILED,)).fetchone()
    assert failed[0] is None


async def test_help_lists_bindings_with_ids(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"rollouts.filter", "memtui.help", "memtui.jobs"} <= ids
        await pilot.press("escape")
        assert isinstance(app.screen, RolloutsScreen)


async def test_keymap_remaps_by_binding_id(ui_home: Path) -> None:
    from memtui.tui.app import make_app

    app = make_app(home=ui_home, cursor_blink=False, status_refresh=False, keymap={"memtui.jobs": "f2"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)


async def test_palette_offers_the_domain_commands(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"open: Jobs")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)


async def test_opens_on_an_empty_home(tmp_path: Path) -> None:
    app = app_for(tmp_path / "fresh-home")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        hint = app.screen.query_one("#empty-hint", Label)
        assert hint.display and "No rollouts indexed yet" in str(hint.content)
        for key in "2345":
            await pilot.press(key)
            await settle(pilot)
        assert not app.task_errors


def test_views_page_and_filter_in_sql(ui_home: Path) -> None:
    conn = open_context(home=ui_home).conn
    assert views.count_rollouts(conn) == 8
    assert views.count_rollouts(conn, "shop-api") == 3
    assert views.count_rollouts(conn, "status:done") == 3
    page = views.rollout_rows(conn, sort="updated", offset=2, limit=3)
    assert [r.id for r in page] == [r.id for r in views.rollout_rows(conn)][2:5]
    assert {r.status for r in views.rollout_rows(conn)} == {"done", "pending", "failed", "running", "no-op", "skipped"}
    assert views.count_rollouts(conn, "100%_") == 0  # LIKE wildcards are literal
    jobs = views.job_rows(conn)
    assert jobs[0].kind == views.GLOBAL and jobs[1].status == "stale"
    assert not views.release_stale_lease(conn, "memory_stage1", T_FAILED)  # not running: refused


async def test_memory_over_loader_limits_is_flagged(ui_home: Path) -> None:
    (ui_home / "memories" / "MEMORY.md").write_text("- a line\n" * 250)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        warnings = str(app.screen.query_one("#memory-warnings").render())
        assert "MEMORY.md has 250 lines" in warnings


async def test_phase2_from_review_shows_progress_and_can_be_cancelled(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import memtui.services.phase2.consolidate
    from memtui.tui.widgets.task_bar import TaskBar, TaskLine

    started = threading.Event()

    def slow_phase2(ctx, *, offline=None, force=False, retry=False, auto_approve=False, progress=None, cancel=None):  # type: ignore[no-untyped-def]
        progress("syncing the workspace [3 files]")
        started.set()
        assert cancel.wait(HANG_GUARD), "never cancelled"
        return memtui.services.phase2.consolidate.Phase2Result(outcome="failed", reason="failed_agent: cancelled")

    monkeypatch.setattr(memtui.services.phase2.consolidate, "run_phase2", slow_phase2)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("P")
        await wait_for(pilot, started.is_set)
        bar = app.screen.query_one(TaskBar)

        def detail() -> str:
            lines = bar.query(TaskLine)
            return str(lines.first().query_one(".detail").render()) if lines else ""

        await wait_for(pilot, lambda: detail() == "step 1: syncing the workspace [3 files]")  # the progress shown
        assert bar.has_class("-busy")
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert not app.task_states and not bar.has_class("-busy")
        assert [e.outcome for e in app.task_log if e.task == "phase2"] == ["cancelled"]


async def test_enter_in_review_opens_the_file(ui_home: Path) -> None:
    from textual.widgets import OptionList

    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        files = app.screen.query_one("#files", OptionList)
        files.focus()
        files.highlighted = files.get_option_index("memory_summary.md")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MemoryScreen)
        assert app.screen.query_one(TabbedContent).active == "pane-summary-md"
        await pilot.press("3")
        await settle(pilot)
        files = app.screen.query_one("#files", OptionList)
        files.focus()
        files.highlighted = files.get_option_index("raw_memories.md")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FileViewScreen) and app.screen.label == "raw_memories.md"


async def test_extract_now_runs_phase1_for_that_rollout(ui_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memtui.services.phase1.run

    calls: list[dict] = []

    def fake_phase1(ctx, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(kwargs)
        kwargs["progress"](1, 1, "done")
        return memtui.services.phase1.run.Phase1Summary(candidates=1, claimed=1, succeeded=1)

    monkeypatch.setattr(memtui.services.phase1.run, "run_phase1", fake_phase1)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.open_rollout(T_DOCS)
        await settle(pilot)
        await pilot.press("e")  # already extracted: it asks first
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal) and not calls
        await pilot.press("y")
        await settle(pilot)
    assert [c["thread_id"] for c in calls] == [T_DOCS]
    assert any("1 succeeded" in n.message for n in app._notifications)


def test_launch_opens_the_configured_home_and_ingests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtui.tui import launch
    from memtui.tui.app import MemtuiApp

    seen: dict = {}

    def fake_run(self: MemtuiApp, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.update(home=self.ctx.paths.home, ingest=self.ingest_on_start)

    monkeypatch.setattr(MemtuiApp, "run", fake_run)
    home = tmp_path / "configured"
    monkeypatch.setenv("MEMTUI_HOME", str(home))
    assert launch.launch() == 0
    assert seen == {"home": home, "ingest": True}
    assert (home / "state.sqlite").exists()
