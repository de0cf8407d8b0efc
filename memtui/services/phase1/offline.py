"""A deterministic extractor with no model, so a demo or a user without a key gets real results.

From the memory items (``rollouts.filter.memory_items``: the user's own words already told from injected context)
it writes a ``rollout_summary``: failed commands and what fixed them first, then what was asked, files written and
files only read, the other commands and the final answer, each evidence line citing ``[item N]`` (the N-th memory
item, as the model is asked to). The ``raw_memory`` holds only the standing rules of the user's own messages
(``phase1.statements.is_standing``: no one-off task request), near-duplicates merged, plus each failure a different
command fixed (not one whose own command worked later, nor one nothing fixed). With no durable statement it is a
no-op. Both are labelled offline. The same input always gives the same output.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from memtui.adapters.redact import redact
from memtui.adapters.rollouts.model import ACTION_CALL_TYPES, Origin, Transcript
from memtui.adapters.rollouts.user_words import user_words
from memtui.domain.home_paths import home_users, tilde_homes
from memtui.services.phase1.eligibility import Candidate
from memtui.services.phase1.extractor import (
    Extraction,
    StageOneOutput,
    add_counts,
    file_size,
    keep_faithful_quotes,
    read_items,
)
from memtui.services.phase1.quotes import user_words as quoted_words
from memtui.services.phase1.statements import is_standing, normalized, sentences

OFFLINE_MODEL = "offline"
OFFLINE_LABEL = "_Extracted offline by memtui (no model): a deterministic digest of the rollout._"
MAX_LIST = 12
MAX_STATEMENTS = 30
MAX_ANSWER_CHARS = 1500

_EXIT_CODE = re.compile(r"(?:exit code:?|exited with code|exit status)\s*(-?\d+)", re.IGNORECASE)
_FAIL_MARKERS = re.compile(
    r"^Traceback \(most recent call last\)|command not found|^error(?:\[\w+\])?:|^FAIL\b|^npm ERR!",
    re.IGNORECASE | re.MULTILINE,
)
_SHELL_TOOLS = {"shell", "exec_command", "local_shell", "bash", "container.exec", "run_command", "shell_command"}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_PATH_KEYS = ("path", "file_path", "filename", "notebook_path", "target_file")
# Tools that write the file they name (Claude Code, Codex, MCP file servers); others that name one only read it.
_WRITE_TOOLS = {"edit", "multiedit", "write", "notebookedit", "write_file", "create_file", "edit_file", "apply_patch"}
_READ_TOOLS = {"read", "read_file", "view", "view_file", "open_file", "cat", "notebookread", "grep", "glob", "ls"}
_EDITOR_WRITE_COMMANDS = {"create", "str_replace", "insert", "undo_edit"}
_SHELL_READ = re.compile(r"(?:^|[;&|]\s*)(?:cat|head|tail|less|nl|bat|sed\s+-n\s+\S+|wc(?:\s+-\w)?)\s+([^\s|;&<>]+)")
_SHELL_WRITE = re.compile(r"(?:>>?|\btee(?:\s+-a)?|\bsed\s+-i(?:\s+\S+)?|\btouch|\brm(?:\s+-\w+)?)\s+([^\s|;&<>]+)")
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
    item: int  # 1-based memory item number of the call
    output: str = ""
    failed: bool = False
    exit_code: int | None = None
    output_item: int | None = None


@dataclass
class Said:
    text: str
    item: int  # 1-based memory item number


@dataclass
class Digest:
    user_messages: list[Said] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    final_answer: str = ""
    final_answer_item: int | None = None


# --- reading items (Responses-API shapes; the filter maps Claude Code onto them) -------------------------------------------


def _shell_output(text: str) -> str:
    """Codex's older shell tool wraps its output as ``{"output": ..., "metadata": {"exit_code": ...}}``: the
    output, with its exit code when it failed."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, dict) and "output" in obj:
        meta = obj.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return f"{obj['output']}\nexit code: {code}" if code else str(obj["output"])
    return text


