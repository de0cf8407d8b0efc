"""The UI's narrow door to the domain: the functions the CLI calls, and value formatting for display.

Entry points are imported on first use (``resolve``), so the app paints before openai, GitPython and the
pipeline modules are loaded. No pipeline logic lives here.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memtui.context import Context

# Action name -> (module, attribute): the same functions the CLI calls.
DOMAIN: dict[str, tuple[str, str]] = {
    "ingest": ("memtui.ingest", "run_ingest"),
    "phase1": ("memtui.phase1.run", "run_phase1"),
    "phase2": ("memtui.phase2.consolidate", "run_phase2"),
    "pending_run": ("memtui.phase2.review", "pending_run"),
    "approve": ("memtui.phase2.review", "approve"),
    "reject": ("memtui.phase2.review", "reject"),
    "workspace_diff": ("memtui.phase2.review", "workspace_diff"),
    "baseline_commit": ("memtui.phase2.review", "baseline_commit"),
    "commit_manual_edit": ("memtui.phase2.review", "commit_manual_edit"),
    "memory_items": ("memtui.rollouts.filter", "memory_items"),
    "parse_citations": ("memtui.citations.parse", "parse_citations"),
    "check_citation": ("memtui.citations.check", "check_citation"),
    "loader_warnings": ("memtui.export", "loader_warnings"),
    "redact_text": ("memtui.redact", "redact_text"),
}


def resolve(name: str) -> Callable[..., Any]:
    """The domain function behind a UI action, imported on first use."""
    module, attr = DOMAIN[name]
    return getattr(importlib.import_module(module), attr)


Progress = Callable[..., None]
TaskFn = Callable[[Context, Progress, threading.Event], Any]


def ingest_task(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
    return resolve("ingest")(ctx, progress=progress, cancel=cancel)


def phase1_task(thread_id: str | None = None, all_threads: bool = False) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        return resolve("phase1")(ctx, thread_id=thread_id, all_threads=all_threads, progress=progress, cancel=cancel)

    return run


def phase2_task(force: bool = False) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        return resolve("phase2")(ctx, force=force, progress=progress, cancel=cancel)

    return run


def approve_task(run_id: int | None) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        return resolve("approve")(ctx, run_id=run_id)

    return run


def restore_task(version: int) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        from memtui.history import restore_version

        return restore_version(ctx, version)

    return run


def forget_task(thread_id: str, reason: str | None) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        from memtui.forget import forget

        return forget(ctx, thread_id, reason)

    return run


def reject_task(reason: str, run_id: int | None) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        return resolve("reject")(ctx, reason, run_id=run_id)

    return run


def commit_task(message: str) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> Any:
        commit = resolve("commit_manual_edit")(ctx, message)
        return f"new baseline {str(commit)[:10]}"

    return run


def describe(result: Any) -> str:
    """A one-line summary of a domain result for a notification."""
    if result is None:
        return "done"
    if isinstance(result, str):
        return result
    for attr in ("message", "summary_line", "describe"):
        fn = getattr(result, attr, None)
        if callable(fn):
            return str(fn())
    if hasattr(result, "run_id") and hasattr(result, "status"):  # a review decision
        text = f"run #{result.run_id} {result.status}"
        if getattr(result, "commit", None):
            text += f", new baseline {str(result.commit)[:10]}"
        if getattr(result, "restored", None):
            text += f", {len(result.restored)} file(s) restored"
        if getattr(result, "kept", None):
            text += f", your edits to {', '.join(result.kept)} kept"
        if getattr(result, "hunks_out", 0):
            text += f", {result.hunks_in} hunk(s) in, {result.hunks_out} left out"
        return text
    fields: dict[str, Any] | None = None
    if hasattr(result, "model_dump"):
        fields = result.model_dump()
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        fields = dataclasses.asdict(result)
    elif isinstance(result, dict):
        fields = result
    if fields is None:
        return str(result)[:200]
    parts = []
    for key, value in fields.items():
        if key.endswith(("_id", "watermark")):
            continue
        if key == "seconds" and isinstance(value, float):
            parts.append(f"{value:.1f}s")
        elif isinstance(value, bool):
            if value:
                parts.append(key)
        elif isinstance(value, int | float) and value:
            parts.append(f"{value:,} {key.replace('_', ' ')}")
        elif isinstance(value, str) and value:
            parts.append(f"{key}: {value}")
        elif isinstance(value, dict) and value:
            parts.append(f"{key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
    return ", ".join(parts[:10]) or "nothing to do"


# ---- display formatting -------------------------------------------------------------------------


def fmt_time(ts: int | float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%d %H:%M")


def fmt_size(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{int(size)}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"


def fmt_int(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def short_path(path: str, *roots: Any) -> str:
    """A path relative to the first root that contains it (keeps tmp prefixes out of the screen)."""
    for root in roots:
        root_s = str(root).rstrip("/")
        if root_s and path.startswith(root_s + "/"):
            return path[len(root_s) + 1 :]
    return path
