"""Open the app on the configured MEMTUI_HOME (what ``memtui`` with no arguments does)."""

from __future__ import annotations

from pathlib import Path


def launch(home: Path | None = None) -> int:
    """Run the TUI until the person quits; ingest starts in the background. Returns the exit code."""
    from memtui.services.context import open_context
    from memtui.tui.app import MemtuiApp

    ctx = open_context(home=home)
    ctx.paths.ensure()
    ctx.conn  # noqa: B018  (open and migrate now: an unusable database is reported before the screen opens)
    app = MemtuiApp(ctx, ingest_on_start=True, keymap=ctx.settings.keymap)
    try:
        app.run()
    finally:
        ctx.close()
    return app.return_code or 0
