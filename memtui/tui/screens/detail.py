# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Rollout detail: the filtered conversation beside the stage-1 memory, the job history strip, extract-now, forget.

Each block is labelled with its transcript item numbers ("item N" = the N-th element of ``memory_items``, what
Phase 1 numbers and summaries cite); the screen can open at a cited item, highlighted. Anything that goes wrong while loading (the file vanished, cannot be parsed, the row is gone) is said in the
header and in the conversation pane, in full."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, DataTable, Label, Static
from textual.worker import get_current_worker

from memtui.adapters.rollouts.model import Transcript
from memtui.domain.labels import label
from memtui.services import views
from memtui.tui.format import fmt_size, fmt_time, short_path
from memtui.tui.screens.base import SEARCH_BINDINGS, MemtuiScreen
from memtui.tui.widgets.search import Searchable
from memtui.tui.widgets.text import count_redactions, mark_redactions
from memtui.tui.widgets.vim import VimDataTable, VimScroll

MAX_ITEMS = 400  # mounting thousands of widgets stalls the UI; the rest is summarized
HISTORY_COLUMNS: list[tuple[str, str, int]] = [
    ("started", "Started", 11),
    ("outcome", "Outcome", 9),
    ("tokens", "Tokens", 10),
    ("latency", "Time", 6),
    ("redactions", "Red.", 4),
    ("error", "Error", 20),  # widened to the rest of the strip on resize
]


