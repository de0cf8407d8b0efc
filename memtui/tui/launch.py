"""Open the app on the configured MEMTUI_HOME (what ``memtui`` with no arguments does)."""

from __future__ import annotations

import sys
from pathlib import Path


def launch(home: Path | None = None) -> int:
    """Run the TUI until the person quits; ingest starts in the background. Returns the exit code."""
    from memtui.services.context import open_context
    from memtui.tui.app import MemtuiApp

    said: list[str] = []
    # The UI is a first step (it ingests on start): a missing home is created, and said both on the terminal (it
    # shows again after quitting) and in the UI.
    ctx = open_context(home=home, creates_home=True, announce=said.append)
    ctx.conn  # noqa: B018  (open and migrate now: an unusable or read-only home is reported before the screen opens)
    for line in said:
        print(f"memtui: {line}", file=sys.stderr)
    app = MemtuiApp(ctx, ingest_on_start=True, keymap=ctx.settings.keymap, notes=said)
    try:
        app.run()
    finally:
        ctx.close()
    return app.return_code or 0
