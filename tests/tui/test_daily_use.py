"""Pilot tests of daily use, one group per concern: progress and the task log, failures explained,
Phase 2 ignoring the cooldown, small and large terminals, one vocabulary, the detail view, the empty state,
and the smaller items (plus search, $EDITOR, clipboard, clickable tabs)."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from textual.widgets import DataTable, Footer, Label, OptionList, Static

from memtui.domain import labels
from memtui.services import views
from memtui.services.context import open_context
from memtui.state.status import collect_status
from memtui.tui.screens.detail import RolloutDetailScreen, readable
from memtui.tui.screens.dialogs import ConfirmModal, TextPromptModal
from memtui.tui.screens.file_view import FileViewScreen
from memtui.tui.screens.help import HelpScreen
from memtui.tui.screens.jobs import JobsScreen
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.screens.task_log import TaskLogScreen
from memtui.tui.tasks import NO_MEMORIES
from memtui.tui.widgets.status_bar import Tab, status_line
from memtui.tui.widgets.task_bar import TaskBar, TaskLine
from memtui.tui.widgets.windowed_table import WindowedTable
from tests.support.waiting import HANG_GUARD
from tests.tui.conftest import SIZE, app_for, settle, wait_for
from tests.tui.homes import T_DOCS, T_FAILED

NARROW = (80, 24)
WIDE = (200, 50)


# ---- 1. progress is visible, and the task log outlives the toasts ----------------------------------


async def test_progress_has_its_own_row_with_counts_and_the_log_keeps_the_outcome(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memtui.services.ingest

    go = threading.Event()
    reached = threading.Event()

    def slow_ingest(ctx, progress=None, cancel=None):  # type: ignore[no-untyped-def]
        progress(3, 12, str(ui_home / "a-rollout.jsonl"))
        reached.set()
        go.wait(HANG_GUARD)  # the test lets it finish once it has looked at the bar
        return memtui.services.ingest.IngestSummary(new=2, unchanged=10, files=12)

    monkeypatch.setattr(memtui.services.ingest, "run_ingest", slow_ingest)
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("f5")
        await wait_for(pilot, reached.is_set)
        bar = app.screen.query_one(TaskBar)
        footer = app.screen.query_one(Footer)

        def counts() -> str:
            lines = bar.query(TaskLine)
            return str(lines.first().query_one(".counts", Label).render()) if lines else ""

        await wait_for(pilot, lambda: counts().startswith("3/12"))  # the progress message was shown
        line = bar.query_one(TaskLine)
        assert bar.has_class("-busy")
        assert bar.region.bottom <= footer.region.y  # its own row, above the footer
        assert str(line.query_one(".counts", Label).render()).startswith("3/12")
        assert str(line.query_one(".detail", Label).render()) == "reading a-rollout.jsonl"
        go.set()
        await settle(pilot)
        assert not bar.has_class("-busy")
        entry = next(e for e in app.task_log if e.task == "ingest")
        assert entry.outcome == "finished" and "2 new" in entry.message and entry.ended is not None
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert isinstance(app.screen, TaskLogScreen)
        table = app.screen.query_one("#log-table", DataTable)
        assert any("Ingest" in str(table.get_row_at(i)[1]) for i in range(table.row_count))


# ---- 2. a failed rollout and a failing loader are explained ---------------------------------------


async def test_a_vanished_rollout_file_is_explained_in_the_header(ui_home: Path) -> None:
    # (the file itself is shared by every test of the session: point this home's row at a vanished copy)
    conn = open_context(home=ui_home).conn
    conn.execute("UPDATE threads SET path=? WHERE id=?", (str(ui_home / "gone" / "rollout.jsonl"), T_DOCS))
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(T_DOCS)
        await settle(pilot)
        meta = str(app.screen.query_one("#detail-meta", Static).render())
        assert "file vanished while reading" in meta
        assert "file vanished while reading" in str(
            app.screen.query_one("#conversation").query(Static).first().render()
        )


async def test_a_failed_rollout_shows_its_whole_error(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        app.open_rollout(T_FAILED)
        await settle(pilot)
        whole = "model returned invalid JSON: expected `raw_memory` [schema]"
        assert whole in str(app.screen.query_one("#detail-meta", Static).render())
        assert whole in str(app.screen.query_one("#run-error", Static).render())  # the jobs strip, in full


async def test_a_loader_error_reaches_the_screen_and_the_log(ui_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(conn):  # type: ignore[no-untyped-def]
        raise RuntimeError("database disk image is malformed [test]")

    monkeypatch.setattr(views, "review_run", broken)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert "malformed [test]" in str(app.screen.query_one("#review-meta", Static).render())
        assert any("malformed [test]" in e for e in app.task_errors)
        assert any("malformed [test]" in e.message for e in app.task_log)


# ---- 3. Phase 2 ignoring the cooldown, after a yes -------------------------------------------------


async def test_palette_offers_phase2_ignoring_the_cooldown_with_a_confirmation(
    ui_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memtui.services.phase2.consolidate as consolidate

    calls: list[bool] = []

    def fake(ctx, *, offline=None, force=False, retry=False, auto_approve=False, progress=None, cancel=None):  # type: ignore[no-untyped-def]
        calls.append(force)
        return consolidate.Phase2Result(outcome="no_changes", selected=3)

    monkeypatch.setattr(consolidate, "run_phase2", fake)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.confirm_phase2_force()  # a run awaits review: said at once, nothing asked, nothing run
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmModal) and not calls
        assert any(n.title == "Phase 2 not started" for n in app._notifications)
        # after an approve (as in the issue), the palette offers it with a confirmation
        app.ctx.conn.execute("UPDATE phase2_runs SET status='approved'")
        app.refresh_status()
        await settle(pilot)
        await pilot.press("ctrl+p", *"ignore cooldown")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal) and not calls
        await pilot.press("y")
        await settle(pilot)
    assert calls == [True]
    entry = next(e for e in app.task_log if e.task == "phase2")
    assert entry.title == "Phase 2 (ignore cooldown)" and entry.outcome == "no changes"


def test_a_cooldown_skip_points_to_the_palette_not_a_cli_flag() -> None:
    from memtui.services.phase2.consolidate import Phase2Result
    from memtui.services.phase2.outcome import SkipReason
    from memtui.tui.tasks import describe_phase2

    out = describe_phase2(Phase2Result.skipped(SkipReason.COOLDOWN))
    assert out.verb == "skipped" and "--force" not in out.summary and "ignore cooldown" in out.summary


# ---- 4. 80x24 and 200x50 ----------------------------------------------------------------------------


async def test_every_screen_keeps_its_status_line_and_footer_at_80x24(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        for key in "12345":
            await pilot.press(key)
            await settle(pilot)
            counts = app.screen.query_one("#counts", Static)
            assert status_line(app.status, 80).cell_length <= 80
            assert "phase 2" in str(counts.render())
            footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
            assert "f1" in ",".join(footer_keys)
        await pilot.press("1")
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert {"usage", "preview"} <= {str(k.value) for k in table.columns}
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= 80


async def test_review_stacks_its_panes_at_80_columns_and_zooms(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        files, diff = app.screen.query_one("#files", OptionList), app.screen.query_one("#diff")
        assert files.region.bottom <= diff.region.y and diff.region.width >= 76
        await pilot.press("z")
        await settle(pilot)
        assert not files.display or files.region.height == 0


async def test_wide_terminals_use_the_space(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert len(table.columns) == 8 and table.columns["preview"].width > 80  # type: ignore[index]
        await pilot.press("2")
        await settle(pilot)
        jobs = app.screen.query_one(WindowedTable)
        assert jobs.columns["error"].width > 60  # type: ignore[index]
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert app.screen.query_one("#diff").split  # side by side


async def test_help_fits_80_columns_and_lists_quit_enter_keymap_and_home(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#help").region.right <= 80
        keys = {row[0] for row in app.screen.rows}
        assert {"ctrl+q", "enter"} <= keys
        text = str(app.screen.query_one("#help-keymap", Static).render())
        assert "[keymap]" in text and "~/.memtui/config.toml" in text
        assert "App.set_keymap" not in str(app.screen.query_one("#help-intro", Static).render())


# ---- 5. one vocabulary ------------------------------------------------------------------------------


async def test_jobs_and_rollouts_say_failed_and_the_phase2_job_awaits_review(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)
        table = app.screen.query_one(WindowedTable)
        status_col = list(table.columns).index(next(k for k in table.columns if k.value == "status"))
        statuses = {str(table.get_row_at(i)[status_col]) for i in range(table.row_count)}
        assert "failed" in statuses and "awaiting review" in statuses and "error" not in statuses


def test_labels_turn_codes_into_words() -> None:
    for code in ("no_changes", "out_of_range", "not_interactive", "error"):
        assert "_" not in labels.label(code) and labels.label(code) != "error"
    assert labels.counts({"not_interactive": 2, "too_old": 1}) == "2 not interactive, 1 too old"


async def test_a_skipped_phase2_is_titled_skipped_and_needs_memories(tmp_path: Path) -> None:
    app = app_for(tmp_path / "fresh-home")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.run_phase2()
        await settle(pilot)
        entry = next(e for e in app.task_log if e.task == "phase2")
        assert (entry.outcome, entry.message) == ("skipped", NO_MEMORIES)
        assert "memtui " not in entry.message  # no CLI advice inside the UI
        assert any(n.title == "Phase 2 skipped" for n in app._notifications)
        assert (
            open_context(home=tmp_path / "fresh-home").conn.execute("SELECT COUNT(*) FROM phase2_runs").fetchone()[0]
            == 0
        )


# ---- 6. the detail view -----------------------------------------------------------------------------


def test_tool_output_json_is_rendered_as_text() -> None:
    assert readable('{"output": "line one\\nline two", "metadata": {"exit_code": 1}}') == (
        "line one\nline two\n(exit code 1)"
    )
    assert readable('{"cmd": "pnpm test"}') == "cmd: pnpm test"
    assert readable('["bash", "-lc", "ls"]') == "bash -lc ls"
    assert readable("not json {") == "not json {"


async def test_expand_key_changes_its_label_keeps_the_scroll_and_history_fits_120(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(T_DOCS)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RolloutDetailScreen)
        await wait_for(pilot, lambda: screen.query("#conversation Collapsible"))

        def label_of_o() -> str:
            return next(b.binding.description for b in screen.active_bindings.values() if b.binding.key == "o")

        assert label_of_o() == "Expand tools"
        conv = screen.query_one("#conversation")
        text = "\n".join(str(s.render()) for s in conv.query(Static))
        assert '{"cmd"' not in text and "\\n" not in text
        await pilot.press("o")
        await settle(pilot)
        assert label_of_o() == "Collapse tools"
        history = screen.query_one("#job-history", DataTable)
        keys = [str(k.value) for k in history.columns]
        assert keys[-2:] == ["redactions", "error"]
        assert sum(c.get_render_width(history) for c in history.columns.values()) <= history.region.width


# ---- 7. the empty state -----------------------------------------------------------------------------


async def test_the_empty_state_names_the_paths_and_the_demo(tmp_path: Path) -> None:
    app = app_for(tmp_path / "fresh-home")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        hint = str(app.screen.query_one("#empty-hint", Label).render())
        assert "memtui demo" in hint and "sessions" in hint and "projects" in hint
        assert "CODEX_HOME" not in hint
        assert app.screen.query_one("#empty-hint").region.height >= 2  # wraps instead of being cut
        await pilot.press("4")
        await settle(pilot)
        checks = str(app.screen.query_one("#memory-warnings", Static).render())
        assert "do not exist yet" in checks and "loads cleanly" not in checks


# ---- 8. the smaller items ---------------------------------------------------------------------------


async def test_extract_on_an_unindexed_id_says_so(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.open_rollout("019e9999-0000-7000-8000-000000000000")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert not app.task_log or all(e.task == "" for e in app.task_log)
        assert "not in the index" in str(app.screen.query_one("#detail-meta", Static).render())


def test_status_counts_redactions_of_a_re_extracted_rollout_once(ui_home: Path) -> None:
    conn = open_context(home=ui_home).conn
    before = collect_status(conn)["redactions"]
    conn.execute(
        """INSERT INTO job_runs (kind, job_key, started_at, finished_at, outcome, noop, redactions, offline)
           VALUES ('memory_stage1', ?, 1, 2, 'succeeded', 0, '{"openai_key": 1}', 1)""",
        (T_DOCS,),
    )
    assert collect_status(conn)["redactions"] == before == {"openai_key": 1}


def test_job_filter_treats_like_wildcards_literally(ui_home: Path) -> None:
    conn = open_context(home=ui_home).conn
    assert views.count_jobs(conn, "%") == 0 and views.count_jobs(conn, "memory%stage1") == 0
    assert views.count_jobs(conn, "memory_stage1") == 6 and views.count_jobs(conn, "schema") == 1


async def test_an_empty_reject_reason_is_said_in_the_dialog(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, TextPromptModal)
        await pilot.press("enter")
        await settle(pilot)
        error = app.screen.query_one("#prompt-error", Static)
        assert error.display and "Required" in str(error.render())


async def test_sorting_by_uses_shows_the_arrow_and_j_k_move_everywhere(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        app.screen.sort, app.screen.descending = "usage", True  # type: ignore[attr-defined]
        app.screen._resort()  # type: ignore[attr-defined]
        await settle(pilot)
        label = str(table.columns["usage"].label)  # type: ignore[index]
        assert label.endswith("▼") and table.columns["usage"].width >= len(label)  # type: ignore[index]
        await pilot.press("j", "j", "k")
        assert table.cursor_row == 1
        app.open_rollout(T_DOCS)
        await settle(pilot)
        history = app.screen.query_one("#job-history", DataTable)
        history.focus()
        history.move_cursor(row=0)
        await pilot.press("j")
        assert history.cursor_row == 1


async def test_an_out_of_range_citation_selects_nothing_and_says_why(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_cited("MEMORY.md", 400, 410, "too far")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FileViewScreen)
        assert "past the end" in str(screen.query_one("#file-title", Static).render())
        assert screen.area.selected_text == ""


async def test_tabs_are_clickable_and_keys_right_after_a_switch_are_kept(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tab = next(t for t in app.screen.query(Tab) if t.mode == "jobs")
        await pilot.click(tab)
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)
        await pilot.press("1", "j")  # no pause between the switch and the key
        await settle(pilot)
        assert app.screen.query_one(WindowedTable).cursor_row == 1


# ---- search, $EDITOR / $PAGER, clipboard ------------------------------------------------------------


async def test_slash_searches_the_diff_and_the_file_view(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("slash", *"memory", "enter")
        await settle(pilot)
        assert app.screen.matches and str(app.screen.query_one("#search-count").render()).startswith("1 of ")
        await pilot.press("n")
        assert app.screen.match_index == 1
        app.open_cited("MEMORY.md", 1, 2)
        await settle(pilot)
        await pilot.press("slash", *"task", "enter")
        await settle(pilot)
        assert app.screen.area.selected_text.lower() == "task"  # type: ignore[attr-defined]


async def test_e_opens_a_memory_file_in_the_editor_and_reloads(ui_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    editor = ui_home / "fake-editor"
    editor.write_text('#!/bin/sh\nfor f; do :; done\nprintf "added by the editor\\n" >> "$f"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_memory_file("raw_memories.md")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FileViewScreen)
        await pilot.press("e")
        await settle(pilot)
        assert app.screen is screen  # no second identical view
        assert screen.area.text.endswith("added by the editor\n")


async def test_y_copies_with_osc52(ui_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = app_for(ui_home)
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("y")
        app.open_cited("MEMORY.md", 2, 3)
        await settle(pilot)
        await pilot.press("y")
    assert len(copied) == 2 and len(copied[0]) == 36 and copied[0].count("-") == 4  # the highlighted rollout id
    assert copied[1] == "MEMORY.md:2-3"


def test_no_string_registry_and_one_definition_of_the_job_constants() -> None:
    root = Path(__file__).resolve().parents[2] / "memtui"
    assert not (root / "tui" / "ops.py").exists()
    defs = [
        p
        for p in root.rglob("*.py")
        if 'STAGE1 = "memory_stage1"' in p.read_text() or '= "memory_consolidate_global"' in p.read_text()
    ]
    assert [p.relative_to(root).as_posix() for p in defs] == ["state/jobs.py"]
    assert "_screen_stacks" not in (root / "tui" / "app.py").read_text()


async def test_slash_searches_the_conversation_and_opens_collapsed_tool_output(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(T_DOCS)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RolloutDetailScreen)
        await wait_for(pilot, lambda: screen.query("#conversation Collapsible"))
        await pilot.press("slash", *"monday", "enter")
        await settle(pilot)
        assert len(screen.matches) == 1  # only in the second tool's output, which starts collapsed
        block = screen.matches[0].widget
        assert "Monday" in block.render().plain  # type: ignore[attr-defined]
        assert any(s.style for s in block.render().spans)  # type: ignore[attr-defined]  (highlighted)
        from textual.widgets import Collapsible

        assert not next(a for a in block.ancestors if isinstance(a, Collapsible)).collapsed
        await pilot.press("slash", "escape")
        await settle(pilot)
        assert not screen.matches


async def test_side_by_side_keeps_the_hunk_decisions(ui_home: Path) -> None:
    app = app_for(ui_home)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("space")  # leave the first hunk out
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        diff = app.screen.query_one("#diff")
        assert diff.split and diff.hunks[0].has_class("-rejected")  # type: ignore[attr-defined]
