"""What Codex's own state says about its threads, read as Codex reads it, and where a thread's history begins.

**The state database.** Current Codex keeps one row per thread in ``$CODEX_HOME/state_<n>.sqlite`` (``state_5`` in
0.169; codex-rs ``state`` crate, table ``threads``). It is the truth for the switches a person flips in Codex:
the TUI's ``/memories`` toggle writes ``memory_mode = 'disabled'`` there only (the rollout gets no second
``session_meta``), and Codex's Phase 1 claims from it. memtui reads the newest ``state_*.sqlite`` strictly
read-only and never creates or locks anything: with no ``-wal`` beside it (no Codex running) it is opened
``immutable`` (no lock, no ``-shm``/``-wal`` created); with one, ``mode=ro`` (the files Codex made are shared, not
written). Missing: nothing to say. Locked, unreadable or of a shape this reader does not know: one warning, and
the rollouts are the only source.

**History bases.** A paginated fork (or a reverted thread's new ``_<rollout id>`` file) holds only its own new
lines; ``session_meta.history_base {thread_id, end_ordinal_exclusive, end_byte_offset}`` says that the first
``end_byte_offset`` bytes of that thread's file are its prefix (what Codex sent the model before the new turns).
``history_prefix`` resolves and reads it (following a base that has a base of its own).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.rollouts import jsonl
from memtui.adapters.rollouts.codex_names import thread_id_from_name
from memtui.adapters.rollouts.model import HistoryBase

STATE_DB = re.compile(r"^state_(\d+)\.sqlite$")
KNOWN_STATE_VERSION = 5  # what this reader was written against (Codex 0.169.0)
_REQUIRED = ("id", "memory_mode")
_OPTIONAL = ("archived", "source", "rollout_path", "name")
MISSING_BASE = "history base {} not found; read without the inherited turns"
MISSING_BASE_ID = re.compile(r"history base (\S+) not found")  # the id in a stored MISSING_BASE warning
MAX_BASE_DEPTH = 16  # a fork of a fork of...: deeper chains are cut (and said so), never looped


@dataclass(frozen=True, slots=True)
class CodexThreadState:
    """One ``threads`` row, the fields memtui takes from Codex."""

    id: str
    memory_mode: str
    archived: bool | None = None
    source: str | None = None
    rollout_path: str | None = None
    name: str | None = None


@dataclass(slots=True)
class StateRead:
    """The rows read (by thread id), the database read (None: none exists) and what went wrong, once."""

    rows: dict[str, CodexThreadState] = field(default_factory=dict)
    path: Path | None = None
    warning: str | None = None


def newest_state_db(codex_home: Path) -> Path | None:
    """``state_<n>.sqlite`` with the highest ``n`` (Codex bumps it on a breaking schema change)."""
    best: tuple[int, Path] | None = None
    try:
        entries = list(codex_home.iterdir())
    except OSError:
        return None
    for entry in entries:
        m = STATE_DB.match(entry.name)
        if m and entry.is_file() and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), entry)
    return best[1] if best else None


def _connect(path: Path) -> sqlite3.Connection:
    """Read-only, creating nothing: ``immutable`` when no writer's ``-wal`` exists, else ``mode=ro``."""
    uri = path.resolve().as_uri()
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
    conn = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=0.2, check_same_thread=False)
    conn.execute("PRAGMA query_only = 1")
    return conn


def read_state(codex_home: Path) -> StateRead:
    """Every row of Codex's ``threads`` table (see the module docstring); never raises."""
    path = newest_state_db(codex_home)
    if path is None:
        return StateRead()
    result = StateRead(path=path)
    try:
        conn = _connect(path)
    except sqlite3.Error as exc:
        result.warning = f"Codex state {path.name} unreadable ({exc}); memory switches read from the rollouts only"
        return result
    try:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(threads)")}
        if not all(c in columns for c in _REQUIRED):
            version = int(STATE_DB.match(path.name).group(1))  # type: ignore[union-attr]
            newer = " (newer than the state_5 this reader knows)" if version > KNOWN_STATE_VERSION else ""
            result.warning = (
                f"Codex state {path.name}{newer}: no threads table with {', '.join(_REQUIRED)}; "
                "memory switches read from the rollouts only"
            )
            return result
        wanted = [*_REQUIRED, *(c for c in _OPTIONAL if c in columns)]
        for row in conn.execute(f"SELECT {', '.join(wanted)} FROM threads"):
            values = dict(zip(wanted, row, strict=True))
            tid, mode = values["id"], values["memory_mode"]
            if not isinstance(tid, str) or not isinstance(mode, str):
                continue
            archived = values.get("archived")
            result.rows[tid.lower()] = CodexThreadState(
                id=tid.lower(),
                memory_mode=mode or "enabled",
                archived=bool(archived) if isinstance(archived, int) else None,
                source=_text(values.get("source")),
                rollout_path=_text(values.get("rollout_path")),
                name=_text(values.get("name")),
            )
    except sqlite3.Error as exc:
        result.rows.clear()
        result.warning = f"Codex state {path.name} unreadable ({exc}); memory switches read from the rollouts only"
    finally:
        conn.close()
    return result


