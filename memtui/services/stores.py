"""Every place under ``MEMTUI_HOME`` that can hold text derived from a rollout, and how to forget one thread there.

One registry, so forgetting cannot miss a store: ``forget``, retention, ``doctor --reset-state`` and a decided run's
cleanup all go through ``STORES``. Each store declares the tables and columns it owns (what each column holds:
rollout text, names that carry a rollout's words, a person's words, or ids and counts only) and the folders or
files under the home it owns, and says how to forget one thread from them. ``coverage_gaps`` lists every column of
the live schema and every entry under the home that no store declares; a test runs it, so the next table, column or
folder cannot be added without saying how it forgets.

Names are text: a rollout summary's file name carries the rollout's first words (its slug), so audit rows (run
records, decisions, journals) keep ids and counts, and a forgotten rollout's summary names become
``rollout_summaries/(forgotten).md`` there.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import Path

from memtui.adapters.llm.backends.cleanroom import CODEX_HOME_DIR, sweep_codex_home
from memtui.adapters.memroot.approved import sweep_interrupted_publishes
from memtui.adapters.memroot.files import (
    MEMORY_MD,
    MEMORY_SUMMARY,
    ROLLOUT_SUMMARIES,
    SYNC_MANIFEST,
    sweep_interrupted_writes,
    write_if_changed,
)
from memtui.adapters.memroot.view import remove_leftover_views
from memtui.core import clock
from memtui.domain.stems import rollout_summary_file_stem
from memtui.domain.tasks import TASK_HEADING, TASK_REF
from memtui.services import history
from memtui.services.agent_view import publish
from memtui.services.phase2.tools import drop_journal
from memtui.services.search import purge_deleted
from memtui.state import (
    batches,
    citations,
    decisions,
    health,
    jobs,
    meta,
    outputs,
    person_lines,
    rejected_hunks,
    runs,
    search_index,
    tables,
    thread_filter,
    threads,
    tombstones,
)
from memtui.state.person_lines import normalize_line

FORGOTTEN_NAME = "(forgotten)"  # what a forgotten rollout's summary stem becomes in audit rows


class Holds(StrEnum):
    """What a column holds, as far as forgetting is concerned."""

    TEXT = "rollout text"  # words derived from a rollout: the store removes them
    NAMES = "names"  # file names / paths that may carry a rollout's words (summary stems): renamed
    PERSON = "a person's words"  # reasons, notes a person typed; not derived from a rollout
    IDS = "ids and counts"  # ids, hashes, times, states, sizes: nothing to forget


@dataclass(frozen=True)
class Target:
    """One rollout to forget: its id, its summary stems (names), and the normalised lines only it supported."""

    thread_id: str
    stems: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()
    person: frozenset[str] = frozenset()  # hashes of a person's lines: never removed
    others: frozenset[str] = frozenset()  # more thread ids forgotten together (one Phase 2 run removes them all)
    expiring: bool = False  # retention, not a forget: memory lines citing it stay (and so do their index chunks)

    @property
    def marks(self) -> set[str]:
        return {self.thread_id, *self.others, *self.stems}

    @property
    def names(self) -> re.Pattern[str]:
        """Every summary stem the target's threads ever had: ``<ts>-<hash4>[-<slug>]`` where the hash (and for a
        time-based UUID the timestamp) comes from the thread id, while the slug and a UUIDv4's time may change."""
        return _name_pattern(tuple(sorted({self.thread_id, *self.others})), tuple(sorted(self.stems)))

    def owns(self, ref: str) -> bool:
        """Whether ``ref`` (a thread id or a summary stem) is one of the target's."""
        return ref in self.marks or bool(self.names.fullmatch(ref))

    def mentioned_in(self, text: str) -> bool:
        return any(m in text for m in self.marks) or bool(self.names.search(text))


_TS = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}"


@lru_cache(maxsize=256)
def _name_pattern(thread_ids: tuple[str, ...], stems: tuple[str, ...]) -> re.Pattern[str]:
    alts = [re.escape(s) for s in stems]
    for tid in thread_ids:
        prefix = rollout_summary_file_stem(tid, 0, None)  # <ts>-<hash4>; ts is the id's own for time-based UUIDs
        fixed_ts = prefix != rollout_summary_file_stem(tid, 86_400, None)
        ts = re.escape(prefix[:-5]) if fixed_ts else _TS
        alts.append(rf"{ts}-{re.escape(prefix[-4:])}(?:-[a-z0-9_]+)?")
    return re.compile("|".join(f"(?:{a})" for a in sorted(alts, key=len, reverse=True)) or r"(?!x)x")


