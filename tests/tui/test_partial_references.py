"""The approve dialog shows which references a partial approval would leave dangling, and takes the fix."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.tui.screens.choice import ChoiceModal
from memtui.tui.screens.dialogs import TextPromptModal
from memtui.tui.screens.review import ReviewScreen
from memtui.tui.widgets.diff_view import DiffView
from tests.conftest import FROZEN_NOW
from tests.support.chat_server import ChatServer, reply_text, reply_tool_calls
from tests.test_phase2_support import add_output, context
from tests.tui.conftest import SIZE, app_for, settle

A = "0194f5a6-89ab-7cde-8123-456789abcdef"
B = "0194f5a6-89ab-7cde-8123-456789abcdf0"


def new_task_run() -> None:
    """A run that adds a task group in front of another: with stable task ids nothing is renumbered, so its hunk
    can be left out alone (issue 33.3)."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one\n- alpha rule two")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- beta rule\n- beta more", cwd="/work/other")
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    ctx.close()


def dangling_run() -> None:
    """An agent's run that adds a task at the top and, far below (another hunk), a user-level bullet pointing at it:
    two hunks of MEMORY.md that only make sense together (the dangling-reference check's case)."""
    ctx = context()
    add_output(ctx.conn, A, FROZEN_NOW - 3600, raw="- alpha rule one\n- alpha rule two")
    assert run_phase2(ctx, offline=True, auto_approve=True).outcome == "approved"
    root = ctx.paths.memory_root
    old = (root / "MEMORY.md").read_text()
    new_group = "# Task Group: /work/other\nscope: the other project\napplies_to: cwd=/work/other; reuse_rule=always\n\n## Task 77: beta\n- beta rule\n\n"
    head, sep, rest = old.partition("# Task Group:")
    memory = head + new_group + sep + rest
    memory = memory.replace(
        "<!-- memtui:offline:end -->",
        "<!-- memtui:offline:end -->\n\n# Task Group: user-level\napplies_to: global\n\n- beta everywhere [Task 77]",
        1,
    )
    summary = (root / "memory_summary.md").read_text()
    add_output(ctx.conn, B, FROZEN_NOW - 60, raw="- beta rule", cwd="/work/other")
    with ChatServer() as server:
        server.script(
            reply_tool_calls(
                ("write_file", {"path": "MEMORY.md", "content": memory}),
                ("write_file", {"path": "memory_summary.md", "content": summary + "- beta is new\n"}),
            ),
            reply_text("done"),
        )
        saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MEMTUI_PROVIDER")}
        os.environ.update(
            OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-loopback-000000000000", MEMTUI_PROVIDER="openai"
        )
        try:
            c2 = context()
            result = run_phase2(c2, offline=False, force=True)
            assert result.outcome == "awaiting_review", result.reason
            c2.close()
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    ctx.close()


async def test_7_the_approve_dialog_names_dangling_references_and_takes_the_fix(frozen_clock) -> None:
    await asyncio.to_thread(dangling_run)  # the agent's run has an event loop of its own
    home = Path(os.environ["MEMTUI_HOME"])
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and screen.awaiting
        first = screen.query_one(DiffView).current_hunk
        assert first is not None and first.hunk.file == "MEMORY.md"
        await pilot.press("space")  # leave out the hunk that adds the group and the task a later hunk points at
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ChoiceModal)
        assert "[Task 77] names no task of this file" in app.screen.body and first.hunk.id in app.screen.body
        await pilot.press("enter")  # the focused button: take the hunk back
        await settle(pilot)
        assert first.hunk.id not in screen.rejected and not first.has_class("-rejected")
        assert not isinstance(app.screen, TextPromptModal)  # nothing left out any more: the plain confirm
        await pilot.press("y")
        await settle(pilot)
        assert not app.task_errors, app.task_errors
    ctx = context()
    assert review.pending_run(ctx.conn) is None
    ctx.close()
