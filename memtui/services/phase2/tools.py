"""The consolidation agent's only tools, confined to the memory root, plus the journal that makes a run undoable.

A refused path is not an exception: the model gets an ``error: ...`` string as the tool result and may try again.
Only the write budget ends the run (``ToolLimitError``), because a model stuck in a write loop will not stop itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from memtui.adapters.memroot.files import write_if_changed
from memtui.adapters.redact import redact
from memtui.services.phase2 import agent_rules
from memtui.state import meta

MAX_LIST_ENTRIES = 2000
MAX_SEARCH_RESULTS = 200
MAX_READ_BYTES = 64 * 1024
MAX_READ_LINES = 400  # per read_file call: the agent pages through big files instead of filling its context
MAX_SEARCH_FILE_BYTES = 8 * 1024 * 1024


class ToolLimitError(RuntimeError):
    """The agent exceeded a hard limit (bytes written); the run fails and its writes are undone."""


class PathRefused(ValueError):
    pass


POST_KEY = "phase2.post.{}"  # meta key: {path: sha256|null} of what a run left, to spot later hand edits


def save_journal(conn: sqlite3.Connection, run_id: int, post: dict[str, str | None]) -> None:
    """The post-write hashes of a run's journal: what the run left, to tell a later hand edit from its own."""
    meta.put(conn, POST_KEY.format(run_id), json.dumps(post))


def drop_journal(conn: sqlite3.Connection, run_id: int) -> None:
    meta.delete(conn, POST_KEY.format(run_id))