def combine(targets: list[Target]) -> Target | None:
    if not targets:
        return None
    first = targets[0]
    return Target(
        first.thread_id,
        frozenset(s for t in targets for s in t.stems),
        frozenset(k for t in targets for k in t.keys),
        frozenset(p for t in targets for p in t.person),
        frozenset(t.thread_id for t in targets[1:]),
    )


@dataclass
class Env:
    """What a store's forget works on: a database connection and the home (the live one, or a set-aside copy)."""

    conn: sqlite3.Connection
    home: Path | None = None

    @property
    def memory_root(self) -> Path | None:
        return None if self.home is None else self.home / "memories"


Forget = Callable[[Env, Target], int]


@dataclass(frozen=True)
class Store:
    name: str
    columns: dict[str, dict[str, Holds]] = field(default_factory=dict)  # table -> column -> what it holds
    paths: tuple[str, ...] = ()  # globs relative to the home
    forget: Forget | None = None  # removes the thread now; returns how many things changed
    when: str = "now"  # when its text goes: "now", or "with the next approved Phase 2 run"
    carry_over: bool = False  # doctor --reset-state copies these rows into the new database (privacy promises)
    expire: bool = False  # retention removes an expired stage-1 output here too


def _names_in(text: str | None, target: Target) -> bool:
    return bool(text) and bool(target.names.search(text))  # type: ignore[arg-type]


def rename(text: str | None, target: Target) -> str | None:
    """``text`` with every summary stem the target's threads ever had replaced by ``FORGOTTEN_NAME``."""
    if not text:
        return text
    return target.names.sub(FORGOTTEN_NAME, text)


# ---- which lines are a target's (lineage, not mentions) -----------------------------------------------------

MIN_KEY_CHARS = 12  # shorter lines ("- none", "## Task 1") are too generic to say where they came from
_TASK = TASK_HEADING
_TAG = TASK_REF
_SUMMARY_REF = re.compile(rf"{ROLLOUT_SUMMARIES}/([^\s)]+?)\.md")
_THREAD_REF = re.compile(r"thread_id=([0-9A-Za-z_-]+)")


def line_keys(text: str) -> set[str]:
    return {k for line in text.splitlines() if len(k := normalize_line(line)) >= MIN_KEY_CHARS}


def _refs(line: str) -> set[str]:
    return set(_THREAD_REF.findall(line)) | set(_SUMMARY_REF.findall(line))


def is_person_line(line: str, t: Target) -> bool:
    key = normalize_line(line)
    return bool(key) and person_lines.key_hash(key) in t.person


def line_is_derived(line: str, t: Target) -> bool:
    """Whether ``line`` came only from the target's rollouts (a person's line never does)."""
    if is_person_line(line, t):
        return False
    mine, others = _split_refs(line, t)
    if mine:
        return not others
    return normalize_line(line) in t.keys


def _split_refs(line: str, t: Target) -> tuple[set[str], set[str]]:
    """The line's citations (thread ids, summary stems): the target's, and the others."""
    refs = _refs(line)
    mine = {r for r in refs if t.owns(r)}
    return mine, refs - mine


def strip_citations(line: str, marks: set[str]) -> str:
    """``line`` without its citations of ``marks`` (thread ids, summary stems), keeping the others."""
    for m in sorted(marks, key=len, reverse=True):  # the longest first: a stem holds its prefix
        esc = re.escape(m)
        line = re.sub(rf"(?:,\s*)?\bthread_id={esc}\b", "", line)
        line = re.sub(rf"(?:,\s*)?{ROLLOUT_SUMMARIES}/{esc}\.md", "", line)
    return re.sub(r"([\[(])\s*,\s*", r"\1", line)


