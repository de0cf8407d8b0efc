"""A deterministic extractor with no model, so a demo or a user without a key gets real results.

From the memory-relevant items it writes a ``rollout_summary`` (what was asked, files touched, commands run and
which failed, the final answer) and a ``raw_memory`` built only from explicit durable statements in the user's own
messages ("always", "never", "prefer", "don't", "remember", "from now on", corrections like "no, use X"). With no
such statement it is a no-op. Both are labelled offline. The same input always gives the same output.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from memtui.phase1.eligibility import Candidate
from memtui.phase1.extractor import Extraction, StageOneOutput, add_counts, file_size, read_items
from memtui.redact import redact

OFFLINE_MODEL = "offline"
OFFLINE_LABEL = "_Extracted offline by memtui (no model): a deterministic digest of the rollout._"
MAX_LIST = 12
MAX_ANSWER_CHARS = 1500

_DURABLE = re.compile(
    r"\b(always|never|prefer|don'?t|do not|remember|from now on|make sure to|avoid)\b"
    r"|^\s*no[,.!]\s+(use|do|we|it|that|don'?t|not)\b"
    r"|\binstead of\b|\buse \S+ instead\b",
    re.IGNORECASE,
)
_EPHEMERAL = re.compile(r"\b(yet|for now|right now|this time|today|just now)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_EXIT_CODE = re.compile(r"(?:exit code:?|exited with code|exit status)\s*(-?\d+)", re.IGNORECASE)
_FAIL_MARKERS = re.compile(
    r"^Traceback \(most recent call last\)|command not found|^error(?:\[\w+\])?:|^FAIL\b|^npm ERR!",
    re.IGNORECASE | re.MULTILINE,
)
_SHELL_TOOLS = {"shell", "exec_command", "local_shell", "bash", "container.exec", "run_command", "shell_command"}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_PATH_KEYS = ("path", "file_path", "filename", "notebook_path", "target_file")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "don't",
        "for",
        "from",
        "have",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "this",
        "to",
        "us",
        "use",
        "using",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "will",
        "with",
        "you",
        "your",
        "always",
        "never",
        "prefer",
        "remember",
        "don",
        "dont",
        "now",
        "instead",
        "make",
        "sure",
        "avoid",
        "should",
    ]
)


@dataclass
class Call:
    name: str
    args: Any
    output: str = ""
    failed: bool = False
    exit_code: int | None = None


@dataclass
class Digest:
    user_messages: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    final_answer: str = ""


# --- reading items (Responses-API shapes; the filter maps Claude Code onto them) -------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            c.get("text", "")
            for c in content
            if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text")
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        try:  # Codex's older shell tool wraps {"output": ..., "metadata": {"exit_code": ...}}
            obj = json.loads(output)
        except ValueError:
            return output
        if isinstance(obj, dict) and "output" in obj:
            code = (obj.get("metadata") or {}).get("exit_code")
            return f"{obj['output']}\nexit code: {code}" if code else str(obj["output"])
        return output
    if isinstance(output, list):
        return "\n".join(
            _output_text(o.get("text", o.get("content", ""))) if isinstance(o, dict) else str(o) for o in output
        )
    if isinstance(output, dict):
        return _output_text(output.get("content") or output.get("output") or "")
    return ""


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def digest_items(items: list[dict[str, Any]]) -> Digest:
    d = Digest()
    by_id: dict[str, Call] = {}

    def add_call(call_id: Any, call: Call) -> None:
        d.calls.append(call)
        if call_id:
            by_id[str(call_id)] = call

    def add_output(call_id: Any, text: str) -> None:
        call = by_id.get(str(call_id)) if call_id else None
        if call is not None:
            call.output = text
            codes = [int(c) for c in _EXIT_CODE.findall(text)]
            call.exit_code = next((c for c in reversed(codes) if c != 0), None)
            call.failed = call.exit_code is not None or (not codes and _FAIL_MARKERS.search(text) is not None)

    for item in items:
        kind = item.get("type")
        if kind == "message":
            text = _text_of(item.get("content")).strip()
            if item.get("role") == "user":
                if text and not text.startswith("<"):
                    d.user_messages.append(text)
            elif item.get("role") == "assistant" and text:
                d.final_answer = text
        elif kind == "function_call":
            add_call(item.get("call_id"), Call(item.get("name") or "?", _args(item.get("arguments"))))
        elif kind == "custom_tool_call":
            add_call(item.get("call_id"), Call(item.get("name") or "?", item.get("input")))
        elif kind == "local_shell_call":
            add_call(item.get("call_id"), Call("local_shell", (item.get("action") or {}).get("command")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            add_output(item.get("call_id"), _output_text(item.get("output")))
    return d


# --- what the calls did ---------------------------------------------------------------------------------------


def command_of(call: Call) -> str | None:
    if call.name.lower() not in _SHELL_TOOLS:
        return None
    args = call.args
    if isinstance(args, dict):
        args = args.get("cmd") or args.get("command")
    if isinstance(args, list):
        if len(args) >= 3 and args[0] in ("bash", "sh", "zsh") and args[1] in ("-lc", "-c"):
            return str(args[2])
        return " ".join(str(a) for a in args)
    return str(args) if args else None


def files_of(call: Call) -> list[str]:
    found: list[str] = []
    if isinstance(call.args, str):
        found += _PATCH_FILE.findall(call.args)
    elif isinstance(call.args, dict):
        for key in _PATH_KEYS:
            if isinstance(call.args.get(key), str):
                found.append(call.args[key])
        for value in call.args.values():
            if isinstance(value, str) and "*** Begin Patch" in value:
                found += _PATCH_FILE.findall(value)
    cmd = command_of(call)
    if cmd and "apply_patch" in cmd:
        found += _PATCH_FILE.findall(cmd)
    return [f.strip() for f in found if f.strip()]


def _unique(values: Iterator[str] | list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    first = _SENTENCE.split(line, maxsplit=1)[0] if line else ""
    first = first or line
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def durable_statements(user_messages: list[str]) -> list[str]:
    out: list[str] = []
    for message in user_messages:
        for sentence in _SENTENCE.split(message):
            s = " ".join(sentence.split())
            if 8 <= len(s) <= 400 and _DURABLE.search(s) and not _EPHEMERAL.search(s):
                out.append(s)
    return _unique(out)


def slugify(text: str, limit: int = 60) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for w in words:
        if len(slug) + len(w) + 1 > limit:
            break
        slug = f"{slug}-{w}" if slug else w
    return slug


def keywords(texts: list[str], n: int = 8) -> list[str]:
    counts = Counter(w for t in texts for w in re.findall(r"[a-z][a-z0-9_.+-]{2,}", t.lower()) if w not in _STOPWORDS)
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


# --- rendering ------------------------------------------------------------------------------------------------


def build_offline_output(items: list[dict[str, Any]], cwd: str | None) -> StageOneOutput:
    """The deterministic stage-one output for already-redacted items."""
    d = digest_items(items)
    if not d.user_messages:
        return StageOneOutput(rollout_summary="", rollout_slug="", raw_memory="")
    statements = durable_statements(d.user_messages)
    if not statements:
        return StageOneOutput(rollout_summary="", rollout_slug="", raw_memory="")
    title = _one_line(d.user_messages[0])
    where = cwd or "unknown"
    commands = [(c, command_of(c)) for c in d.calls]
    commands = [(c, cmd) for c, cmd in commands if cmd]
    files = _unique(f for c in d.calls for f in files_of(c))
    failed = [cmd for c, cmd in commands if c.failed]
    lines = [f"# {title}", "", OFFLINE_LABEL, ""]
    lines.append(
        f"Rollout context: cwd {where}; {len(d.user_messages)} user message(s), {len(d.calls)} tool call(s), "
        f"{len(commands)} command(s) of which {len(failed)} failed."
    )
    lines += ["", "## What the user asked"] + [f"- {_one_line(m, 200)}" for m in d.user_messages[:MAX_LIST]]
    if files:
        lines += ["", "## Files touched"] + [f"- `{f}`" for f in files[:MAX_LIST]]
    if commands:
        lines += ["", "## Commands run"]
        for c, cmd in commands[:MAX_LIST]:
            status = f"failed (exit {c.exit_code})" if c.failed and c.exit_code else ("failed" if c.failed else "ok")
            lines.append(f"- `{_one_line(cmd, 160)}` — {status}")
    if d.final_answer:
        answer = d.final_answer.strip()
        if len(answer) > MAX_ANSWER_CHARS:
            answer = answer[: MAX_ANSWER_CHARS - 1].rstrip() + "…"
        lines += ["", "## Final answer", answer]
    summary = "\n".join(lines) + "\n"

    task_group = PurePath(cwd).name if cwd else "unknown"
    kw = keywords([*statements, title])
    raw = [
        "---",
        f"description: explicit user statements from: {title}",
        f"task: {title}",
        f"task_group: {task_group or 'unknown'}",
        "task_outcome: uncertain",
        f"cwd: {where}",
        f"keywords: {', '.join(kw)}",
        "---",
        OFFLINE_LABEL,
        "",
        f"### Task 1: {title}",
        f"task: {title}",
        f"task_group: {task_group or 'unknown'}",
        "task_outcome: uncertain",
        "Preference signals:",
    ]
    raw += [f'- the user said: "{s}" -> follow this in future work here' for s in statements[:MAX_LIST]]
    if failed:
        raw += ["Failures and how to do differently:"] + [f"- `{_one_line(c, 160)}` failed" for c in failed[:5]]
    return StageOneOutput(rollout_summary=summary, rollout_slug=slugify(title), raw_memory="\n".join(raw) + "\n")


def redact_tree(value: Any, counts: dict[str, int]) -> Any:
    """Redact every string inside a JSON-like value (keys included), counting by kind."""
    if isinstance(value, str):
        r = redact(value)
        add_counts(counts, r.counts)
        return r.text
    if isinstance(value, list):
        return [redact_tree(v, counts) for v in value]
    if isinstance(value, dict):
        return {redact_tree(k, counts): redact_tree(v, counts) for k, v in value.items()}
    return value


class OfflineExtractor:
    """The ``Extractor`` with no model: reads items, redacts them, digests them."""

    offline = True
    model = OFFLINE_MODEL

    def run(self, job: Candidate) -> Extraction:
        items = read_items(job)
        counts: dict[str, int] = {}
        items = redact_tree(items, counts)
        output = build_offline_output(items, job.cwd)
        return Extraction(
            output=output, offline=True, model=OFFLINE_MODEL, input_bytes=file_size(job.path), redactions=counts
        )

    async def extract(self, job: Candidate) -> Extraction:
        return await asyncio.to_thread(self.run, job)