def readable(value: Any) -> str:
    """Tool arguments and outputs as a person reads them: JSON (often a JSON string) becomes text, so an
    output shows its lines, not ``{"output": "a\\nb"}``."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] not in ("{", "["):
            return value
        try:
            value = json.loads(stripped)
        except ValueError:
            return value
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return " ".join(value)  # an argv
        return "\n".join(readable(v) for v in value)
    if isinstance(value, dict):
        main = next((value[k] for k in ("output", "content", "stdout", "text") if isinstance(value.get(k), str)), None)
        if main is not None:
            rest = {k: v for k, v in value.items() if v is not main and k != "metadata"}
            metadata = value.get("metadata")
            meta = metadata if isinstance(metadata, dict) else {}
            code = meta.get("exit_code", rest.pop("exit_code", None))
            tail = f"\n(exit code {code})" if code not in (None, 0) else ""
            return f"{main}{tail}"
        lines = []
        for key, v in value.items():
            text = readable(v) if isinstance(v, dict | list) else str(v)
            lines.append(f"{key}:\n{text}" if "\n" in text else f"{key}: {text}")
        return "\n".join(lines)
    return str(value)


@dataclass
class Block:
    kind: str  # message | tool
    role: str = ""
    text: str = ""
    who: str = ""  # the heading when it is not the role (a sub-agent's prompt: "agent message from parent agent")
    name: str = ""
    args: str = ""
    output: str = ""
    items: list[int] = field(default_factory=list)  # the 1-based transcript item numbers shown


@dataclass
class Loaded:
    detail: views.ThreadDetail | None
    history: list[views.JobRun] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    problem: str = ""


def conversation(items: Transcript, redact: Callable[[str], str]) -> list[Block]:
    """Flatten the transcript into display blocks; a tool output is shown with the call it answers."""
    blocks: list[Block] = []
    for item in items:
        if item.type == "message":
            text = redact(item.text)
            if text.strip():
                blocks.append(Block("message", role=item.role or "?", text=text, items=[item.number]))
        elif item.type == "agent_message":
            text = redact(item.text)
            if text.strip():
                who = f"{item.origin} from {item.author or '?'}"
                blocks.append(Block("message", role="agent", text=text, who=who, items=[item.number]))
        elif item.is_call:
            args = readable(item.arguments if item.arguments is not None else "")
            block = Block("tool", name=item.name or item.type, args=redact(args), items=[item.number])
            if item.output is not None:
                block.output = redact(readable(item.output.text))
                block.items.append(item.output.number)
            blocks.append(block)
        elif item.is_output and (item.call is None or item.call.output is not item):
            blocks.append(Block("tool", name="output", output=redact(readable(item.text)), items=[item.number]))
    return blocks


def _first_line(text: str, width: int = 70) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def load_rollout(conn: Any, thread_id: str) -> Loaded:
    """Everything the screen shows, read in a worker; a failure becomes ``problem`` (never an exception)."""
    from memtui.adapters.redact import redact_text
    from memtui.adapters.sources import read_transcript

    detail = views.thread_detail(conn, thread_id)
    if detail is None:
        return Loaded(None, problem=f"Rollout {thread_id} is not in the index (run ingest, F5).")
    loaded = Loaded(detail, views.job_history(conn, views.STAGE1, thread_id))
    try:
        loaded.blocks = conversation(read_transcript(Path(detail.path), detail.source_kind), redact_text)
    except Exception as exc:  # UnreadableFile, OSError, a parse error: say which and why
        loaded.problem = f"Cannot read the rollout file {detail.path}: {exc}"
    return loaded


class RolloutDetailScreen(MemtuiScreen):
    TITLE_TEXT = "Rollout"
    MODE = "rollouts"
    AUTO_FOCUS = "#conversation"
    SEARCH_ROOT = "#conversation"
    BINDINGS = [
        Binding("escape,backspace,q", "back", "Back", id="detail.back"),
        Binding("e", "extract", "Extract", id="detail.extract"),
        Binding("o", "expand_tools", "Expand tools", id="detail.expand_tools"),
        Binding("o", "collapse_tools", "Collapse tools", id="detail.collapse_tools"),
        Binding("v", "pager", "View file", show=False, id="detail.pager"),
        Binding("y", "copy_id", "Copy id", show=False, id="detail.copy_id"),
        Binding("Y", "copy_path", "Copy path", show=False, id="detail.copy_path"),
        Binding("F", "forget", "Forget rollout", show=False, id="detail.forget"),
        *SEARCH_BINDINGS,
    ]

    meta = getters.query_one("#detail-meta", Static)
    history_table = getters.query_one("#job-history", DataTable)
    run_error = getters.query_one("#run-error", Static)
    scroll = getters.query_one("#conversation", VerticalScroll)

    def __init__(self, thread_id: str, item: int | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.item = item  # the transcript item to open at (a citation's [item N])
        self.cited: Widget | None = None
        self.expanded = False
        self.loaded: Loaded | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="detail-meta", markup=False)
        with Horizontal(id="detail-body"):
            yield VimScroll(id="conversation", can_focus=True)
            with VimScroll(id="memory-side"):
                yield Label("raw_memory", classes="section-title")
                yield Searchable(Content(""), id="raw-memory")
                yield Label("rollout_summary", classes="section-title")
                yield Searchable(Content(""), id="rollout-summary")
        yield VimDataTable(id="job-history", cursor_type="row")
        yield Static("", id="run-error", markup=False)

    def on_mount(self) -> None:
        for key, title, width in HISTORY_COLUMNS:
            self.history_table.add_column(title, key=key, width=width)
        self.reload("mount")

    def on_resize(self, event: events.Resize) -> None:
        fixed = sum(w + 2 for _, _, w in HISTORY_COLUMNS[:-1]) + 2
        self.history_table.columns["error"].width = max(20, event.size.width - fixed)  # type: ignore[index]
        self.history_table.refresh(layout=True)

    def reload(self, source: str = "") -> None:
        self._load(self.thread_id)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load(self, thread_id: str) -> None:
        worker = get_current_worker()
        conn = self.app.ctx.new_conn()
        try:
            loaded = load_rollout(conn, thread_id)
        finally:
            conn.close()
        if not worker.is_cancelled:
            # Textual types the callback ``T | Awaitable[T]``: mypy cannot pick T for a coroutine function
            self.app.call_from_thread(self._show, loaded)  # type: ignore[arg-type]

    def loader_failed(self, error: BaseException) -> None:
        self.meta.update(Content(f"Cannot show rollout {self.thread_id}: {type(error).__name__}: {error}"))

    async def _show(self, loaded: Loaded) -> None:
        """Async so the loader's worker ends only once the conversation is mounted (tests and jumps rely on it)."""
        self.loaded = loaded
        detail = loaded.detail
        self.refresh_bindings()
        if detail is None:
            self.meta.update(Content.assemble((loaded.problem, "$text-error")))
            await self._show_conversation([], loaded.problem)
            return
        paths = self.app.ctx.paths
        path = short_path(detail.path, paths.codex_home, paths.claude_dir)
        redactions = sum(count_redactions(b.text + b.args + b.output) for b in loaded.blocks)
        status = detail.status
        lines: list[tuple[str, str] | str] = [
            *(((detail.title, "bold $text-accent"), " · ") if detail.title else ()),
            (detail.id, "bold"),
            f" · {detail.cwd or '-'} · {detail.source_kind}:{detail.session_source} · ",
            f"{fmt_size(detail.bytes)} · {fmt_time(detail.updated_at)}",
            f" · {path}\n" if self.size.width >= 120 else "\n",  # narrow: v views it, Y copies it
            ("stage 1: " + label(status), "bold $text-success" if status == "done" else "bold"),
        ]
        if detail.reason:
            lines += [" · ", (detail.reason, "$text-error" if status == "failed" else "$text-warning")]
        if redactions:
            lines += [" · ", (f"{redactions} redacted", "bold $text-error")]
        if self.item:
            lines += [" · ", (f"cited item {self.item}", "bold $text-warning")]
        if loaded.problem:
            lines += ["\n", (loaded.problem, "bold $text-error")]
        self.meta.update(Content.assemble(*lines))
        self.query_one("#raw-memory", Searchable).base = mark_redactions(detail.raw_memory or "(no stage-1 output yet)")
        self.query_one("#rollout-summary", Searchable).base = mark_redactions(detail.rollout_summary or "-")
        for block in self.query_one("#memory-side").query(Searchable):
            block.search(self.search_query)
        self._show_history(loaded.history)
        await self._show_conversation(loaded.blocks, loaded.problem)

    def _show_history(self, history: list[views.JobRun]) -> None:
        table = self.history_table
        table.clear()
        for i, run in enumerate(history):
            tokens = "-" if run.prompt_tokens is None else f"{run.prompt_tokens:,}/{run.completion_tokens or 0:,}"
            table.add_row(
                Text(fmt_time(run.started_at)[5:]),
                Text(label(run.outcome), style="red" if run.outcome == "failed" else ""),
                Text(tokens, justify="right"),
                Text("-" if run.latency_ms is None else f"{run.latency_ms / 1000:.1f}s", justify="right"),
                Text("-" if run.redactions is None else str(run.redactions), justify="right"),
                Text(run.error.replace("\n", " ") or "-", style="red" if run.error else "dim", no_wrap=True),
                key=str(i),
            )
        failed = next((i for i, r in enumerate(history) if r.error), None)
        if failed is not None:
            table.move_cursor(row=failed, animate=False)
        self._show_run_error()

    @on(DataTable.RowHighlighted, "#job-history")
    def _show_run_error(self) -> None:
        """The highlighted attempt's whole error (the column cuts it)."""
        history = self.loaded.history if self.loaded else []
        row = self.history_table.cursor_row
        error = history[row].error if 0 <= row < len(history) else ""
        self.run_error.update(Content.assemble(("error: ", "bold"), (error, "$text-error")) if error else "")
        self.run_error.display = bool(error)

    async def _show_conversation(self, blocks: list[Block], problem: str) -> None:
        scroll = self.scroll
        await scroll.remove_children()
        widgets: list[Widget] = []
        if problem:
            widgets.append(Static(Content(problem), classes="problem", markup=False))
        target = next((i for i, b in enumerate(blocks) if self.item in b.items), None)
        if self.item is not None and target is None and not problem:
            widgets.append(Static(Content(f"Item {self.item} is not in this rollout's transcript."), classes="problem"))
        start = 0 if target is None or target < MAX_ITEMS else max(0, target - MAX_ITEMS // 2)
        if start:
            widgets.append(Static(f"… {start} earlier items not shown", classes="problem"))
        self.cited = None
        for index, block in enumerate(blocks[start : start + MAX_ITEMS], start):
            numbers = "item " + ", ".join(map(str, block.items))
            cited = index == target
            if block.kind == "message":
                widgets.append(
                    Label(
                        Content.assemble(block.who or block.role, (f"  {numbers}", "$text-muted")),
                        classes=f"role role-{block.role}",
                    )
                )
                widget: Widget = Searchable(mark_redactions(block.text), classes="message")
            else:
                title = f"⚙ {block.name}  {_first_line(block.args or block.output)}  ({numbers})"
                body = block.args + ("\n── output ──\n" + block.output if block.output else "")
                widget = Collapsible(
                    Searchable(mark_redactions(body)),
                    title=title,
                    collapsed=not (self.expanded or cited),
                    classes="tool",
                )
            if cited:
                widget.add_class("-cited")
                self.cited = widget
            widgets.append(widget)
        if len(blocks) > start + MAX_ITEMS:
            widgets.append(Static(f"… {len(blocks) - start - MAX_ITEMS} more items not shown", classes="problem"))
        if not widgets:
            widgets.append(Static("(no conversation items)", classes="problem"))
        await scroll.mount_all(widgets)
        if self.cited is not None:
            cited_widget = self.cited
            self.call_after_refresh(lambda: scroll.scroll_to_widget(cited_widget, animate=False, top=True))
        if self.search_query:
            self.call_after_refresh(self.run_search, self.search_query)

    def reveal(self, widget: Any) -> None:
        for parent in widget.ancestors:
            if isinstance(parent, Collapsible) and parent.collapsed:
                parent.collapsed = False
        self.call_after_refresh(widget.scroll_visible, animate=False, top=True)

    def run_search(self, query: str) -> int:
        from memtui.tui.widgets.search import search_blocks

        self.matches = search_blocks(list(self.query(Searchable)), query)
        return len(self.matches)

    # ---- actions -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "expand_tools":
            return not self.expanded
        if action == "collapse_tools":
            return self.expanded
        if action == "extract":
            return True if self.loaded is None or self.loaded.detail is not None else None
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        self.dismiss()

    def action_extract(self) -> None:
        detail = self.loaded.detail if self.loaded else None
        if detail is None:
            self.notify_literal(f"{self.thread_id} is not in the index: nothing to extract.", severity="warning")
            return
        self.app.extract_rollout(detail.id, detail.status)

    def action_expand_tools(self) -> None:
        self._set_expanded(True)

    def action_collapse_tools(self) -> None:
        self._set_expanded(False)

    def _set_expanded(self, expanded: bool) -> None:
        """Expand or collapse every tool block, keeping the block at the top of the view where it is."""
        scroll = self.scroll
        top = scroll.scroll_y
        anchor = next((w for w in scroll.children if w.virtual_region.bottom > top), None)
        offset = top - anchor.virtual_region.y if anchor is not None else 0
        self.expanded = expanded
        for c in self.query(Collapsible):
            c.collapsed = not expanded
        self.refresh_bindings()
        if anchor is not None:

            def restore() -> None:
                y = anchor.virtual_region.y + (offset if not isinstance(anchor, Collapsible) else 0)
                scroll.scroll_to(y=y, animate=False)

            self.call_after_refresh(restore)

    def action_pager(self) -> None:
        detail = self.loaded.detail if self.loaded else None
        if detail is not None:
            self.app.open_external(Path(detail.path), pager=True)

    def action_copy_id(self) -> None:
        self.app.copy_text(self.thread_id, "rollout id")

    def action_forget(self) -> None:
        self.app.forget_rollout(self.thread_id)

    def action_copy_path(self) -> None:
        detail = self.loaded.detail if self.loaded else None
        if detail is not None:
            self.app.copy_text(detail.path, "rollout path")
