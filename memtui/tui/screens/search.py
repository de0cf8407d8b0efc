# ruff: noqa: RUF012  (Textual declares BINDINGS as a mutable class attribute)
"""Global search (from the command palette): the approved memory and session history (``search_memory``), ranked by
bm25; Enter opens the hit (a memory file at its line, or the rollout)."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from memtui.services.search import SearchHit, refresh, search_memory
from memtui.tui.format import plural
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.text import mark_redactions
from memtui.tui.widgets.vim import VimOptionList

RESULT_LIMIT = 50


class SearchScreen(MemtuiScreen):
    TITLE_TEXT = "Search"
    MODE = ""
    AUTO_FOCUS = "#search-input"
    BINDINGS = [
        Binding("escape", "back", "Back", id="search.back"),
        Binding("down", "to_hits", "Hits", show=False, id="search.hits"),
        Binding("slash", "to_query", "Edit query", id="search.query"),
    ]
    # one focus edge at a time: the focused one of box and list draws the accent edge, the other none (the box keeps a
    # thin frame so it still reads as a box)
    DEFAULT_CSS = """
    #search-input { margin: 0 1; border: round $panel; }
    #search-input:focus { border: tall $accent; }
    #search-meta { height: 1; padding: 0 1; color: $text-muted; }
    #search-hits { height: 1fr; border: blank; }
    #search-hits:focus { border: tall $accent; }
    """

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.hits: list[SearchHit] = []
        self.shown_query: str | None = None  # the query whose hits are listed

    def compose_body(self) -> ComposeResult:
        yield Input(
            self.initial, placeholder="search memory, summaries and messages (every word must match)", id="search-input"
        )
        yield Static("type words and press Enter", id="search-meta", markup=False)
        yield VimOptionList(id="search-hits")

    def on_mount(self) -> None:
        if self.initial:
            self.run_query(self.initial)

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        """Enter runs a new query; on the query already shown, it opens the highlighted hit (as in the list)."""
        hits = self.query_one("#search-hits", OptionList)
        if self.hits and event.value == self.shown_query and hits.highlighted is not None:
            self._open_hit(hits.highlighted)
        else:
            self.run_query(event.value)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_query(self, query: str) -> None:
        worker = get_current_worker()
        conn = self.mapp.ctx.new_conn()
        try:
            # memory files and rollouts ingested since the last refresh (only changed ones are read)
            refresh(conn, self.mapp.ctx.paths.memory_root)
            hits = search_memory(conn, self.mapp.ctx.paths.memory_root, query, limit=RESULT_LIMIT)
        finally:
            conn.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, query, hits)

    def _show(self, query: str, hits: list[SearchHit]) -> None:
        self.hits, self.shown_query = hits, query
        options = self.query_one("#search-hits", OptionList)
        options.clear_options()
        options.add_options(
            Option(Content.assemble((h.location, "bold"), "\n  ", mark_redactions(h.snippet or "(no text)")))
            for h in hits
        )
        meta = f"{plural(len(hits), 'hit')} for {query!r}, best first" if hits else f"no match for {query!r}"
        self.query_one("#search-meta", Static).update(
            Content(meta + ("; j/k move, Enter opens one, / edits the query" if hits else ""))
        )
        if hits:
            options.highlighted = 0
            options.focus()  # j/k/G move through the hits instead of typing into the query

    def action_to_hits(self) -> None:
        if self.hits:
            self.query_one("#search-hits", OptionList).focus()

    def action_to_query(self) -> None:
        self.query_one("#search-input", Input).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "to_query":  # in the box, / is a character of the query
            return not self.query_one("#search-input", Input).has_focus
        return super().check_action(action, parameters)

    @on(OptionList.OptionSelected, "#search-hits")
    def _open(self, event: OptionList.OptionSelected) -> None:
        self._open_hit(event.option_index)

    def _open_hit(self, index: int) -> None:
        hit = self.hits[index]
        if hit.kind == "memory":
            self.mapp.open_cited(hit.source, hit.line or 1, hit.line or 1)
        else:  # a message hit opens at its transcript item; a summary or raw-memory hit at the top
            self.mapp.open_rollout(hit.source, item=hit.item)

    def action_back(self) -> None:
        self.dismiss()