def digest_items(items: Transcript) -> Digest:
    """What the items say, each piece with its item number. Only ``user`` messages are the user's words: context
    and injected text never reach them (``rollouts.user_words``)."""
    d = Digest()
    for item in items:
        if item.type == "message":
            text = item.text.strip()
            if item.origin is Origin.USER:
                words = user_words(text)  # the filter already decided; items from elsewhere get the same test
                if words:
                    d.user_messages.append(Said(words, item.number))
            elif item.role == "assistant" and text:
                d.final_answer, d.final_answer_item = text, item.number
        elif item.type in ACTION_CALL_TYPES:
            name = "local_shell" if item.type == "local_shell_call" else item.name or "?"
            call = Call(name, item.arguments, item.number)
            d.calls.append(call)
            if item.output is not None and item.output.type != "tool_search_output":
                text = _shell_output(item.output.text)
                call.output, call.output_item = text, item.output.number
                codes = [int(c) for c in _EXIT_CODE.findall(text)]
                call.exit_code = next((c for c in reversed(codes) if c != 0), None)
                call.failed = call.exit_code is not None or (not codes and _FAIL_MARKERS.search(text) is not None)
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


def _named_paths(call: Call) -> list[str]:
    if not isinstance(call.args, dict):
        return []
    return [call.args[key] for key in _PATH_KEYS if isinstance(call.args.get(key), str)]


def _patch_files(call: Call) -> list[str]:
    texts = [call.args] if isinstance(call.args, str) else []
    if isinstance(call.args, dict):
        texts += [v for v in call.args.values() if isinstance(v, str) and "*** Begin Patch" in v]
    cmd = command_of(call)
    if cmd and "apply_patch" in cmd:
        texts.append(cmd)
    return [f for t in texts for f in _PATCH_FILE.findall(t)]


def files_of(call: Call) -> tuple[list[str], list[str]]:
    """(files the call wrote, files it only read)."""
    name = call.name.lower().rsplit(".", 1)[-1]
    written = _patch_files(call)
    read: list[str] = []
    named = _named_paths(call)
    command = call.args.get("command") if isinstance(call.args, dict) else None
    if name in _WRITE_TOOLS or (isinstance(command, str) and command in _EDITOR_WRITE_COMMANDS):
        written += named
    elif name in _READ_TOOLS or command == "view":
        read += named
    cmd = command_of(call)
    if cmd:
        written += _SHELL_WRITE.findall(cmd)
        read += _SHELL_READ.findall(cmd)
    return _clean_paths(written), _clean_paths(read)


def _clean_paths(paths: list[str]) -> list[str]:
    return [p.strip().strip("'\"") for p in paths if p.strip() and not p.startswith("/dev/")]


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    first = sentences(line)[0] if line else ""
    first = first or line
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def durable_statements(user_messages: Sequence[Said | str]) -> list[Said]:
    """The standing rules of the user's messages (``statements.is_standing``), each once: a sentence whose words
    another kept sentence holds too (said again, cut short, or with a clause more) merges into the fuller one,
    cited where it was first said."""
    out: list[tuple[set[str], Said]] = []
    for number, message in enumerate(user_messages, 1):
        said = message if isinstance(message, Said) else Said(message, number)
        for sentence in sentences(said.text):
            if not is_standing(sentence):
                continue
            words = set(normalized(sentence).split())
            same = next((i for i, (w, _) in enumerate(out) if _near_duplicate(words, w)), None)
            if same is None:
                out.append((words, Said(sentence, said.item)))
            elif len(words) > len(out[same][0]):
                out[same] = (words, Said(sentence, out[same][1].item))
    return [s for _, s in out]


