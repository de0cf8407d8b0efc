"""A diff of hundreds of hunks paints its first hunks at once and mounts the rest after the first paint; every key
that goes to a hunk not yet mounted (the next hunk, a file, the end) still lands on it (issue 35.5)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from memtui.tui.widgets.diff_view import FIRST_HUNKS, SHOWN_LINES, DiffView, HunkView
from tests.tui.conftest import settle

FILES = 60


def _diff(files: int = FILES) -> str:
    parts = []
    for n in range(files):
        body = "".join(f"+line {i} of summary {n}\n" for i in range(12))
        parts.append(
            f"diff --git a/rollout_summaries/s{n:03}.md b/rollout_summaries/s{n:03}.md\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/rollout_summaries/s{n:03}.md\n@@ -0,0 +1,12 @@\n{body}"
        )
    return "".join(parts)


class _Diffs(App[None]):
    def compose(self) -> ComposeResult:
        yield DiffView(id="diff")

    def on_mount(self) -> None:
        self.query_one(DiffView).show_diff(_diff())


async def test_the_first_hunks_paint_before_the_rest_are_mounted() -> None:
    app = _Diffs()
    async with app.run_test(size=(100, 30)) as pilot:
        diff = app.query_one(DiffView)
        assert len(diff.hunks) == FILES
        mounted_first = [v.is_mounted for v in diff.hunks]
        assert all(mounted_first[:FIRST_HUNKS]) and not all(mounted_first), "all mounted before the first paint"
        assert not diff.hunks[-1].filled, "a hunk far below was highlighted before the first paint"
        await settle(pilot)
        for _ in range(FILES):  # the batches follow one refresh after another
            if all(v.is_mounted for v in diff.hunks):
                break
            await pilot.pause()
        assert all(v.is_mounted and v.filled for v in diff.hunks)
        assert [v.index for v in diff.query(HunkView)] == list(range(FILES))  # in the diff's order


async def test_a_key_to_a_hunk_not_yet_mounted_lands_on_it() -> None:
    app = _Diffs()
    async with app.run_test(size=(100, 30)) as pilot:
        diff = app.query_one(DiffView)
        target = diff.hunks[FILES - 3]
        assert not target.is_mounted
        diff.current = target.index
        await pilot.pause()
        await pilot.pause()
        assert target.is_mounted and diff.current_hunk is target
        assert target.region.overlaps(diff.scrollable_content_region), "the hunk gone to is on screen"


async def test_G_goes_to_the_end_of_the_whole_diff() -> None:
    app = _Diffs()
    async with app.run_test(size=(100, 30)) as pilot:
        diff = app.query_one(DiffView)
        diff.focus()
        await pilot.press("G")
        await settle(pilot)
        last = diff.hunks[-1]
        assert last.is_mounted and last.region.overlaps(diff.scrollable_content_region)


def _long_diff(lines: int) -> str:
    body = "".join(f"+line {i}\n" for i in range(lines))
    return f"diff --git a/MEMORY.md b/MEMORY.md\n--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -0,0 +1,{lines} @@\n{body}"


class _Long(App[None]):
    def compose(self) -> ComposeResult:
        yield DiffView(id="diff")

    def on_mount(self) -> None:
        self.query_one(DiffView).show_diff(_long_diff(2000))


async def test_a_long_hunk_shows_its_first_lines_and_says_how_many_more() -> None:
    app = _Long()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        view = app.query_one(DiffView).hunks[0]
        shown = view.base.plain
        assert "+line 298\n" in shown and "+line 299" not in shown  # the header is the first of the 300
        assert f"… {2001 - SHOWN_LINES:,} more lines in this hunk: o shows them all" in shown
        assert view.show_all() and "+line 1999" in view.base.plain and not view.hidden_lines
        assert not view.show_all()  # already whole


async def test_a_search_that_matches_the_hidden_lines_shows_them() -> None:
    app = _Long()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        view = app.query_one(DiffView).hunks[0]
        assert view.search("line 1500") == 1 and view.expanded
