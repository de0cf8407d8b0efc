"""The top of every screen: clickable screen tabs (current one highlighted) and the counts of the status.

The counts line drops its least useful parts first when the terminal is narrow, so it is never cut."""

from __future__ import annotations

from textual import events, getters
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from memtui.domain.labels import PHASE2_STATUS, label
from memtui.state.status import Status
from memtui.tui.app import MemtuiApp

SCREENS = [
    ("rollouts", "1", "Rollouts"),
    ("jobs", "2", "Jobs"),
    ("review", "3", "Review"),
    ("memory", "4", "Memory"),
    ("citations", "5", "Citations"),
    ("history", "6", "History"),
    ("health", "7", "Health"),
]
SEP = " · "  # visible separators: words never run together, whatever renders the line


class Tab(Static):
    """One screen tab; a click switches to that screen (as its digit key does)."""

    DEFAULT_CSS = """
    Tab { width: auto; padding: 0 1; color: $text-muted; }
    Tab:hover { background: $boost; color: $text; }
    Tab.-current { text-style: bold reverse; color: $text-accent; }
    """

    def __init__(self, mode: str, key: str, title: str, current: bool) -> None:
        super().__init__(Content(f"{key} {title}"), markup=False, classes="-current" if current else "")
        self.mode = mode
        self.tooltip = f"{title} (key {key})"

    app = getters.app(MemtuiApp)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if self.app.current_mode == self.mode:
            while len(self.app.screen_stack) > 1:  # back to the screen itself from a detail on top of it
                self.app.pop_screen()
        else:
            self.app.switch_mode(self.mode)


def status_parts(status: Status | None) -> tuple[list[tuple[str, str, int]], tuple[str, str]]:
    """The counts as (text, style, priority) and the Phase 2 state; lower priority is dropped first."""
    if status is None:
        return [("loading…", "$text-muted", 9)], ("", "")
    s1 = status.stage1
    parts: list[tuple[str, str, int]] = [(f"{status.threads:,} rollouts", "", 5)]
    shown = [
        (s1.done, "done", "$text-success", 4),
        (s1.pending, "pending", "", 1),
        (s1.running - s1.stale_lease, "running", "$text-warning", 3),
        (s1.error, "failed", "$text-error", 6),
        (s1.stale_lease, "stale lease", "$text-warning", 6),
    ]
    items = [(f"{n:,} {word}", style, prio) for n, word, style, prio in shown if n > 0]
    parts += items or [("stage 1: none yet", "$text-muted", 2)]
    p2 = status.phase2
    if p2.awaiting_review:
        phase2 = (f"phase 2: run #{p2.awaiting_run_id} awaiting review", "bold $text-warning")
    else:
        last = p2.last_run.status if p2.last_run else ("never_run" if p2.status == "never_run" else p2.status)
        phase2 = (f"phase 2: {label(last, PHASE2_STATUS)}", "")
    return parts, phase2


def status_line(status: Status | None, width: int = 200) -> Content:
    """Counts with zero categories left out and, when narrow, the least useful ones dropped."""
    parts, phase2 = status_parts(status)

    def assemble(kept: list[tuple[str, str, int]]) -> Content:
        pieces: list[tuple[str, str] | str] = [" "]
        for i, (text, style, _) in enumerate(kept):
            if i == 1 and status is not None and not text.startswith("stage 1"):
                pieces.append(SEP + "stage 1: ")
            elif i:
                pieces.append(", " if i > 1 else SEP)
            pieces.append((text, style))
        if phase2[0]:
            pieces += [SEP, phase2]
        return Content.assemble(*pieces)

    kept = list(parts)
    line = assemble(kept)
    while line.cell_length > width and len(kept) > 1:
        drop = min(range(1, len(kept)), key=lambda i: kept[i][2])
        kept.pop(drop)
        line = assemble(kept)
    return line


class StatusBar(Vertical):
    DEFAULT_CSS = """
    StatusBar { height: 2; background: $panel; }
    StatusBar > #tabs { height: 1; }
    StatusBar > #tabs > .brand { width: auto; padding: 0 1; text-style: bold; color: $text-accent; }
    StatusBar > #counts { height: 1; color: $text-muted; }
    """

    app = getters.app(MemtuiApp)

    def compose(self) -> ComposeResult:
        current = getattr(self.screen, "MODE", "")
        with Horizontal(id="tabs"):
            yield Static("memtui", classes="brand")
            for mode, key, title in SCREENS:
                yield Tab(mode, key, title, mode == current)
        yield Static(id="counts")

    def on_mount(self) -> None:
        self.app.status_signal.subscribe(self, self._on_status)
        self._on_status(self.app.status)

    def on_resize(self) -> None:
        self._on_status(self.app.status)

    def _on_status(self, status: Status | None) -> None:
        self.query_one("#counts", Static).update(status_line(status, self.size.width or 200))
