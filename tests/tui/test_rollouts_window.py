"""The Rollouts list holds only what fits the screen plus a margin, and still scrolls, counts and sorts the whole."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Label

from memtui.services import views
from memtui.services.context import open_context
from memtui.tui.screens.rollouts import RolloutsScreen
from memtui.tui.widgets.windowed_table import WindowedTable
from tests.tui.conftest import SIZE, app_for, settle

BULK = 1500


def _bulk(home: Path) -> int:
    conn = open_context(home=home).conn
    conn.executemany(
        "INSERT INTO threads (id, source_kind, path, session_source, updated_at, ingested_at) VALUES (?,?,?,?,?,?)",
        [(f"bulk-{i:05d}", "codex", f"/x/{i}.jsonl", "cli", 1_000_000 + i, 0) for i in range(BULK)],
    )
    return int(conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0])


def _position(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.screen.query_one("#position", Label).content)


async def test_the_list_holds_a_screen_and_a_margin_and_pages_to_the_end(ui_home: Path) -> None:
    total = _bulk(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert table.row_count == SIZE[1] + WindowedTable.MARGIN < WindowedTable.WINDOW
        assert _position(app).startswith(f"1 of {total:,}")
        seen = {table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value}
        for _ in range(total // 20 + 5):  # page down through every window to the last row
            await pilot.press("pagedown")
            await settle(pilot)
            seen.add(table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value)
            assert table.row_count <= table.window
        assert table.absolute_row == total - 1
        assert _position(app).startswith(f"{total:,} of {total:,}")
        assert table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value == "bulk-00000"  # the oldest
        assert len(seen) > total // 40  # it moved through the list, window after window


async def test_sorting_and_filtering_a_short_window_cover_the_whole_list(ui_home: Path) -> None:
    total = _bulk(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RolloutsScreen)
        table = screen.query_one(WindowedTable)
        await pilot.press("r")  # oldest first
        await settle(pilot)
        assert table.coordinate_to_cell_key((0, 0)).row_key.value == "bulk-00000"
        assert _position(app).startswith(f"1 of {total:,}")
        screen.query_one("#filter", Input).value = "bulk-01"  # bulk-01000 .. bulk-01499
        await settle(pilot)
        assert _position(app).startswith("1 of 500")
        assert table.row_count == table.window
        await pilot.press("G")
        await settle(pilot)
        assert table.absolute_row == 499
        assert table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value == "bulk-01499"


async def test_a_taller_terminal_fetches_the_rows_that_now_fit(ui_home: Path) -> None:
    _bulk(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(WindowedTable)
        assert table.row_count == 24 + WindowedTable.MARGIN  # what fits 24 lines, plus the margin
        await pilot.resize_terminal(120, 60)
        await settle(pilot)
        assert table.row_count == table.window == 60 + WindowedTable.MARGIN


def test_a_count_by_job_status_matches_the_status_shown(ui_home: Path) -> None:
    conn = open_context(home=ui_home).conn
    for value in ("failed", "running", "done", "pending", "skipped", "FAILED"):
        shown = [r for r in views.rollout_rows(conn, "", limit=10_000) if r.status == value.lower()]
        assert views.count_rollouts(conn, f"status:{value}") == len(shown), value
    assert views.count_rollouts(conn, "status:failed") >= 1  # the home has a failed extraction