def encode_content(data: bytes | None) -> Any:
    """JSON-safe file content: text when it is UTF-8, else ``{"base64": ...}``; None = file absent."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def decode_content(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return str(value).encode("utf-8")


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


class Journal:
    """Pre-run content of every file a run changes (first touch wins) and the hash of what the run left there.

    ``on_change`` persists both maps before the write happens, so even a killed run can be undone exactly.
    """

    def __init__(self, root: Path, on_change: Callable[[Journal], None] | None = None) -> None:
        self.root = root
        self.pre: dict[str, Any] = {}
        self.post: dict[str, str | None] = {}
        self.on_change = on_change

    def _record(self, rel: str, new: bytes | None) -> None:
        if rel not in self.pre:
            path = self.root / rel
            self.pre[rel] = encode_content(path.read_bytes()) if path.is_file() else None
        self.post[rel] = sha256(new)
        if self.on_change:
            self.on_change(self)

    def write(self, rel: str, data: bytes) -> None:
        had, before = rel in self.post, self.post.get(rel)
        self._record(rel, data)
        try:
            write_if_changed(self.root / rel, data)  # atomic: a killed run leaves the old file or the new one
        except BaseException:
            # A failed write left the file as it was: keep the hash of that, so an undo still takes it back (a
            # second write to a file, e.g. the trust markers after the agent's, must not make it look a person's).
            if had:
                self.post[rel] = before
            else:
                self.post.pop(rel, None)
            if self.on_change:
                self.on_change(self)
            raise

    def delete(self, rel: str) -> None:
        self._record(rel, None)
        (self.root / rel).unlink()


def restore(root: Path, pre: dict[str, Any], post: dict[str, str | None]) -> list[str]:
    """Put back the files a run wrote, from their pre-run content; returns the paths that now hold it.

    Only a file the run wrote (it has a post-run hash) and that still holds what the run wrote is written: a file
    changed since is a person's edit and is left alone (the caller names it), and so is a file journaled before a
    write that never happened. Directories the run created and left empty are removed.
    """
    restored = []
    for rel, value in sorted(pre.items()):
        path = root / rel
        current = path.read_bytes() if path.is_file() else None
        want = decode_content(value)
        if current != want and (rel not in post or sha256(current) != post[rel]):
            continue  # somebody changed it after the run: never overwrite a person's work
        if want is None:
            if path.is_file() or path.is_symlink():
                path.unlink()
            parent = path.parent
            while parent != root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        elif current != want:
            write_if_changed(path, want)
        restored.append(rel)
    return restored


def _schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False},
        },
    }


_S = {"type": "string"}
_I = {"type": "integer"}
TOOL_SCHEMAS = [
    _schema("list_dir", "List a folder of the memory root (relative path, '.' for the root).", {"path": _S}, []),
    _schema(
        "read_file",
        f"Read a text file of the memory root, lines start_line..end_line (1-based, inclusive), at most "
        f"{MAX_READ_LINES} lines per call; the header says how many lines the file has and where to continue.",
        {"path": _S, "start_line": _I, "end_line": _I},
        ["path"],
    ),
    _schema(
        "search",
        "Literal, case-insensitive text search over the memory root (or one file/folder). Returns path:line: text.",
        {"query": _S, "path": _S},
        ["query"],
    ),
    _schema(
        "write_file",
        "Create or overwrite a file of the memory root; with append=true, add content to its end (build a large "
        "file in parts). Charges the bytes of content to the run's write budget.",
        {"path": _S, "content": _S, "append": {"type": "boolean"}},
        ["path", "content"],
    ),
    _schema(
        "replace_in_file",
        "Replace literal text in a file. Without count, `old` must occur exactly once; with count, the first count "
        "occurrences are replaced. Charges only the bytes inserted (new x occurrences) to the write budget.",
        {"path": _S, "old": _S, "new": _S, "count": _I},
        ["path", "old", "new"],
    ),
    _schema("delete_file", "Delete a file of the memory root.", {"path": _S}, ["path"]),
]


class MemoryTools:
    """Tool dispatch for one run: every path is resolved inside ``root``; writes go through the journal."""

    def __init__(self, root: Path, journal: Journal, max_write_bytes: int) -> None:
        self.root = root
        self.real_root = Path(os.path.realpath(root))
        self.journal = journal
        self.max_write_bytes = max_write_bytes
        self.bytes_written = 0
        self.calls = 0

    schemas = staticmethod(lambda: TOOL_SCHEMAS)

    # --- confinement -------------------------------------------------------------------------------
    def contains(self, path: Path) -> bool:
        """Whether ``path``, resolved (every symlink followed), lies inside the resolved root.

        A path comparison, never a string prefix: ``/x/memories-private`` is not inside ``/x/memories``.
        """
        return Path(os.path.realpath(path)).is_relative_to(self.real_root)

    def resolve(self, raw: Any, *, write: bool) -> tuple[str, Path]:
        """(relative posix path, absolute path) or PathRefused with a message the model can act on."""
        if not isinstance(raw, str) or not raw.strip():
            raise PathRefused("path must be a non-empty string relative to the memory root")
        if "\x00" in raw:
            raise PathRefused(f"{raw!r}: a path cannot contain a NUL byte")
        text = raw.strip().replace("\\", "/")
        if text.startswith(("/", "~")) or os.path.isabs(text) or (len(text) > 1 and text[1] == ":"):
            raise PathRefused(f"{raw!r}: absolute paths are not allowed; use a path relative to the memory root")
        parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise PathRefused(f"{raw!r}: '..' is not allowed; stay inside the memory root")
        rel = "/".join(parts) or "."
        if why := agent_rules.read_refusal(rel):
            raise PathRefused(f"{raw!r}: {why}")
        real = Path(os.path.realpath(self.root / rel))
        if not self.contains(real):
            raise PathRefused(f"{raw!r}: resolves outside the memory root (symlink)")
        inner = "/".join(real.relative_to(self.real_root).parts)
        if why := agent_rules.read_refusal(inner):
            raise PathRefused(f"{raw!r}: {why}")
        if write:
            # the rules hold for the path as written and for where it leads (the CLI agents' check is the same)
            if why := agent_rules.write_refusal(rel) or agent_rules.write_refusal(inner):
                raise PathRefused(f"{raw!r}: {why}")
            if (self.root / rel).is_symlink():
                raise PathRefused(f"{raw!r}: is a symlink; write the file it points to instead")
        return rel, self.root / rel

    # --- dispatch ------------------------------------------------------------------------------------
    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        self.calls += 1
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else (arguments or {})
            if not isinstance(args, dict):
                return "error: arguments must be a JSON object"
        except ValueError as exc:
            return f"error: arguments are not valid JSON: {exc}"
        fn = getattr(self, f"tool_{name}", None)
        if fn is None:
            return f"error: unknown tool {name!r}; available: list_dir, read_file, search, write_file, replace_in_file, delete_file"
        try:
            return fn(**args)
        except PathRefused as exc:
            return f"error: {exc}"
        except (TypeError, ValueError, OverflowError) as exc:  # e.g. start_line="abc": the model may try again
            return f"error: bad arguments for {name}: {exc}"
        except (OSError, UnicodeError) as exc:
            return f"error: {exc.__class__.__name__}: {exc}"

    def _charge(self, n: int) -> None:
        if self.bytes_written + n > self.max_write_bytes:
            raise ToolLimitError(f"the agent tried to write more than {self.max_write_bytes} bytes in one run")
        self.bytes_written += n

    def _budget(self) -> str:
        return f"; write budget: {self.bytes_written} of {self.max_write_bytes} bytes used"

    # --- tools -----------------------------------------------------------------------------------------
    def tool_list_dir(self, path: str = ".") -> str:
        rel, p = self.resolve(path, write=False)
        if not p.is_dir():
            return f"error: {path!r} is not a folder"
        lines = []
        for entry in sorted(os.scandir(p), key=lambda e: e.name):
            if rel == "." and entry.name == ".git":
                continue
            if entry.is_symlink() and not self.contains(Path(entry.path)):
                lines.append(f"{entry.name} -> (outside the memory root; not readable)")
                continue
            if len(lines) >= MAX_LIST_ENTRIES:
                lines.append(f"... (truncated at {MAX_LIST_ENTRIES} entries)")
                break
            if entry.is_dir(follow_symlinks=False):
                lines.append(f"{entry.name}/")
            else:
                size = entry.stat(follow_symlinks=False).st_size
                lines.append(f"{entry.name} ({size} bytes)")
        return "\n".join(lines) if lines else "(empty folder)"

    def tool_read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        _, p = self.resolve(path, write=False)
        if not p.is_file():
            return f"error: {path!r} is not a file"
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        start = max(1, int(start_line or 1))
        end = min(len(lines), int(end_line) if end_line else len(lines), start + MAX_READ_LINES - 1)
        text = "".join(lines[start - 1 : end])
        if len(text.encode()) > MAX_READ_BYTES:
            kept = text.encode()[:MAX_READ_BYTES].decode("utf-8", "ignore")
            end = start + kept.count("\n") - 1 if kept.count("\n") else start
            text = "".join(lines[start - 1 : end]) if kept.count("\n") else kept + "\n[line truncated]\n"
        more = f"; continue with start_line={end + 1}" if end < len(lines) else ""
        return f"[{path} lines {start}-{end} of {len(lines)}{more}]\n{text}"

    def tool_search(self, query: str, path: str = ".") -> str:
        if not isinstance(query, str) or not query:
            return "error: query must be a non-empty string"
        _, p = self.resolve(path, write=False)
        files = (
            [p]
            if p.is_file()
            else sorted(f for f in p.rglob("*") if f.is_file() and ".git" not in f.relative_to(self.root).parts[:1])
        )
        needle = query.lower()
        hits: list[str] = []
        for f in files:
            real = Path(os.path.realpath(f))
            if not self.contains(real) or agent_rules.read_refusal(real.relative_to(self.real_root).as_posix()):
                continue  # a symlink out of the root, or into .git: refused as read_file refuses it
            if f.stat().st_size > MAX_SEARCH_FILE_BYTES:
                continue
            rel = f.relative_to(self.root).as_posix()
            for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if needle in line.lower():
                    hits.append(f"{rel}:{n}: {line[:300]}")
                    if len(hits) >= MAX_SEARCH_RESULTS:
                        return "\n".join([*hits, f"... (stopped at {MAX_SEARCH_RESULTS} results; narrow the query)"])
        return "\n".join(hits) if hits else "no matches"

    def tool_write_file(self, path: str, content: str, append: bool = False) -> str:
        rel, p = self.resolve(path, write=True)
        if p.is_dir():
            return f"error: {path!r} is a folder"
        data, note = _redacted(str(content))
        self._charge(len(data))
        if append and p.is_file():
            self.journal.write(rel, p.read_bytes() + data)
            return f"appended {len(data)} bytes to {rel}{note}{self._budget()}"
        self.journal.write(rel, data)
        return f"wrote {rel} ({len(data)} bytes{note}){self._budget()}"

    def tool_replace_in_file(self, path: str, old: str, new: str, count: int | None = None) -> str:
        rel, p = self.resolve(path, write=True)
        if not p.is_file():
            return f"error: {path!r} is not a file"
        if not old:
            return "error: old must be non-empty"
        text = p.read_text(encoding="utf-8", errors="replace")
        found = text.count(old)
        if found == 0:
            return f"error: the text to replace was not found in {rel}"
        if count is None and found > 1:
            return f"error: the text occurs {found} times in {rel}; add context to make it unique or pass count"
        n = found if count is None else int(count)
        if n < 1 or n > found:
            return f"error: count must be between 1 and {found}"
        data, note = _redacted(text.replace(old, new, n))
        self._charge(len(new.encode("utf-8")) * n)  # the bytes this call changes, not the whole file
        self.journal.write(rel, data)
        return f"replaced {n} occurrence(s) in {rel}{note}{self._budget()}"

    def tool_delete_file(self, path: str) -> str:
        rel, p = self.resolve(path, write=True)
        if not p.is_file():
            return f"error: {path!r} is not a file"
        self.journal.delete(rel)
        return f"deleted {rel}"


def _redacted(text: str) -> tuple[bytes, str]:
    """What the agent may store: its text with every secret replaced (a model can echo or invent one)."""
    r = redact(text)
    n = sum(r.counts.values())
    return r.text.encode("utf-8"), (f"; {n} secret(s) redacted" if n else "")
