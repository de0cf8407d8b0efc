# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""Rollout detail: the filtered conversation beside the stage-1 memory, the job history, extract-now and forget.

Each block is labelled with its transcript item numbers ("item N" = the N-th element of ``memory_items``, what
Phase 1 numbers and summaries cite); the screen can open at a cited item, highlighted.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, DataTable, Label, Static
from textual.worker import get_current_worker

from memtui import views
from memtui.tui import ops
from memtui.tui.screens.base import MemtuiScreen
from memtui.tui.widgets.text import count_redactions, mark_redactions

MAX_ITEMS = 400  # mounting thousands of widgets stalls the UI; the rest is summarized


def _text_of(content: Any) -> str:
    """Text of a response item's ``content`` (a string or a list of typed parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or part.get("output") or ""))
            else:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def conversation(items: list[dict[str, Any]], redact: Any) -> list[dict[str, Any]]:
    """Flatten response items into display blocks; tool outputs are attached to their call.

    Each block lists the 1-based numbers of the items it shows (``items``)."""
    blocks: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for number, item in enumerate(items, 1):
        kind = item.get("type", "message")
        if kind == "message":
            text = redact(_text_of(item.get("content")))
            if text.strip():
                blocks.append({"kind": "message", "role": item.get("role", "?"), "text": text, "items": [number]})
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "tool_use"):
            args = item.get("arguments") or item.get("input") or item.get("action") or ""
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            block = {
                "kind": "tool",
                "name": item.get("name") or kind,
                "args": redact(args),
                "output": "",
                "items": [number],
            }
            blocks.append(block)
            if item.get("call_id"):
                calls[item["call_id"]] = block
        elif kind in ("function_call_output", "custom_tool_call_output", "tool_result"):
            output = item.get("output")
            if isinstance(output, dict):
                output = output.get("content") or output.get("output") or json.dumps(output, ensure_ascii=False)
            text = redact(_text_of(output))
            block = calls.get(item.get("call_id") or "")
            if block is not None:
                block["output"] = text
                block["items"].append(number)
            else:
                blocks.append({"kind": "tool", "name": "output", "args": "", "output": text, "items": [number]})
    return blocks


def _first_line(text: str, width: int = 70) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


class RolloutDetailScreen(MemtuiScreen):
    TITLE_TEXT = "Rollout"
    MODE = "rollouts"
    AUTO_FOCUS = "#conversation"
    BINDINGS = [
        Binding("escape,backspace", "back", "Back", id="detail.back"),
        Binding("e", "extract", "Extract now", id="detail.extract"),
        Binding("o", "toggle_tools", "Expand tools", id="detail.toggle_tools"),
        Binding("F", "forget", "Forget rollout", id="detail.forget"),
    ]

    def __init__(self, thread_id: str, item: int | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.item = item  # the transcript item to open at (a citation's [item N])
        self.expanded = False
        self.cited: Widget | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="detail-meta", markup=False)
        with Horizontal(id="detail-body"):
            yield VerticalScroll(id="conversation", can_focus=True)
            with VerticalScroll(id="memory-side"):
                yield Label("raw_memory", classes="section-title")
                yield Static("", id="raw-memory", markup=False)
                yield Label("rollout_summary", classes="section-title")
                yield Static("", id="rollout-summary", markup=False)
                yield Label("Job history", classes="section-title")
                yield DataTable(id="job-history", cursor_type="row", show_cursor=False)

    def on_mount(self) -> None:
        table = self.query_one("#job-history", DataTable)
        for key, label, width in [
            ("started", "Started", 11),
            ("outcome", "Outcome", 9),
            ("tokens", "Tokens", 9),
            ("latency", "Time", 6),
            ("redactions", "Red.", 4),
            ("error", "Error", 40),
        ]:
            table.add_column(label, key=key, width=width)
        self.reload("mount")

    def reload(self, source: str = "") -> None:
        self._load(self.thread_id)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load(self, thread_id: str) -> None:
        worker = get_current_worker()
        conn = self.mapp.ctx.new_conn()
        try:
            detail = views.thread_detail(conn, thread_id)
            history = views.job_history(conn, views.STAGE1, thread_id)
        finally:
            conn.close()
        blocks: list[dict[str, Any]] = []
        problem = ""
        if detail is None:
            problem = f"Rollout {thread_id} is not in the index."
        else:
            from memtui.redact import redact_text
            from memtui.rollouts.filter import memory_items

            try:
                items = memory_items(detail["path"], detail["source_kind"])
                blocks = conversation(items, redact_text)
            except (OSError, ValueError) as exc:
                problem = f"Cannot read {detail['path']}: {exc}"
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, detail, history, blocks, problem)

    def _show(
        self, detail: dict[str, Any] | None, history: list[dict[str, Any]], blocks: list[dict[str, Any]], problem: str
    ) -> None:
        meta = self.query_one("#detail-meta", Static)
        if detail is None:
            meta.update(Content(problem))
            return
        paths = self.mapp.ctx.paths
        path = ops.short_path(detail["path"], paths.codex_home, paths.claude_dir)
        status = detail["status"]
        redactions = sum(count_redactions(b.get("text", "") + b.get("args", "") + b.get("output", "")) for b in blocks)
        reason = detail.get("last_error") if status == "failed" else None
        if status == "skipped":
            reason = views.skip_reason(
                detail["ingest_status"], detail["ingest_reason"], detail["never"], detail["session_source"]
            )
        meta.update(
            Content.assemble(
                (detail["id"], "bold"),
                f"  {detail.get('cwd') or '-'}  {detail['source_kind']}:{detail['session_source']}  ",
                f"{ops.fmt_size(detail['bytes'])}  {ops.fmt_time(detail['updated_at'])}\n",
                ("stage 1: " + status, "bold $text-success" if status == "done" else "bold"),
                (f" ({reason})", "$text-error") if reason else "",
                (f"  {redactions} redacted", "bold $text-error") if redactions else "",
                (f"  cited item {self.item}", "bold $text-warning") if self.item else "",
                f"  {path}",
            )
        )
        self.query_one("#raw-memory", Static).update(
            mark_redactions(detail.get("raw_memory") or "(no stage-1 output yet)")
        )
        self.query_one("#rollout-summary", Static).update(mark_redactions(detail.get("rollout_summary") or "-"))
        table = self.query_one("#job-history", DataTable)
        table.clear()
        for run in history:
            reds = ""
            if run.get("redactions"):
                try:
                    reds = str(sum(json.loads(run["redactions"]).values()))
                except (ValueError, AttributeError):
                    reds = "?"
            tokens = "-" if run.get("prompt_tokens") is None else f"{run['prompt_tokens']}/{run['completion_tokens']}"
            table.add_row(
                Text(ops.fmt_time(run["started_at"])[5:]),
                Text(("no-op" if run.get("noop") else run.get("outcome")) or "running"),
                Text(tokens),
                Text("-" if run.get("latency_ms") is None else f"{run['latency_ms'] / 1000:.1f}s"),
                Text(reds or "-"),
                Text((run.get("error") or "").replace("\n", " "), style="red"),
            )
        self._show_conversation(blocks, problem)

    def _show_conversation(self, blocks: list[dict[str, Any]], problem: str) -> None:
        scroll = self.query_one("#conversation", VerticalScroll)
        scroll.remove_children()
        widgets: list[Widget] = []
        if problem:
            widgets.append(Static(Content(problem), classes="problem", markup=False))
        target = next((i for i, b in enumerate(blocks) if self.item in b.get("items", ())), None)
        if self.item is not None and target is None and not problem:
            widgets.append(Static(Content(f"Item {self.item} is not in this rollout's transcript."), classes="problem"))
        start = 0 if target is None or target < MAX_ITEMS else max(0, target - MAX_ITEMS // 2)
        if start:
            widgets.append(Static(f"… {start} earlier items not shown", classes="problem"))
        self.cited = None
        for index, block in enumerate(blocks[start : start + MAX_ITEMS], start):
            label = "item " + ", ".join(map(str, block.get("items", [])))
            cited = index == target
            if block["kind"] == "message":
                widgets.append(
                    Label(
                        Content.assemble(block["role"], (f"  {label}", "$text-muted")),
                        classes=f"role role-{block['role']}",
                    )
                )
                widget: Widget = Static(mark_redactions(block["text"]), classes="message", markup=False)
            else:
                title = f"⚙ {block['name']}  {_first_line(block['args'])}  ({label})"
                body = block["args"] + ("\n── output ──\n" + block["output"] if block["output"] else "")
                widget = Collapsible(
                    Static(mark_redactions(body), markup=False),
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
        scroll.mount_all(widgets)
        if self.cited is not None:
            cited_widget = self.cited
            self.call_after_refresh(lambda: scroll.scroll_to_widget(cited_widget, animate=False, top=True))

    def action_back(self) -> None:
        self.dismiss()

    def action_extract(self) -> None:
        self.mapp.run_phase1(thread_id=self.thread_id)

    def action_forget(self) -> None:
        from memtui.tui.screens.dialogs import TextPromptModal

        thread_id = self.thread_id
        body = (
            f"Forget rollout {thread_id}? Its memory and summary are removed now and it is never extracted again "
            "(`memtui forget --undo` lifts that). What was derived from it leaves MEMORY.md with the next Phase 2 "
            "run, once you approve it; old versions holding it are rewritten or dropped."
        )

        def decided(reason: str | None) -> None:
            if reason is not None:
                self.mapp.start_task(
                    f"forget:{thread_id}", f"Forget {thread_id[:12]}", ops.forget_task(thread_id, reason or None)
                )

        self.app.push_screen(
            TextPromptModal("Forget this rollout", body, "reason (optional)", "Forget", danger=True, required=False),
            decided,
        )

    def action_toggle_tools(self) -> None:
        self.expanded = not self.expanded
        for c in self.query(Collapsible):
            c.collapsed = not self.expanded