def plan_lines(rel: str, text: str, t: Target) -> tuple[dict[int, str | None], list[int]]:
    """For the lines of ``text``: {index: None (remove) or the line without the forgotten citations}, and the
    indexes of a person's lines that mention the target (kept)."""
    lines = text.split("\n")
    out: dict[int, str | None] = {}
    mentions: list[int] = []
    if rel == MEMORY_MD:
        # A task runs from its "## Task n" heading to the next heading of level 1 or 2 (or the generated block's end).
        tasks: dict[tuple[int, str], tuple[int, int, set[str]]] = {}
        group = -1
        open_task: tuple[tuple[int, str], int, set[str]] | None = None

        def close(at: int) -> None:
            nonlocal open_task
            if open_task is not None:
                key, start, refs = open_task
                tasks[key] = (start, at, refs)
                open_task = None

        for i, line in enumerate(lines):
            if line.startswith(("# ", "## ", "<!--")):
                close(i)
                if line.startswith("# "):
                    group = i
                elif m := _TASK.match(line):
                    open_task = ((group, m.group(1)), i, set())
            elif open_task is not None:
                open_task[2].update(_refs(line))
        close(len(lines))
        only = {key for key, (_, _, refs) in tasks.items() if refs and all(t.owns(r) for r in refs)}
        for key in only:
            start, end, _ = tasks[key]
            out.update({i: None for i in range(start, end)})
        group = -1
        for i, line in enumerate(lines):
            if line.startswith("# "):
                group = i
            tags = _TAG.findall(line)
            if tags and all((group, tag) in only for tag in tags):
                out[i] = None
    for i, line in enumerate(lines):
        mine, others = _split_refs(line, t)
        if mine and others:
            out[i] = strip_citations(line, mine)  # other rollouts still support it: only the citation goes
        elif mine:
            out[i] = None
            stripped = line.lstrip()
            if rel == MEMORY_SUMMARY and stripped.startswith("- desc:") and i > 0 and lines[i - 1].startswith("- "):
                out[i - 1] = None  # the topic line whose description points at the summary
        elif normalize_line(line) in t.keys:
            out[i] = None
    for i in list(out):
        if is_person_line(lines[i], t):
            del out[i]
            if _split_refs(lines[i], t)[0] or normalize_line(lines[i]) in t.keys:
                mentions.append(i)
    return out, sorted(set(mentions))


def derived_line_numbers(rel: str, text: str, t: Target) -> list[int]:
    """0-based numbers of the lines of ``text`` that forgetting ``t`` removes or rewrites."""
    return sorted(plan_lines(rel, text, t)[0])


def scrub_text(rel: str, text: str, t: Target) -> str:
    plan, _ = plan_lines(rel, text, t)
    if not plan:
        return text
    lines = text.split("\n")
    return "\n".join(plan.get(i, line) for i, line in enumerate(lines) if plan.get(i, line) is not None)  # type: ignore[misc]


def holds(text: str, t: Target, *, diff: bool = False) -> bool:
    """Whether ``text`` still holds something of the target's (a person's line does not count)."""
    for line in text.split("\n"):
        if diff and line[:1] in "+- ":
            line = line[1:]
        if is_person_line(line, t):
            continue
        if t.mentioned_in(line) or (t.keys and normalize_line(line) in t.keys):
            return True
    return False


# ---- the stores' forget functions ------------------------------------------------------------------------------


def _forget_thread_words(env: Env, t: Target) -> int:
    return threads.forget_words(env.conn, t.thread_id)


def _forget_filter_index(env: Env, t: Target) -> int:
    # the rollout index's forget blanked the words and its triggers deleted them from the index; the FTS5 segments
    # keep the deleted trigrams until merged
    thread_filter.purge(env.conn)
    return 1


def _forget_output(env: Env, t: Target) -> int:
    return outputs.forget(env.conn, t.thread_id)


def _forget_jobs(env: Env, t: Target) -> int:
    return jobs.forget_stage1(env.conn, t.thread_id)


def _forget_citations(env: Env, t: Target) -> int:
    return citations.forget_thread(env.conn, t.thread_id)


def _forget_search(env: Env, t: Target) -> int:
    # memory-file chunks that hold its lines: dropped, and their file re-indexed by the next refresh (the live
    # memory files keep those lines until the removing run is approved; a set-aside database has no next refresh)
    holds_it = None if t.expiring else (lambda text: holds(text, t))
    return search_index.forget(env.conn, t.thread_id, holds_it, lambda source: _names_in(source, t))


