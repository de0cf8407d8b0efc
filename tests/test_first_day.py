"""A first run over a history older than memtui's windows (issue 33.1): the README's daily workflow, as a new user
follows it on 16 months of Codex and Claude Code sessions, ends with a consolidation that holds them all.

Each part has its own test: Phase 1 offers the backfill (how many, their span, the command); the backfilled memories
reach the first consolidation (``max_unused_days`` counts from when a memory was made or used); retention never
removes a memory made since the last consolidation; every "nothing to do" names the setting or flag that changes it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core import clock
from memtui.services.context import open_context
from memtui.state import runs
from memtui.state.selection import expired_stage1_outputs, get_phase2_input_selection
from tests.fixtures.history import NOW, SESSIONS, Session, older, recent, write_history
from tests.fixtures.rollouts import write_codex_rollout
from tests.test_phase2_support import DAY, add_output

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.fixture
def history(isolated_env, frozen_clock, monkeypatch) -> dict[str, Session]:
    """The sessions where the agents keep theirs (``~/.codex``, ``~/.claude``), the offline provider, and now."""
    home = isolated_env["HOME"]
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("MEMTUI_PROVIDER", "offline")  # what the README's test pins too: no model, no network
    return write_history(home / ".codex", home / ".claude")


def isolated_home() -> Path:
    return Path(os.environ["HOME"]) / ".codex"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys, *args: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 0, (args, out, err)
    return out


def daily_workflow() -> list[str]:
    """The README's "Daily workflow" commands, as written, up to the review (the person decides from there)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Daily workflow", 1)[1]
    block = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert block is not None
    commands = [re.split(r"\s{2,}#", line, maxsplit=1)[0].strip() for line in block.group(1).splitlines()]
    commands = [c for c in commands if c.startswith("memtui ")]
    return commands[: commands.index("memtui review show --stat") + 1]


# ---- the whole first day -----------------------------------------------------------------------------------------


def test_the_readme_workflow_plus_the_offered_backfill_consolidates_every_eligible_session(history, capsys):
    workflow = daily_workflow()
    assert workflow[:3] == ["memtui ingest", "memtui phase1", "memtui phase2"], workflow
    said: dict[str, str] = {}
    backfills = 0
    for command in workflow:
        said[command] = ok(capsys, *shlex.split(command)[1:])
        if command == "memtui phase1":
            # memtui offers the backfill itself, naming the exact command: the one step the person adds
            offer = re.search(
                r"^older +(\d+) session\(s\) from (\S+) to (\S+) .*\n +`(memtui [^`]+)`", said[command], re.M
            )
            assert offer, said[command]
            assert (int(offer[1]), offer[2], offer[3]) == (len(older()), "2025-03-04", "2026-06-12")
            backfill = offer[4]
            assert backfill == "memtui phase1 --all"
            said[backfill] = ok(capsys, *shlex.split(backfill)[1:])
            backfills += 1
    assert backfills == 1
    assert f"{len(recent())} eligible" in said["memtui phase1"]
    assert f"{len(older())} succeeded" in said["memtui phase1 --all"]
    assert "awaiting review" in said["memtui phase2"], said["memtui phase2"]
    assert "MEMORY.md" in said["memtui review show --stat"]

    ctx = open_context()
    try:
        run = runs.pending(ctx.conn)
        assert run is not None
        assert {tid for tid, _ in run.selected} == set(history), "every eligible session reached the consolidation"
        assert ctx.conn.execute("SELECT COUNT(*) FROM stage1_outputs").fetchone()[0] == len(SESSIONS)
        memory = (ctx.paths.memory_root / "MEMORY.md").read_text(encoding="utf-8")
    finally:
        ctx.close()
    missing = [s.rule for tid, s in history.items() if tid not in memory or s.rule not in memory]
    assert missing == [], "MEMORY.md holds a memory (the rule, and its session's id) from every eligible session"


# ---- 1. the offer --------------------------------------------------------------------------------------------------


def test_phase1_offers_the_backfill_with_its_count_span_and_command_until_it_is_done(history, capsys):
    ok(capsys, "ingest")
    out = ok(capsys, "phase1")
    assert (
        f"older       {len(older())} session(s) from 2025-03-04 to 2026-06-12 older than max_rollout_age_days "
        "(10 days), not read yet\n            `memtui phase1 --all` extracts them once" in out
    ), out
    data = json.loads(ok(capsys, "phase1", "--json"))
    offer = data["older"]
    assert offer["count"] == len(older()) and offer["command"] == "memtui phase1 --all"
    assert offer["max_rollout_age_days"] == 10
    # the sessions' last events: a minute into the first session, and into the last of the older ones
    assert 0 <= offer["oldest"] - older()[0].ts < 60 and 0 <= offer["newest"] - older()[-1].ts < 60
    ok(capsys, "phase1", "--all")
    assert json.loads(ok(capsys, "phase1", "--json"))["older"] is None
    out = ok(capsys, "phase1")
    assert "older " not in out and "too old" not in out, "what the backfill read is up to date, not too old"
    assert f"{len(SESSIONS)} up to date" in out


# ---- 2. the backfill reaches the first consolidation ----------------------------------------------------------------