def _near_duplicate(a: set[str], b: set[str]) -> bool:
    """One holds the other's words (four or more), or they share nine in ten of their words."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return True
    return (len(small) >= 4 and small <= large) or len(a & b) / len(a | b) >= 0.9


@dataclass
class Fix:
    failed: Call
    fix: Call | None  # a later successful command that differs from the failed one and does its job, if any
    worked_later: Call | None = None  # the same command, run again later, succeeded


# Programs that only look: a later `cat` of a file the failed command named is no fix for it.
_LOOKING = frozenset(
    ["cat", "head", "tail", "less", "more", "ls", "grep", "rg", "find", "wc", "echo", "which", "type", "file", "stat",
     "tree", "pwd", "bat", "nl", "sed", "awk", "jq", "diff", "env", "printenv", "true", "date"]
)  # fmt: skip
_GIT_LOOKING = re.compile(r"^git\s+(?:status|diff|log|show|branch|remote|rev-parse|blame)\b")
# Arguments too common to tie a command to the failed one (`npm install` / `pip install` share nothing by them).
_COMMON_ARGS = frozenset(
    ["install", "add", "run", "test", "tests", "build", "start", "exec", "update", "upgrade", "check", "lint",
     "dev", "serve", "all", "main", "origin", "status", "list", "show", "get", "init", "new", "src", "sudo"]
)  # fmt: skip


def failures_and_fixes(calls: list[Call]) -> list[Fix]:
    """Each failed command (once per command text) with its fix: the first later successful command, other than the
    failed one, that runs the same program, names it, or shares an argument with it, and only looks at nothing.
    A failure whose own command later worked has no fix to remember (the change that made it work was elsewhere,
    an edit or another step), and neither has one no later command fixed: both get ``fix=None``."""
    shell = [(c, " ".join(cmd.split())) for c in calls if (cmd := command_of(c))]
    out: dict[str, Fix] = {}
    for i, (call, cmd) in enumerate(shell):
        if not call.failed or cmd in out:
            continue
        later = shell[i + 1 :]
        again = next((c for c, other in later if not c.failed and other == cmd), None)
        if again is not None:
            out[cmd] = Fix(call, None, again)
            continue
        out[cmd] = Fix(call, next((c for c, other in later if not c.failed and _fixes(cmd, other)), None))
    return list(out.values())


def _fixes(failed: str, other: str) -> bool:
    program = _program(failed)
    if _program(other) in _LOOKING or _GIT_LOOKING.match(other):
        return False
    if _program(other) == program or (len(program) >= 4 and program in other):
        return True
    return bool(_arguments(failed) & _arguments(other))


def _arguments(cmd: str) -> set[str]:
    """The distinctive words a command passes (not flags, assignments or very common words)."""
    words = cmd.split()[1:]
    return {
        w.strip("'\"")
        for w in words
        if len(w) >= 3 and not w.startswith("-") and "=" not in w and w.lower() not in _COMMON_ARGS
    }


_WRAPPERS = frozenset(["sudo", "env", "time", "npx", "uv", "uvx", "poetry", "bundle", "pipx", "nohup", "command"])
_WRAPPER_VERBS = frozenset(["run", "exec", "x", "dlx", "-m"])  # `uv run pytest`, `bundle exec rspec`, `python -m`


def _program(cmd: str) -> str:
    """The program a command runs, past env assignments and wrappers (``TZ=UTC pnpm test`` -> ``pnpm``,
    ``uv run pytest`` -> ``pytest``)."""
    words = cmd.split()
    for i, word in enumerate(words):
        if "=" in word.split("/")[0] or word in _WRAPPERS or word.startswith("-"):
            continue
        if i and words[i - 1] in _WRAPPERS and word in _WRAPPER_VERBS:
            continue
        return word
    return cmd


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


def _status(call: Call) -> str:
    if call.failed:
        return f"failed (exit {call.exit_code})" if call.exit_code else "failed"
    return "ok"


def _cite(*numbers: int | None) -> str:
    return " ".join(f"[item {n}]" for n in numbers if n is not None)


def build_offline_output(items: Transcript, cwd: str | None) -> StageOneOutput:
    """The deterministic stage-one output for already-redacted memory items."""
    d = digest_items(items)
    statements = durable_statements(d.user_messages)
    if not statements:
        return StageOneOutput(rollout_summary="", rollout_slug="", raw_memory="")
    title = tilde_homes(_one_line(d.user_messages[0].text), home_users(cwd or ""))  # the slug keeps no user name
    where = cwd or "unknown"
    commands = [(c, cmd) for c in d.calls if (cmd := command_of(c))]
    fixes = failures_and_fixes(d.calls)
    written: dict[str, int] = {}
    read: dict[str, int] = {}
    for call in d.calls:
        w, r = files_of(call)
        for name in w:
            written.setdefault(name, call.item)
        for name in r:
            read.setdefault(name, call.item)
    only_read = {name: n for name, n in read.items() if name not in written}
    lines = [f"# {title}", "", OFFLINE_LABEL, ""]
    lines.append(
        f"Rollout context: cwd {where}; {len(d.user_messages)} user message(s), {len(d.calls)} tool call(s), "
        f"{len(commands)} command(s) of which {sum(c.failed for c, _ in commands)} failed."
    )
    if fixes:
        lines += ["", "## Failures and fixes"]
        for f in fixes[:MAX_LIST]:
            cmd = _one_line(command_of(f.failed) or "", 160)
            line = f"- `{cmd}` {_status(f.failed)} {_cite(f.failed.item, f.failed.output_item)}"
            if f.fix is not None:
                line += f"; then `{_one_line(command_of(f.fix) or '', 160)}` ok {_cite(f.fix.item)}"
            elif f.worked_later is not None:
                line += f"; the same command worked later {_cite(f.worked_later.item)}"
            else:
                line += "; no later run succeeded"
            lines.append(line)
    lines += ["", "## What the user asked"]
    lines += [f"- {_one_line(m.text, 200)} {_cite(m.item)}" for m in d.user_messages[:MAX_LIST]]
    if written:
        lines += ["", "## Files written"] + [f"- `{f}` {_cite(n)}" for f, n in list(written.items())[:MAX_LIST]]
    if only_read:
        lines += ["", "## Files only read"] + [f"- `{f}` {_cite(n)}" for f, n in list(only_read.items())[:MAX_LIST]]
    failed_calls = {id(f.failed) for f in fixes}
    others = [(c, cmd) for c, cmd in commands if id(c) not in failed_calls]
    if others:
        lines += ["", "## Other commands run"]
        for c, cmd in others[:MAX_LIST]:
            lines.append(f"- `{_one_line(cmd, 160)}` — {_status(c)} {_cite(c.item)}")
    if d.final_answer:
        answer = d.final_answer.strip()
        if len(answer) > MAX_ANSWER_CHARS:
            answer = answer[: MAX_ANSWER_CHARS - 1].rstrip() + "…"
        lines += ["", f"## Final answer {_cite(d.final_answer_item)}", answer]
    summary = "\n".join(lines) + "\n"

    task_group = PurePath(cwd).name if cwd else "unknown"
    kw = keywords([*(s.text for s in statements), title])
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
    raw += [
        f'- the user said: "{s.text}" {_cite(s.item)} -> follow this in future work here'
        for s in statements[:MAX_STATEMENTS]
    ]
    fixed = [(f.failed, f.fix) for f in fixes if f.fix is not None]  # no different fix: nothing to keep
    if fixed:
        raw += ["Failures and how to do differently:"]
        seen: set[str] = set()
        for failed, by in fixed:
            fix = _one_line(command_of(by) or "", 160)
            if fix in seen or len(seen) == 5:
                continue  # two failures fixed by the same command: one line
            seen.add(fix)
            raw.append(f"- `{_one_line(command_of(failed) or '', 160)}` failed -> `{fix}` worked {_cite(failed.item)}")
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
        counts: dict[str, int] = {}
        items = Transcript(redact_tree(read_items(job).raw, counts))
        output = build_offline_output(items, job.cwd)
        info = Extraction(
            output=output,
            offline=True,
            model=OFFLINE_MODEL,
            input_bytes=file_size(job.path),
            redactions=counts,
            user_said=quoted_words(items),
        )
        keep_faithful_quotes(info)  # the same guard as the model's output: every quote must be the user's words
        info.items = items  # for the trust classes, marked after redaction (``run.py``)
        return info

    async def extract(self, job: Candidate) -> Extraction:
        return await asyncio.to_thread(self.run, job)