def _forget_runs(env: Env, t: Target) -> int:
    return runs.forget(env.conn, lambda text: holds(text, t, diff=True), lambda text: rename(text, t))


def _forget_health(env: Env, t: Target) -> int:
    return health.forget_thread(env.conn, t.thread_id)


def _forget_journals(env: Env, t: Target) -> int:
    return meta.rewrite_values(env.conn, lambda text: rename(text, t))


def _forget_decisions(env: Env, t: Target) -> int:
    return decisions.rename(env.conn, lambda text: rename(text, t))


def _forget_snapshots(env: Env, t: Target) -> int:
    conn = env.conn
    n = 0
    for decision_id, files in list(history.snapshots(conn)):
        new = {rel: scrub_text(rel, text, t) for rel, text in files.items()}
        if new == files:
            continue
        if any(holds(text, t) for text in new.values()):
            history.drop_snapshots(conn, [decision_id])
        else:
            data, raw = history._pack(new)
            decisions.replace_snapshot_data(conn, decision_id, data, raw)
        n += 1
    return n


def _forget_rejected_hunks(env: Env, t: Target) -> int:
    """A left-out hunk loses only the forgotten rollout's lines; the rest of the person's decision stands."""
    conn = env.conn
    n = 0
    for hunk in rejected_hunks.all_evidence(conn):
        hid, file, text = hunk.id, hunk.file, hunk.text
        lines = json.loads(hunk.added or "[]")
        ids = json.loads(hunk.thread_ids or "[]")
        if _names_in(file, t):
            rejected_hunks.delete(conn, hid)
            n += 1
            continue
        kept_text = [x for x in text.split("\n") if not line_is_derived(x[1:] if x[:1] in "+- " else x, t)]
        kept_added = [x for x in lines if not line_is_derived(x, t)]
        kept_ids = [i for i in ids if i != t.thread_id]
        if (kept_text, kept_added, kept_ids) == (text.split("\n"), lines, ids):
            continue
        n += 1
        if not kept_added:
            rejected_hunks.delete(conn, hid)  # nothing of the person's ban is left
        else:
            rejected_hunks.narrow(conn, hid, "\n".join(kept_text), kept_added, kept_ids)
    return n


def _forget_tombstones(env: Env, t: Target) -> int:
    return tombstones.forget_thread(env.conn, t.thread_id)


def batch_files(env: Env) -> list[Path]:
    if env.home is None:
        return []
    found = {Path(p) for p in batches.openai_input_paths(env.conn)}
    folder = env.home / "batches"
    if folder.is_dir():
        found |= set(folder.glob("*.jsonl"))
    return sorted(p for p in found if p.is_file())


def _forget_batches(env: Env, t: Target) -> int:
    """The request lines of the thread leave every batch file memtui wrote; its request rows keep ids only."""
    n = batches.forget_request_errors(env.conn, t.thread_id)
    prefix = f'"custom_id": "{t.thread_id}:'
    compact = f'"custom_id":"{t.thread_id}:'
    for path in batch_files(env):
        data = path.read_bytes().decode("utf-8", "replace")
        if t.thread_id not in data:
            continue
        kept = [x for x in data.splitlines(keepends=True) if prefix not in x and compact not in x]
        write_if_changed(path, "".join(kept))
        n += 1
    return n


def drop_finished_batch_files(conn: sqlite3.Connection) -> int:
    """Input files of finished submissions are not needed again (the remote has its copy): delete them."""
    n = 0
    for path in batches.openai_input_paths(conn, finished=True):
        p = Path(path)
        if p.is_file():
            p.unlink()
            n += 1
    return n


def _forget_summary_files(env: Env, t: Target) -> int:
    root = env.memory_root
    if root is None:
        return 0
    n = 0
    for stem in t.stems:
        path = root / "rollout_summaries" / f"{stem}.md"
        if path.is_file():
            path.unlink()
            n += 1
    return n