def test_memories_of_old_sessions_made_now_are_selected_and_one_used_long_ago_is_not(isolated_env, frozen_clock):
    ctx = open_context()
    try:
        add_output(ctx.conn, "old-session", frozen_clock - 400 * DAY)  # a session of last year...
        ctx.conn.execute("UPDATE stage1_outputs SET generated_at = ? WHERE thread_id = 'old-session'", (frozen_clock,))
        add_output(ctx.conn, "used-long-ago", frozen_clock - 90 * DAY, last_usage=frozen_clock - 60 * DAY)
        add_output(ctx.conn, "cited-lately", frozen_clock - 300 * DAY, last_usage=frozen_clock - DAY)
        picked = {m.thread_id for m in get_phase2_input_selection(ctx.conn, 256, 30)}
        assert picked == {"old-session", "used-long-ago", "cited-lately"}, "no consolidation has read any of them"
        runs.insert_no_changes(ctx.conn, frozen_clock - 80 * DAY, True, None, None, 0)  # one read them 80 days ago
        picked = {m.thread_id: m.fresh_at for m in get_phase2_input_selection(ctx.conn, 256, 30)}
    finally:
        ctx.close()
    # ...extracted now: made within max_unused_days, whatever its session's date
    assert picked == {"old-session": frozen_clock, "cited-lately": frozen_clock - DAY}


# ---- 3. retention ---------------------------------------------------------------------------------------------------


def test_retention_never_removes_a_memory_made_since_the_last_consolidation(isolated_env, frozen_clock):
    ctx = open_context()
    try:
        add_output(ctx.conn, "made-40-days-ago", frozen_clock - 40 * DAY)  # made (and dated) 40 days ago, never used
        assert expired_stage1_outputs(ctx.conn, 30) == [], "no consolidation has read it: it stays"
        runs.insert_no_changes(ctx.conn, frozen_clock - 50 * DAY, True, None, None, 0)
        assert expired_stage1_outputs(ctx.conn, 30) == [], "the last consolidation is older than the memory"
        runs.insert_no_changes(ctx.conn, frozen_clock - 35 * DAY, True, None, None, 0)
        assert expired_stage1_outputs(ctx.conn, 30) == ["made-40-days-ago"], "one read it, left it, 30 days went by"
    finally:
        ctx.close()


def test_a_backfill_left_unconsolidated_for_weeks_is_still_there_for_the_first_consolidation(history, capsys):
    ok(capsys, "ingest")
    ok(capsys, "phase1", "--all")
    out = ok(capsys, "phase2")
    assert "awaiting review" in out
    ok(capsys, "review", "reject", "--reason", "not now")  # a rejected run consolidated nothing
    clock.freeze(NOW + 45 * DAY)  # the person comes back after max_unused_days
    data = json.loads(ok(capsys, "phase1", "--json"))
    assert data["expired"] == 0
    out = ok(capsys, "phase2")
    assert "retention" not in out and "awaiting review" in out, out
    ctx = open_context()
    try:
        run = runs.pending(ctx.conn)
        assert run is not None and {tid for tid, _ in run.selected} == set(history)
    finally:
        ctx.close()


# ---- 4. every "nothing to do" names what would change it -------------------------------------------------------------


def test_phase1_with_nothing_to_do_names_the_flags_and_settings(history, capsys):
    ok(capsys, "ingest")
    ok(capsys, "phase1", "--all")
    out = ok(capsys, "phase1")
    assert "nothing to do: no session was ready for extraction" in out, out
    assert "13 up to date: already extracted; `memtui phase1 --thread ID` extracts one again" in out
    out = ok(capsys, "phase1", "--export-batch", str(isolated_home().parent / "requests.jsonl"))  # the bulk path
    assert "nothing to do: no session was ready for extraction\n  13 up to date: already extracted;" in out, out
    assert "max_unused_days = 30 days" in ok(capsys, "retention")
    write_codex_rollout(isolated_home(), when=datetime.fromtimestamp(NOW - 3600, UTC), user_messages=["Go on."])
    ok(capsys, "ingest")
    hints = json.loads(ok(capsys, "phase1", "--json"))["hints"]
    assert hints == [
        "13 up to date: already extracted; `memtui phase1 --thread ID` extracts one again",
        "1 still active: active within min_rollout_idle_hours (6 h): extracted once idle, or now with "
        "`memtui phase1 --all`",
        "1 not interactive: exec, sub-agent and other non-interactive sessions are never extracted",
    ]


def test_phase2_with_nothing_to_consolidate_names_the_backfill_or_the_window(history, capsys):
    ok(capsys, "ingest")
    out = ok(capsys, "phase2")
    assert (
        "nothing to consolidate: no memories yet and no MEMORY.md; `memtui phase1` extracts them (and 11 session(s) "
        "from 2025-03-04 to 2026-06-12 older than max_rollout_age_days (10 days), not read yet: `memtui phase1 --all` "
        "reads those too)" in out
    ), out
    data = json.loads(ok(capsys, "phase2", "--json"))
    assert data["skip"] == "nothing_to_consolidate" and data["nothing"]["older"]["count"] == 11

    ok(capsys, "phase1", "--all")
    assert "awaiting review" in ok(capsys, "phase2")
    ok(capsys, "review", "approve")
    clock.freeze(NOW + 40 * DAY)  # 40 days on, nobody used them and the memory files are gone
    ctx = open_context()
    try:
        for name in ("MEMORY.md", "memory_summary.md"):
            (ctx.paths.memory_root / name).unlink()
    finally:
        ctx.close()
    out = ok(capsys, "phase2", "--force")
    assert "none of the 13 memories was made or used within max_unused_days (30 days)" in out, out
    assert "`memtui --set max_unused_days=N phase2` widens the window" in out
    assert "awaiting review" in ok(capsys, "--set", "max_unused_days=60", "phase2", "--force")
