"""The frame every memtui screen shares: status bar, body, task bar, footer; reload on the data signal."""

from __future__ import annotations

from typing import Any

from textual import events, getters, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from memtui.tui.app import MemtuiApp
from memtui.tui.widgets.search import Match, SearchBar, search_blocks, searchable_widgets
from memtui.tui.widgets.status_bar import StatusBar
from memtui.tui.widgets.task_bar import TaskBar

SEARCH_BINDINGS = [
    Binding("slash", "search", "Search", id="view.search"),
    Binding("n", "next_match", "Next match", show=False, id="view.next_match"),
    Binding("N", "previous_match", "Previous match", show=False, id="view.previous_match"),
]


class MemtuiScreen(Screen):
    """Subclasses implement ``compose_body`` and ``reload`` (called when the state changes)."""

    TITLE_TEXT = ""
    MODE = ""  # the screen tab highlighted in the status bar

    app = getters.app(MemtuiApp)
    mapp = getters.app(MemtuiApp)  # (older name of ``app``)

    SEARCH_ROOT = ""  # a selector: screens with one get ``/`` search (and n / N) over its text blocks
    # A selector and a worker group: the part the screen's first load fills shows a loading sign from the first
    # paint until that group's first worker ends, so a first visit shows at once that the key was taken.
    LOADING = ""
    LOADER = ""

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        if self.SEARCH_ROOT:
            yield SearchBar()
        yield TaskBar()
        yield Footer(compact=True)

    def compose_body(self) -> ComposeResult:
        yield from ()

    def reload(self, source: str = "") -> None:
        """Reload what the screen shows; cheap, and runs queries in workers where they can be slow."""

    @on(events.Mount)
    def _subscribe(self) -> None:
        self.app.data_signal.subscribe(self, self.mark_stale, immediate=True)
        if self.LOADING:
            self.query_one(self.LOADING).loading = True

    def on_screen_resume(self) -> None:
        if getattr(self, "_stale", False):
            self._stale = False
            self.reload("resume")

    def mark_stale(self, source: str) -> None:
        if self.is_current:
            self.reload(source)
        else:
            self._stale = True

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """A loader's failure reaches the person (Worker.StateChanged does not bubble to the app); the first load's
        end, shown or failed, takes the loading sign away (a superseded, cancelled load leaves it to the next)."""
        if (
            self.LOADING
            and event.worker.group == self.LOADER
            and event.state in (WorkerState.SUCCESS, WorkerState.ERROR)
        ):
            self.query_one(self.LOADING).loading = False
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            self.loader_failed(error)
            self.app.report_error(f"{self.TITLE_TEXT or 'Screen'}: {event.worker.name or 'loading'}", error)

    def loader_failed(self, error: BaseException) -> None:
        """Show a loader's failure inside the screen too (subclasses put it where the data would be)."""

    def notify_literal(self, message: str, **kwargs: Any) -> None:
        self.app.notify(message, markup=False, **kwargs)

    # ---- ``/`` search (screens with SEARCH_ROOT) ---------------------------------------------------

    search_query = ""
    matches: tuple[Match, ...] | list[Match] = ()
    match_index = 0

    def action_search(self) -> None:
        if self.SEARCH_ROOT:
            self.query_one(SearchBar).open()

    @on(SearchBar.Changed)
    def _search_changed(self, event: SearchBar.Changed) -> None:
        self.search_query = event.query
        count = self.run_search(event.query)
        self.match_index = 0
        bar = self.query_one(SearchBar)
        if not event.query:
            bar.set_count("")
        elif count:
            self.show_match(0)
        else:
            bar.set_count("no match")
        self.focus_view()
        self.refresh_bindings()

    def run_search(self, query: str) -> int:
        """Highlight every match of ``query`` (empty: clear) and return how many there are."""
        self.matches = search_blocks(searchable_widgets(self.query_one(self.SEARCH_ROOT)), query)
        return len(self.matches)

    def show_match(self, index: int) -> None:
        """Make match ``index`` the current one and scroll to it."""
        if not self.matches:
            return
        self.match_index = index % len(self.matches)
        match = self.matches[self.match_index]
        for block in {m.widget for m in self.matches}:
            block.search(self.search_query, match.index if block is match.widget else None)
        self.reveal(match.widget)
        self.query_one(SearchBar).set_count(f"{self.match_index + 1} of {len(self.matches)}")

    def reveal(self, widget: Any) -> None:
        widget.scroll_visible(animate=False, top=True)

    def focus_view(self) -> None:
        """Where focus goes after a search: the searched view."""
        self.query_one(self.SEARCH_ROOT).focus()

    def action_next_match(self) -> None:
        self.show_match(self.match_index + 1)

    def action_previous_match(self) -> None:
        self.show_match(self.match_index - 1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match"):
            return bool(self.matches)
        if action == "search":
            return bool(self.SEARCH_ROOT)
        return True
