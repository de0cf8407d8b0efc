"""The top of every screen: the screens (current one highlighted) and the counts of ``collect_status``."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

SCREENS = [
    ("rollouts", "1", "Rollouts"),
    ("jobs", "2", "Jobs"),
    ("review", "3", "Review"),
    ("memory", "4", "Memory"),
    ("citations", "5", "Citations"),
    ("history", "6", "History"),
]


def tabs_line(current: str) -> Content:
    parts: list[tuple[str, str] | str] = [(" memtui ", "bold $text-accent")]
    for mode, key, label in SCREENS:
        style = "bold reverse $text-accent" if mode == current else "$text-muted"
        parts += ["  ", (f" {key} {label} ", style)]
    return Content.assemble(*parts)


def status_line(status: dict[str, Any] | None) -> Content:
    """Counts with zero categories left out, so the line fits an 80-column terminal."""
    if not status:
        return Content(" loading…")
    s1 = status.get("stage1", {})
    p2 = status.get("phase2", {})
    parts: list[tuple[str, str] | str] = [f" {status.get('threads', 0):,} rollouts   stage 1: "]
    shown = [
        (s1.get("done", 0), "done", "$text-success"),
        (s1.get("pending", 0), "pending", ""),
        (s1.get("running", 0), "running", "$text-warning"),
        (s1.get("error", 0), "failed", "$text-error"),
        (s1.get("stale_lease", 0), "stale lease", "$text-warning"),
    ]
    items = [(f"{n:,} {label}", style) for n, label, style in shown if n]
    if not items:
        items = [("none yet", "$text-muted")]
    for i, item in enumerate(items):
        parts += [", " if i else "", item]
    parts.append("   phase 2: ")
    if p2.get("awaiting_review"):
        parts.append((f"run #{p2.get('awaiting_run_id')} awaiting review", "bold $text-warning"))
    else:
        parts.append(str(p2.get("status", "never_run")).replace("_", " "))
    return Content.assemble(*parts)


class StatusBar(Vertical):
    DEFAULT_CSS = """
    StatusBar { height: 2; background: $panel; }
    StatusBar > Static { height: 1; }
    StatusBar > #counts { color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="tabs")
        yield Static(id="counts")

    def on_mount(self) -> None:
        app: Any = self.app
        app.status_signal.subscribe(self, self._on_status)
        self.query_one("#tabs", Static).update(tabs_line(getattr(self.screen, "MODE", "")))
        self._on_status(app.status)

    def _on_status(self, status: dict[str, Any]) -> None:
        self.query_one("#counts", Static).update(status_line(status))
