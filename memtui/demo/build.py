"""Build a demo home from the sample rollouts shipped as package data.

The samples cover what a reviewer should meet on day one: two projects with real preferences and
pitfalls, a Claude Code session (with a slash command, an interrupt, a compaction summary and a summary line of
another session, none of which is taken for the user's words), a trivial rollout the no-op gate drops, an exec session and a
sub-agent that are never eligible, an archived session, planted fake secrets, a citation, a corrupt
``.jsonl.zst`` that ingest skips with a reason, and a rollout whose file disappears before Phase 1
so its job fails and backs off. The first consolidation is approved; two sessions arrive after it: one cites
the memory, the other restates one preference, corrects the agent on another and contradicts a third (memory
health shows each), and the second consolidation, which applies the contradiction, awaits review. Everything runs
offline through the same code as real use.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from memtui.adapters.redact import merge_counts
from memtui.core import clock
from memtui.services.context import Context, open_context
from memtui.state.status import Status, read_status

# The sample that is deleted after ingest, so its Phase 1 job fails ("rollout file missing").
VANISHING = "rollout-2026-07-02T07-00-00-019e4b77-4f50-7162-9d74-8e9fa0b1c2d3.jsonl"
# The session that cites the memory extracted from an earlier one: it arrives after that extraction.
LATER = "rollout-2026-07-03T14-00-02-019e1c22-7a10-7b3e-9c41-5d6e7f809a1b.jsonl"
# The newest session, after the first approval: it restates, corrects and contradicts approved preferences.
AFTER_APPROVAL = "rollout-2026-07-08T09-00-00-019e6e20-2b3c-7d4e-9f50-6b7c8d9e0f1a.jsonl"
APPROVED_BEFORE_SECONDS = 3600  # the first consolidation is approved an hour before that session starts


@dataclass
class DemoHome:
    home: Path
    status: Status
    phase1: Any
    phase2: Any
    approved: Any = None  # the first consolidation's approval


_TIMESTAMP = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"')
DAY = 86_400


def _sample_days_shift(texts: list[bytes]) -> int:
    """Whole days that move the newest sample timestamp to yesterday (UTC), keeping each time of day.

    The samples were written in July 2026 and memtui dates a session by its transcript, so without a shift a demo
    built months later would show months-old sessions, and memory health (which dates what the user said, and
    when a line was last cited, by the transcripts) would call every line stale (``max_unused_days``).
    """
    stamps = [m.group(1).decode() for text in texts for m in _TIMESTAMP.finditer(text)]
    if not stamps:
        return 0
    newest = datetime.fromisoformat(max(stamps)).replace(tzinfo=UTC).timestamp()
    return max(0, (clock.now_s() - DAY - int(newest)) // DAY)


def _shifted(text: bytes, days: int) -> bytes:
    def move(m: re.Match[bytes]) -> bytes:
        when = datetime.fromisoformat(m.group(1).decode()) + timedelta(days=days)
        return b'"timestamp":"' + when.isoformat(timespec="milliseconds").encode() + b'Z"'

    return _TIMESTAMP.sub(move, text) if days else text


def _copy_samples(dest: Path) -> list[Path]:
    """Copy the samples, their transcript timestamps moved by whole days so the newest session is a day old."""
    root = resources.files("memtui.demo") / "rollouts"
    with resources.as_file(root) as src:
        sources = [p for p in sorted(Path(src).rglob("*")) if p.is_file()]
        data = {p: p.read_bytes() for p in sources}
        days = _sample_days_shift([b for p, b in data.items() if p.suffix == ".jsonl"])
        copied: list[Path] = []
        for path in sources:
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            # .jsonl.zst is copied as it is (the demo's one is corrupt on purpose)
            target.write_bytes(_shifted(data[path], days) if path.suffix == ".jsonl" else data[path])
            copied.append(target)
    return copied


def build_demo_home(target: Path | None = None) -> DemoHome:
    """Create ``<target>/home`` (MEMTUI_HOME) and ``<target>/rollouts`` (the agents' folders), then run
    ingest, offline Phase 1 and offline Phase 2 up to a consolidation awaiting review. The samples' transcript
    timestamps are moved so the newest is a day old (their spread and order kept); Phase 1 still runs with
    ``all_threads`` (no age or idle window), as ``--all`` does, so the demo never depends on the hour it is built."""
    from memtui.services.ingest import run_ingest
    from memtui.services.phase1.run import run_phase1
    from memtui.services.phase2.consolidate import run_phase2
    from memtui.services.phase2.review import approve

    folder = (target or Path(tempfile.mkdtemp(prefix="memtui-demo-"))).resolve()
    home, sources = folder / "home", folder / "rollouts"
    home.mkdir(parents=True, exist_ok=True)
    files = _copy_samples(sources)
    (home / "config.toml").write_text(
        "# memtui demo home: offline extractor and consolidator over the sample rollouts beside it\n"
        'provider = "offline"\n'
        f'codex_home = "{sources / "codex"}"\n'
        f'claude_dir = "{sources / "claude"}"\n',
        encoding="utf-8",
    )
    held = [next(p for p in files if p.name == name) for name in (LATER, AFTER_APPROVAL)]
    for path in held:
        path.rename(path.with_name(path.name + ".later"))
    ctx: Context = open_context(home=home)
    try:
        run_ingest(ctx)
        next(p for p in files if p.name == VANISHING).unlink()
        first = run_phase1(ctx, offline=True, all_threads=True)
        consolidated = run_phase2(ctx, offline=True)
        # approved as a person would, before the later sessions started (their transcripts date them)
        with clock.frozen(_first_timestamp(held[1].with_name(held[1].name + ".later")) - APPROVED_BEFORE_SECONDS):
            approved = approve(ctx, consolidated.run_id)
        for path in held:  # new sessions: one cites what the first pass remembered, one talks back to it
            path.with_name(path.name + ".later").rename(path)
        run_ingest(ctx)
        phase1 = run_phase1(ctx, offline=True, all_threads=True)
        phase1 = phase1.model_copy(
            update={
                "succeeded": first.succeeded + phase1.succeeded,
                "noop": first.noop + phase1.noop,
                "failed": first.failed + phase1.failed,
                "redactions": merge_counts(first.redactions, phase1.redactions),
                "skipped": first.skipped,
            }
        )
        phase2 = run_phase2(ctx, offline=True, force=True)
        status = read_status(ctx.conn)
    finally:
        ctx.close()
    return DemoHome(home=home, status=status, phase1=phase1, phase2=phase2, approved=approved)


def _first_timestamp(path: Path) -> int:
    m = _TIMESTAMP.search(path.read_bytes())
    assert m is not None, path
    return int(datetime.fromisoformat(m.group(1).decode()).replace(tzinfo=UTC).timestamp())