def _republish_approved(env: Env, _t: Target | None = None) -> int:
    """The copy of the approved files agents ``rg`` in follows the baseline; copies of older baselines (which may
    hold a forgotten rollout's lines) go whenever it is republished."""
    if env.home is None or not (env.home / "memories" / ".git").exists():
        return 0
    publish(env.home / "memories", env.conn)
    return 0


def _drop_sync_manifest(env: Env, _t: Target | None = None) -> int:
    """The manifest names summary files (a forgotten rollout's words can be in a name); it only saves work, so the
    next sync, which renders every summary again without it, writes a fresh one."""
    if env.home is None or not (env.home / SYNC_MANIFEST).is_file():
        return 0
    (env.home / SYNC_MANIFEST).unlink()
    return 1


def sweep_interrupted(env: Env, _t: Target | None = None) -> int:
    """Temp files and folders a process killed mid-write left (each a full copy of what it was writing): under the
    memory-root lock no live writer has one open, and a live process's own is never taken."""
    root = env.memory_root
    if root is None:
        return 0
    return sweep_interrupted_writes(root) + sweep_interrupted_publishes(root)


def sweep_work(env: Env, _t: Target | None = None) -> int:
    """Scratch folders of Phase 2 runs (a copy of ``.git`` for a CLI agent's run, the agent's last message) that a
    killed process left. Only under the memory-root lock, when no Phase 2 runs."""
    if env.home is None:
        return 0
    work = env.home / "work"
    n = sweep_stale_scratch(env.home)
    if work.is_dir():
        for entry in work.iterdir():
            if entry.is_dir() and entry.name.startswith(("phase2-", "codex-agent-")):
                shutil.rmtree(entry, ignore_errors=True)
                n += 1
    return n


STALE_SCRATCH_SECONDS = 3600  # a Phase 1 CLI call's folder this old belongs to no live call (cli_timeout_seconds)


def sweep_stale_scratch(home: Path) -> int:
    """Folders of Phase 1 CLI calls (``work/codex-*``: the schema and the model's reply, a rollout's raw memory)
    that a killed process left; any process may run this, a live call's folder is younger."""
    work = home / "work"
    n = 0
    if work.is_dir():
        for entry in work.iterdir():
            if not (entry.is_dir() and entry.name.startswith("codex-") and not entry.name.startswith("codex-agent-")):
                continue
            with contextlib.suppress(OSError):
                if clock.file_time() - entry.stat().st_mtime > STALE_SCRATCH_SECONDS:
                    shutil.rmtree(entry, ignore_errors=True)
                    n += 1
    return n


def _sweep_views(env: Env, _t: Target) -> int:
    root = env.memory_root  # a reader's view in use is younger than the leftover age, and goes when it is done
    return 0 if root is None else remove_leftover_views(root)