def memory_off_now(rollout: Path, thread_id: str) -> bool:
    """True when Codex's state says this thread's memory is off now (one row read; False when it cannot say):
    the check an extraction makes right before reading, as it re-reads the rollout's own ``session_meta``."""
    home = codex_home_of(rollout)
    path = newest_state_db(home) if home is not None else None
    if path is None:
        return False
    try:
        conn = _connect(path)
        try:
            row = conn.execute("SELECT memory_mode FROM threads WHERE id = ?", (thread_id,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and isinstance(row[0], str) and row[0] not in ("", "enabled")


def parse_source(value: str) -> Any:
    """The ``threads.source`` column as the rollout's ``session_meta.source`` would hold it: a plain name
    (``cli``, ``exec``…) or, for a sub-agent, the JSON object Codex serialises there."""
    if value.startswith("{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# --- where a thread's file is, and the prefix a history base names ---------------------------------------------

Locate = Callable[[str], list[Path]]  # thread id -> the files that hold it


def codex_home_of(path: Path) -> Path | None:
    """``<home>/sessions/YYYY/MM/DD/f`` or ``<home>/archived_sessions/.../f`` -> ``<home>``."""
    for parent in path.parents:
        if parent.name in ("sessions", "archived_sessions"):
            return parent.parent
    return None


def _name_holds(name: str, thread_id: str) -> bool:
    return name.startswith("rollout-") and thread_id in name.lower() and ".jsonl" in name


def locate_in_home(codex_home: Path, state: StateRead | None = None) -> Locate:
    """A ``Locate`` over one Codex home: the state database's ``rollout_path`` first, then the files whose name
    carries the thread id under ``sessions/`` and ``archived_sessions/``."""

    def locate(thread_id: str) -> list[Path]:
        tid = thread_id.lower()
        found: list[Path] = []
        row = state.rows.get(tid) if state is not None else None
        if row is not None and row.rollout_path:
            found.append(Path(row.rollout_path))
        for root in (codex_home / "sessions", codex_home / "archived_sessions"):
            if root.is_dir():
                found.extend(p for p in root.rglob(f"rollout-*{tid}*") if _name_holds(p.name, tid))
        return list(dict.fromkeys(found))

    return locate


def locate_among(paths: Iterable[str]) -> Locate:
    """A ``Locate`` over a known list of files (ingest's discovery): by the thread id in each name."""

    by_id: dict[str, list[Path]] = {}
    for p in paths:
        tid = thread_id_from_name(Path(p).name)
        if tid:
            by_id.setdefault(tid, []).append(Path(p))
    return lambda thread_id: list(by_id.get(thread_id.lower(), ()))


def _first_meta(data: bytes) -> dict[str, Any] | None:
    for _, obj in jsonl.iter_head_objects(data):
        if obj.get("type") == "session_meta":
            payload = obj.get("payload")
            return payload if isinstance(payload, dict) else None
    return None


def thread_id_of(data: bytes) -> str | None:
    """The thread id of the file's first ``session_meta``."""
    meta = _first_meta(data)
    tid = (meta.get("id") or meta.get("session_id")) if meta else None
    return tid.lower() if isinstance(tid, str) else None


def spawning_parent(data: bytes) -> str | None:
    """The parent thread of a sub-agent's file (``source.subagent``), or None for any other thread."""
    meta = _first_meta(data)
    source = meta.get("source") if meta else None
    if not isinstance(source, dict) or "subagent" not in source:
        return None
    spawn = source["subagent"]
    found = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    parent = (found.get("parent_thread_id") if isinstance(found, dict) else None) or meta.get("parent_thread_id")  # type: ignore[union-attr]
    return parent if isinstance(parent, str) and parent else "parent agent"


def history_base_of(data: bytes) -> HistoryBase | None:
    """The ``history_base`` of the file's first ``session_meta`` (within its first lines), if any."""
    meta = _first_meta(data)
    if meta is not None:
        base = meta.get("history_base")
        if not isinstance(base, dict):
            return None
        try:
            parsed = HistoryBase.model_validate(base)
        except ValueError:
            return None
        return parsed if parsed.thread_id else None
    return None


@dataclass(slots=True)
class Prefix:
    """The bytes a history base names (whole lines, oldest first), and whose they are."""

    data: bytes = b""
    parts: list[tuple[str, int]] = field(default_factory=list)  # (thread id, bytes) of each chunk, oldest first
    warning: str | None = None

    def inherited_bytes(self, own_thread: str | None) -> int:
        """How many leading bytes are another thread's (a fork's parent, its parent...): up to the end of the last
        chunk that is not the file's own thread. A revert's prefix is its own thread's history: 0."""
        end = total = 0
        for thread_id, size in self.parts:
            total += size
            if thread_id != own_thread:
                end = total
        return end


def _cut(data: bytes, base: HistoryBase) -> bytes | None:
    """The first ``end_byte_offset`` bytes when they end on a line boundary, else the lines whose ``ordinal`` is
    below ``end_ordinal_exclusive``; None when neither can be told."""
    end = base.end_byte_offset
    if isinstance(end, int) and 0 < end <= len(data) and data[end - 1 : end] == b"\n":
        return data[:end]
    if isinstance(base.end_ordinal_exclusive, int):
        kept: list[bytes] = []
        for line in data.splitlines(keepends=True):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            ordinal = obj.get("ordinal") if isinstance(obj, dict) else None
            if isinstance(ordinal, int) and ordinal < base.end_ordinal_exclusive:
                kept.append(line if line.endswith(b"\n") else line + b"\n")
        return b"".join(kept)
    return None


def history_prefix(path: Path, data: bytes, locate: Locate | None = None) -> Prefix | None:
    """The prefix of a file with a ``history_base`` (None when it has none), read through every base it chains to.
    A base that cannot be found or read leaves the prefix out, with a warning: the file's own lines still stand."""
    base = history_base_of(data)
    if base is None:
        return None
    if locate is None:
        home = codex_home_of(path)
        locate = locate_in_home(home) if home is not None else (lambda _tid: [])
    prefix = Prefix()
    chunks: list[tuple[str, bytes]] = []
    seen = {str(path)}
    current_path = path
    for _ in range(MAX_BASE_DEPTH):
        candidates = [p for p in locate(base.thread_id) if str(p) not in seen and p != current_path]
        data_of_base = None
        chosen = None
        for candidate in _prefer_unsuffixed(candidates):
            try:
                raw, _ = jsonl.read_bytes(candidate)
            except jsonl.UnreadableFile:
                continue
            cut = _cut(raw, base)
            if cut is not None:
                data_of_base, chosen = cut, candidate
                break
        if data_of_base is None or chosen is None:
            prefix.warning = MISSING_BASE.format(base.thread_id)
            break
        chunks.append((base.thread_id.lower(), data_of_base))
        seen.add(str(chosen))
        current_path = chosen
        next_base = history_base_of(data_of_base)
        if next_base is None:
            break
        base = next_base
    else:
        prefix.warning = f"history base chain deeper than {MAX_BASE_DEPTH}; read from there on"
    chunks.reverse()
    prefix.data = b"".join(chunk for _, chunk in chunks)
    prefix.parts = [(tid, len(chunk)) for tid, chunk in chunks]
    return prefix


def parents_enabled(path: Path, prefix: Prefix) -> bool:
    """False when Codex's state says any thread the prefix came from has its memory off."""
    home = codex_home_of(path)
    if home is None:
        return True
    rows = read_state(home).rows
    return all(row.memory_mode == "enabled" for tid, _ in prefix.parts if (row := rows.get(tid)) is not None)


def _prefer_unsuffixed(paths: list[Path]) -> list[Path]:
    """A thread's original file (``rollout-<ts>-<id>.jsonl``) before the ``_<rollout id>`` files a revert writes."""
    return sorted(paths, key=lambda p: ("_" in p.name, p.name))


# --- legacy forks: a copy of the parent's items after the fork's own header ------------------------------------


def _records(data: bytes) -> Iterable[tuple[int, bytes | None]]:
    """(end offset, the line's ``type`` and ``payload`` re-serialised) of each line; None for a ``session_meta`` or
    an unreadable line. Re-serialising makes a copy compare equal whatever its timestamp or key order."""
    start = 0
    for line in data.splitlines(keepends=True):
        end = start + len(line)
        start = end
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            yield end, None
            continue
        if not isinstance(obj, dict) or obj.get("type") == "session_meta":
            yield end, None
            continue
        yield end, orjson.dumps([obj.get("type"), obj.get("payload")], option=orjson.OPT_SORT_KEYS)


def legacy_fork_copied(path: Path, data: bytes, locate: Locate | None = None) -> int:
    """How many leading bytes of a legacy fork are a copy of its parent's history (0 for any other file).

    Before paginated history a fork (``session_meta.forked_from_id``, no ``history_base``) wrote its own header and
    then the parent's rollout items as they were (codex-rs ``InitialHistory::Forked``: "persist all rollout items
    as-is"), then its new turns. The copy is the run of lines that repeat the parent's, in order, from the start;
    said in the parent, it is the parent's to extract. A parent whose file is gone leaves the copy the only record:
    it stays the fork's (0)."""
    meta = _first_meta(data)
    parent = meta.get("forked_from_id") if meta else None
    if not isinstance(parent, str) or not parent or history_base_of(data) is not None:
        return 0
    if locate is None:
        home = codex_home_of(path)
        locate = locate_in_home(home) if home is not None else (lambda _tid: [])
    for candidate in _prefer_unsuffixed([p for p in locate(parent) if p != path]):
        try:
            raw, _ = jsonl.read_bytes(candidate)
        except jsonl.UnreadableFile:
            continue
        theirs = [r for _, r in _records(raw) if r is not None]
        copied, matched = 0, 0
        for end, record in _records(data):
            if record is None:
                if matched:
                    copied = end  # a copied header (or a bad line) inside the copy belongs to it
                continue
            if matched < len(theirs) and record == theirs[matched]:
                matched, copied = matched + 1, end
            else:
                break
        return copied if matched else 0
    return 0
