"""A title the person gave a session (Claude Code's ``/rename``: a ``custom-title`` line, as Claude Code 2.1 writes
it) shows in the Rollouts list, its strip and the rollout detail; and a sub-agent's first item is shown as the
parent agent's message, not the user's. Real transcripts, ingested, then the app driven with Pilot."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label, Static

from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.tui.widgets.windowed_table import WindowedTable
from tests.fixtures.rollouts import write_claude_session
from tests.tui.conftest import SIZE, app_for, settle

SID = "5a1e0c4d-2b3f-4c6d-8e9f-0a1b2c3d4e5f"
TITLE = "Sitemap hunt"
# A line Claude Code 2.1 appends on ``/rename Sitemap hunt`` (copied from a real session, ids replaced).
CUSTOM_TITLE = {"type": "custom-title", "customTitle": TITLE, "sessionId": SID}
PARENT_PROMPT = "Search the repository for the sitemap generator and report the file."


def ingest(ui_home: Path) -> None:
    ctx = open_context(home=ui_home)
    claude_dir = ctx.paths.claude_dir  # the home's config names its own sources
    write_claude_session(
        claude_dir,
        session_id=SID,
        cwd="/home/ana/src/docs-site",
        user_messages=("Where is the sitemap generated?",),
        extra_lines=[CUSTOM_TITLE],
    )
    write_claude_session(
        claude_dir,
        subagent_of=SID,
        agent_id="a5e8196e",
        cwd="/home/ana/src/docs-site",
        user_messages=(PARENT_PROMPT,),
        assistant_messages=("src/sitemap.ts",),
    )
    try:
        run_ingest(ctx)
    finally:
        ctx.close()


async def test_a_renamed_session_shows_its_title_in_the_list_and_the_detail(ui_home: Path) -> None:
    ingest(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.filter_input.value = "sitemap hunt"  # the title is what the filter finds, too
        await settle(pilot)
        table = screen.query_one("#rollouts", WindowedTable)
        assert table.row_count == 1
        cells = [str(c) for c in table.get_row_at(0)]
        assert f"{TITLE} — Where is the sitemap generated?" in cells
        assert str(screen.query_one("#row-detail", Static).render()).startswith(f"{TITLE} · {SID}")
        app.open_rollout(SID)
        await settle(pilot)
        assert str(app.screen.query_one("#detail-meta", Static).render()).startswith(f"{TITLE} · {SID}")


async def test_an_unnamed_session_shows_no_title_twice(ui_home: Path) -> None:
    ingest(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sub = f"{SID}:agent-a5e8196e"  # its title is its first line: not repeated before it
        app.open_rollout(sub)
        await settle(pilot)
        assert str(app.screen.query_one("#detail-meta", Static).render()).startswith(sub)


async def test_a_sub_agents_prompt_is_shown_as_the_parent_agents(ui_home: Path) -> None:
    ingest(ui_home)
    app = app_for(ui_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_rollout(f"{SID}:agent-a5e8196e")
        await settle(pilot)
        headings = [str(label.render()) for label in app.screen.query("#conversation Label.role").results(Label)]
        assert headings[0] == "agent message from parent agent  item 1"
        assert not any(h.startswith("user") for h in headings)