def _forget_logs(env: Env, t: Target) -> int:
    if env.home is None or not (env.home / "logs").is_dir():
        return 0
    n = 0
    for path in sorted((env.home / "logs").rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes().decode("utf-8", "replace")
        if not t.mentioned_in(data):
            continue
        write_if_changed(path, "".join(x for x in data.splitlines(keepends=True) if not t.mentioned_in(x)))
        n += 1
    return n


def _forget_aside_databases(env: Env, t: Target) -> int:
    """``doctor --reset-state`` keeps the old database beside the new one: forget there too, or delete it when it
    cannot be opened (its forget marks were carried over when it was set aside)."""
    if env.home is None:
        return 0
    n = 0
    for path in sorted(env.home.glob("state.sqlite.broken-*")):
        if path.name.endswith(("-wal", "-shm")):
            continue
        try:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                conn.execute("PRAGMA secure_delete = ON")
                aside = Env(conn, None)
                for store in STORES:
                    if store.forget is None or not store.columns or store.name in _FILE_ONLY:
                        continue
                    if all(_has_table(conn, table) for table in store.columns):
                        store.forget(aside, t)
                if _has_table(conn, "meta"):
                    purge_deleted(conn, force=True)  # the deleted documents' terms leave the FTS5 segments
                conn.execute("VACUUM")
                if _has_table(conn, thread_filter.TABLE):
                    thread_filter.rebuild(conn)  # keyed on the rowids a VACUUM may renumber
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
        except sqlite3.DatabaseError:
            for side in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                side.unlink(missing_ok=True)
        n += 1
    return n


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchone() is not None


_FILE_ONLY = frozenset({"set-aside databases"})

_I, _T, _N, _P = Holds.IDS, Holds.TEXT, Holds.NAMES, Holds.PERSON


def _cols(names: str, holds: Holds) -> dict[str, Holds]:
    return {n: holds for n in names.split()}


STORES: tuple[Store, ...] = (
    Store(
        "rollout index",
        {
            "threads": {
                **_cols(
                    "id source_kind path cwd originator cli_version session_source source_detail parent_thread_id"
                    " memory_mode history_mode git_branch git_commit git_url model created_at updated_at items bytes"
                    " archived skipped_lines ingest_status ingest_reason ingested_at",
                    _I,
                ),
                **_cols("preview title", _T),
            },
            "ingest_files": _cols(
                "path source_kind size mtime_ns thread_id status reason lines skipped_lines ingested_at", _I
            ),
        },
        forget=_forget_thread_words,
    ),
    Store(
        "rollout list filter index (trigram FTS5 segments)",
        {
            # contentless: the words are the rollout index's; the segments hold their trigrams until merged
            thread_filter.TABLE: _cols("preview cwd id source_kind session_source title", _T),
            f"{thread_filter.TABLE}_data": {"id": _I, "block": _T},
            f"{thread_filter.TABLE}_idx": {"segid": _I, "term": _T, "pgno": _I},
            f"{thread_filter.TABLE}_config": _cols("k v", _I),
        },
        forget=_forget_filter_index,
    ),
    Store(
        "stage-1 outputs",
        {
            "stage1_outputs": {
                **_cols(
                    "thread_id source_updated_at generated_at usage_count last_usage selected_for_phase2"
                    " selected_for_phase2_source_updated_at offline",
                    _I,
                ),
                **_cols("raw_memory rollout_summary rollout_slug", _T),
            }
        },
        forget=_forget_output,
        expire=True,
    ),
    Store(
        "stage-1 jobs",
        {
            "jobs": {
                **_cols(
                    "kind job_key status worker_id ownership_token started_at finished_at lease_until retry_at"
                    " retry_remaining input_watermark last_success_watermark",
                    _I,
                ),
                "last_error": _T,
            },
            "job_runs": {
                **_cols(
                    "id kind job_key ownership_token worker_id started_at finished_at outcome noop offline model"
                    " input_bytes sent_bytes truncated_tokens estimated_tokens prompt_tokens completion_tokens"
                    " latency_ms redactions",
                    _I,
                ),
                "error": _T,
            },
        },
        forget=_forget_jobs,
    ),
    Store(
        "citations",
        {
            "citation_events": {**_cols("key origin thread_id rollout_ids recorded_at", _I), "body": _T},
            "citation_entries": {**_cols("id event_key path line_start line_end text_hash", _I), "note": _T},
        },
        forget=_forget_citations,
    ),
    Store(
        "search index (documents, FTS5 segments, and the WAL once purged)",
        {
            "search_docs": {**_cols("id kind source loc role project", _I), "text": _T},
            "search_sources": _cols("key stamp", _I),
            "search_docs_fts": _cols("text scope", _T),
            "search_docs_fts_data": {"id": _I, "block": _T},
            "search_docs_fts_idx": {"segid": _I, "term": _T, "pgno": _I},
            "search_docs_fts_docsize": _cols("id sz", _I),
            "search_docs_fts_config": _cols("k v", _I),
            "search_user_fts": _cols("text", _T),
            "search_user_fts_data": {"id": _I, "block": _T},
            "search_user_fts_idx": {"segid": _I, "term": _T, "pgno": _I},
            "search_user_fts_config": _cols("k v", _I),
        },
        forget=_forget_search,
        expire=True,
    ),
    Store(
        "forget marks",
        {"forgotten_threads": {**_cols("thread_id forgotten_at run_id done_at", _I), "reason": _P, "contributed": _T}},
        when="its lineage (contributed) is dropped when the removing run is approved; the mark stays",
        carry_over=True,
    ),
    Store(
        "Phase 2 runs",
        {
            "phase2_runs": {
                **_cols(
                    "id status started_at finished_at decided_at offline model baseline_commit new_commit"
                    " claimed_watermark new_watermark selected turns prompt_tokens completion_tokens reviewed_tree"
                    " lines_added lines_removed kind restore_of health_drops rejections_acted",
                    _I,
                ),
                **_cols("input_diff diff pre_snapshot", _T),
                **_cols("stat reviewed_files included_changes written_files reason trust_report", _N),
            }
        },
        forget=_forget_runs,
    ),
    Store(
        "memory health",
        {
            "health_blocks": _cols("block_id since verified_at proposal proposed_at scanned", _I),
            "health_findings": _cols("block_id thread_id item relation at refined refined_by", _I),
        },
        forget=_forget_health,
    ),
    Store("run journals and flags", {"meta": {"key": _I, "value": _N}}, forget=_forget_journals),
    Store("change counters (a name and a number)", {"data_versions": _cols("name version", _I)}),
    Store(
        "decisions (audit records)",
        {
            "decisions": {
                **_cols("id at kind run_id thread_id tree commit_id", _I),
                **_cols("files_in files_out hunks_in hunks_out", _N),
                "reason": _P,
            }
        },
        forget=_forget_decisions,
    ),
    Store(
        "history snapshots",
        {"history_snapshots": {**_cols("decision_id tree created_at files raw_bytes", _I), "data": _T}},
        forget=_forget_snapshots,
    ),
    Store(
        "left-out hunks",
        {
            "rejected_hunks": {
                **_cols("id run_id hunk_id content_hash thread_ids decided_at", _I),
                **_cols("text added", _T),
                "file": _N,
                "reason": _P,
            }
        },
        forget=_forget_rejected_hunks,
    ),
    Store(
        "tombstones (hashes of lines a person deleted)",
        {"tombstones": _cols("hash file thread_ids created_at", _I)},
        forget=_forget_tombstones,
        carry_over=True,
    ),
    Store("a person's lines (hashes)", {"person_lines": _cols("hash file created_at", _I)}, carry_over=True),
    Store(
        "Phase 1 batches (request files and records)",
        {
            "batch_submissions": {
                **_cols(
                    "id kind status remote_status model worker_id input_file_id batch_id output_file_id error_file_id"
                    " requests bytes created_at updated_at finished_at detail",
                    _I,
                ),
                "input_path": _N,
            },
            "batch_requests": {
                **_cols(
                    "submission_id custom_id thread_id input_hash ownership_token source_updated_at run_id status"
                    " measurements",
                    _I,
                ),
                "error": _T,
            },
        },
        paths=("batches", "batches/*"),
        forget=_forget_batches,
    ),
    Store(
        "rollout summary files",
        paths=("memories/rollout_summaries", "memories/rollout_summaries/*"),
        forget=_forget_summary_files,
    ),
    Store(
        "memory files and their git history",
        paths=(
            "memories",
            "memories/MEMORY.md",
            "memories/memory_summary.md",
            "memories/raw_memories.md",
            "memories/skills",
            "memories/skills/*",
            "memories/extensions",
            "memories/extensions/*",
            "memories/phase2_workspace_diff.md",
            "memories/tombstones.md",
            "memories/.git",
            "memories/.git/*",
        ),
        when="with the next approved Phase 2 run (lineage scrub, one-commit baseline, git prune)",
    ),
    Store(
        "temp copies of interrupted writes (an atomic write or a publish killed before its rename)",
        paths=(
            "memories/.*.tmp-*",
            "memories/*/.*.tmp-*",
            ".memories-approved-*.tmp-*",
            ".memories-approved-*.tmp-*/*",
        ),
        forget=sweep_interrupted,
    ),
    Store(
        "the approved copy agents search (memories-approved)",
        paths=("memories-approved", ".memories-approved-*", ".memories-approved-*/*", ".memories-approved.*.link"),
        forget=_republish_approved,
        when="rebuilt from each approved baseline (the next approved Phase 2 run); older copies are removed",
    ),
    Store(
        "the last sync's manifest (summary file names and their stamps)",
        paths=("phase2_sync.json",),
        forget=_drop_sync_manifest,
    ),
    Store("work folders", paths=("work", "work/*"), forget=sweep_work),
    Store(
        "memtui's private Codex home (its own calls' sessions and Codex's state of them)",
        paths=(f"{CODEX_HOME_DIR}", f"{CODEX_HOME_DIR}/*", f"{CODEX_HOME_DIR}/*/*"),
        forget=lambda env, _t: 0 if env.home is None else sweep_codex_home(env.home),
    ),
    Store("read-only diff views", paths=(".memories-views", ".memories-views/*"), forget=_sweep_views),
    Store("logs", paths=("logs", "logs/*"), forget=_forget_logs),
    Store("the state database", paths=("state.sqlite", "state.sqlite-wal", "state.sqlite-shm")),
    Store("set-aside databases", paths=("state.sqlite.broken-*",), forget=_forget_aside_databases),
    Store("hooks' saved settings, the lock, config", paths=("hooks", "hooks/*", ".memories.lock", "config.toml")),
)


def drop_run_content(conn: sqlite3.Connection, run_id: int) -> None:
    """A decided run (approved, rejected, failed) keeps file lists and counts: its diffs, pre-run snapshot and
    journal (the stores that hold a run's text) are dropped."""
    runs.drop_content(conn, run_id)
    drop_journal(conn, run_id)


# ---- running the registry ---------------------------------------------------------------------------------------


def forget_everywhere(env: Env, target: Target) -> dict[str, int]:
    """Every store forgets ``target`` now (the caller holds the memory-root lock); returns what changed per store."""
    return {s.name: s.forget(env, target) for s in STORES if s.forget is not None}


def expire(env: Env, thread_id: str) -> int:
    """Retention: an expired stage-1 output leaves the stores that hold it (not a forget: no mark is set)."""
    t = Target(thread_id, expiring=True)
    return sum(s.forget(env, t) for s in STORES if s.expire and s.forget is not None)


def carried_tables() -> list[str]:
    return [table for s in STORES if s.carry_over for table in s.columns]


Carried = tables.Rows  # table -> rows as (column, value) pairs


def read_carried(conn: sqlite3.Connection) -> Carried:
    """The rows of the tables a reset carries over (privacy promises), from a database that may be broken: a
    table that cannot be read is left out."""
    return tables.read_rows(conn, carried_tables())


def carry(conn: sqlite3.Connection, carried: Carried) -> None:
    """Write carried rows into a new database (the columns it has; the runs table starts empty, so no run id)."""
    tables.insert_rows(conn, carried, clear=frozenset({"run_id"}))


def declared_columns() -> dict[str, dict[str, Holds]]:
    out: dict[str, dict[str, Holds]] = {}
    for s in STORES:
        for table, cols in s.columns.items():
            out.setdefault(table, {}).update(cols)
    return out


def coverage_gaps(conn: sqlite3.Connection, home: Path | None = None) -> list[str]:
    """``table.column`` of the live schema, and paths under ``home``, that no store declares."""
    declared = declared_columns()
    gaps: list[str] = []
    for (table,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ):
        for col in tables.columns(conn, table):
            if col not in declared.get(table, {}):
                gaps.append(f"{table}.{col}")
    if home is not None:
        patterns = [p for s in STORES for p in s.paths]
        for path in _entries(home):
            rel = path.relative_to(home).as_posix()
            if not any(fnmatch(rel, p) for p in patterns):
                gaps.append(rel)
    return gaps


def _entries(home: Path) -> Iterable[Path]:
    """Top-level entries, the memory root's entries, and one level inside each folder (not inside ``.git``)."""
    if not home.is_dir():
        return
    for entry in sorted(home.iterdir()):
        yield entry
        if entry.is_dir() and not entry.is_symlink():
            for child in sorted(entry.iterdir()):
                if entry.name == "memories" and child.name == ".git":
                    yield child
                    continue
                yield child
                if entry.name == "memories" and child.is_dir() and not child.is_symlink():
                    yield from sorted(child.iterdir())


def holders(env: Env) -> dict[str, int]:
    """Rows per declared table (what a reset would drop); tables missing from a broken database are skipped."""
    out: dict[str, int] = {}
    for table in declared_columns():
        if table.startswith(("search_docs_fts", "search_user_fts", thread_filter.TABLE)) or table == "meta":
            continue
        if (n := tables.count_rows(env.conn, table)) is not None:
            out[table] = n
    return out
