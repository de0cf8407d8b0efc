"""Why a line is in memory: the evidence behind each hunk of MEMORY.md and memory_summary.md.

Two kinds, both pointing at rollouts: the ``rollout_summaries/`` files listed under ``### rollout_summary_files`` in
the task the hunk sits in (or the tasks its ``[Task n]`` tags name; in memory_summary.md the summary files its lines
point at), and the raw memories whose lines match the hunk's text best, ranked by SQLite FTS5 bm25 over a
temporary in-memory index of the run's selected raw memories (one row per line, so the excerpt is the line that
matched). ``[item N]`` references in an excerpt, or in the rollout summary line closest to it, say which
transcript item (the N-th element of ``memory_items``) the evidence comes from.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import MEMORY_MD, MEMORY_SUMMARY, RAW_MEMORIES, ROLLOUT_SUMMARIES
from memtui.domain.stems import rollout_summary_file_stem
from memtui.domain.tasks import TASK_HEADING, TASK_REF
from memtui.domain.trust.classes import cited_items
from memtui.services.context import Context
from memtui.services.review.hunks import Hunk
from memtui.state import outputs as output_rows

EVIDENCE_FILES = (MEMORY_MD, MEMORY_SUMMARY)
MAX_EVIDENCE = 5
MAX_QUERY_TERMS = 64
# Words of the MEMORY.md format itself: they say nothing about where a line came from.
_FORMAT_WORDS = frozenset(
    [
        "task",
        "group",
        "scope",
        "applies_to",
        "cwd",
        "reuse_rule",
        "rollout_summary_files",
        "rollout_summaries",
        "keywords",
        "thread_id",
        "updated_at",
        "rollout_path",
        "memory",
        "summary",
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "was",
        "were",
        "are",
        "you",
        "your",
        "not",
        "but",
        "when",
        "then",
        "into",
        "user",
        "preferences",
        "reusable",
        "knowledge",
        "failures",
        "how",
        "differently",
        "apply",
        "working",
        "project",
        "sessions",
        "run",
        "none",
    ]
)
_TASK = TASK_HEADING
_TAG = TASK_REF
_SUMMARY_REF = re.compile(rf"{ROLLOUT_SUMMARIES}/([^\s)]+?\.md)")
_THREAD_REF = re.compile(r"thread_id=([0-9A-Za-z_-]+)")
_WORD = re.compile(r"[A-Za-z0-9_]{3,}")


class Evidence(BaseModel):
    thread_id: str
    rollout_summary_file: str | None = None
    score: float = 0.0  # -bm25 of the best matching raw-memory line (higher is better); 0 when nothing matched
    excerpt: str = ""
    via: Literal["task", "raw_memory", "health"] = "raw_memory"  # health: what the user said after approval
    items: list[int] = []  # transcript items cited ([item N]) by the excerpt or the closest summary line
    project: str | None = None
    date: int | None = None
    title: str | None = None


@dataclass
class _Output:
    thread_id: str
    raw_memory: str
    rollout_summary: str
    stem: str
    cwd: str | None
    updated_at: int | None
    title: str | None


def item_refs(text: str) -> list[int]:
    """``[item 7]``, ``[items 3, 5]``, ``[items 4-6]`` -> [7], [3, 5], [4, 5, 6] (in order, once each)."""
    return cited_items(text)


def _outputs(conn: sqlite3.Connection, thread_ids: list[str] | None) -> list[_Output]:
    # no run selection (a restore, a person's edit): what the memory was built from
    return [
        _Output(
            r.thread_id,
            r.raw_memory or "",
            r.rollout_summary or "",
            rollout_summary_file_stem(r.thread_id, r.source_updated_at, r.rollout_slug) + ".md",
            r.cwd,
            r.updated_at,
            r.title or None,
        )
        for r in output_rows.with_threads(conn, thread_ids)
    ]


def _terms(lines: Iterable[str], limit: int | None = MAX_QUERY_TERMS) -> list[str]:
    seen: dict[str, None] = {}
    for line in lines:
        for w in _WORD.findall(line.lower()):
            if w not in _FORMAT_WORDS and not w.isdigit():
                seen.setdefault(w, None)
    words = list(seen)
    return words if limit is None else words[:limit]


class _Index:
    """A temporary FTS5 table: one row per raw-memory line of the candidate rollouts."""

    def __init__(self, outputs: list[_Output]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE lines USING fts5(thread_id UNINDEXED, line, tokenize='porter unicode61')")
        rows = []
        for o in outputs:
            for line in o.raw_memory.splitlines():
                text = line.strip()
                if text and text != "---":
                    rows.append((o.thread_id, text))
        self.db.executemany("INSERT INTO lines VALUES (?, ?)", rows)

    def best(self, text_lines: list[str], limit: int = 200) -> dict[str, tuple[float, str]]:
        """thread id -> (score, best line) for the rollouts whose raw-memory lines match ``text_lines``."""
        terms = _terms(text_lines)
        if not terms:
            return {}
        query = " OR ".join(f'"{t}"' for t in terms)
        out: dict[str, tuple[float, str]] = {}
        for thread_id, line, rank in self.db.execute(
            "SELECT thread_id, line, bm25(lines) FROM lines WHERE lines MATCH ? ORDER BY bm25(lines) LIMIT ?",
            (query, limit),
        ):
            if thread_id not in out:
                out[thread_id] = (round(-float(rank), 4), line)
        return out

    def close(self) -> None:
        self.db.close()


def _task_refs(text: str, first_line: int, changed: list[str]) -> set[str]:
    """Summary files and thread ids listed for the task the hunk sits in, or for the tasks its lines tag."""
    lines = text.split("\n")
    idx = max(0, min(first_line - 1, len(lines) - 1))
    refs: set[str] = set()
    # the task around the hunk: walk up to its "## Task n" (a level-1 heading or another level-2 one stops it)
    start = None
    for i in range(idx, -1, -1):
        if _TASK.match(lines[i]):
            start = i
            break
        if lines[i].startswith(("# ", "## ")):
            break
    group = next((i for i in range(idx, -1, -1) if lines[i].startswith("# ")), -1)
    wanted = {m for line in changed for m in _TAG.findall(line)}

    def section(begin: int) -> set[str]:
        found: set[str] = set()
        for j in range(begin + 1, len(lines)):
            if lines[j].startswith(("# ", "## ", "<!--")):
                break
            found |= set(_SUMMARY_REF.findall(lines[j])) | {f"thread:{t}" for t in _THREAD_REF.findall(lines[j])}
        return found

    if start is not None:
        refs |= section(start)
    if wanted:
        end = next((i for i in range(group + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
        for i in range(group + 1, end):
            m = _TASK.match(lines[i])
            if m and m.group(1) in wanted:
                refs |= section(i)
    return refs


def _file_text(root: Path, rel: str, hunk: Hunk) -> str:
    path = root / rel
    if hunk.new_count > 0 and path.is_file():
        return path.read_text(encoding="utf-8", errors="replace")
    try:
        return baseline.run_git(root, "cat-file", "blob", f"HEAD:{rel}")
    except baseline.BaselineError:
        return ""


def _closest_items(texts: list[str], excerpt: str, query: list[str]) -> list[int]:
    """Items cited by the line (of the rollout's summary and raw memory) sharing the most words with the excerpt,
    then with the hunk; ties go to the earlier line."""
    first, second = set(_terms([excerpt], None)), set(_terms(query, None))
    best: tuple[tuple[int, int], list[int]] = ((0, 0), [])
    for text in texts:
        for line in text.splitlines():
            refs = item_refs(line)
            if not refs:
                continue
            words = set(_terms([line], None))
            key = (len(first & words), len(second & words))
            if key > best[0]:
                best = (key, refs)
    return best[1]


def evidence_for_hunks(ctx: Context, hunks: list[Hunk], run: Any = None) -> dict[str, list[Evidence]]:
    """Evidence for each hunk of MEMORY.md / memory_summary.md (other files get none), best first."""
    targets = [h for h in hunks if h.file in EVIDENCE_FILES and not h.whole_file]
    if not targets:
        return {}
    root = ctx.paths.memory_root
    selected = [tid for tid, _ in getattr(run, "selected", None) or []] or None
    outputs = _outputs(ctx.conn, selected)
    by_id = {o.thread_id: o for o in outputs}
    by_stem = {o.stem: o for o in outputs}
    index = _Index(outputs)
    texts: dict[str, str] = {}
    result: dict[str, list[Evidence]] = {}
    try:
        for h in targets:
            changed = h.added or h.removed
            text = texts.setdefault(h.file, _file_text(root, h.file, h))
            first = h.new_start if h.new_count > 0 else h.old_start
            offset = next((i for i, line in enumerate(h.text.split("\n")[1:]) if line[:1] in "+-"), 0)
            refs = _task_refs(text, first + offset, changed) if h.file == MEMORY_MD else set()
            refs |= {r for line in h.text.split("\n") for r in _SUMMARY_REF.findall(line)}
            refs |= {f"thread:{t}" for line in changed for t in _THREAD_REF.findall(line)}
            ranked = index.best(changed)
            found: list[Evidence] = _health_evidence(ctx, h.removed)
            listed: set[str] = set()
            for ref in sorted(refs):
                out = by_id.get(ref[7:]) if ref.startswith("thread:") else by_stem.get(ref)
                if out is None or out.thread_id in listed:
                    continue
                listed.add(out.thread_id)
                score, line = ranked.get(out.thread_id, (0.0, ""))
                found.append(_make(out, score, line or _first_line(out.rollout_summary), "task", changed))
            found.sort(key=lambda e: (e.via != "health", -e.score))  # the user's later words first
            for thread_id, (score, line) in sorted(ranked.items(), key=lambda kv: -kv[1][0]):
                if len(found) >= MAX_EVIDENCE:
                    break
                if thread_id in listed or score <= 0:
                    continue
                listed.add(thread_id)
                found.append(_make(by_id[thread_id], score, line, "raw_memory", changed))
            result[h.id] = found
    finally:
        index.close()
    return result


def _health_evidence(ctx: Context, removed: list[str]) -> list[Evidence]:
    """For a hunk that removes approved lines: the user's later words memory health found against them (a
    contradiction, or the finding behind a person's proposal), first."""
    from memtui.services.health.evidence import evidence_for_lines

    return [
        Evidence(
            thread_id=e.thread_id,
            excerpt=e.text,
            via="health",
            items=[e.item],
            project=e.project,
            date=e.at,
            title=f"the user {e.relation}",
        )
        for e in evidence_for_lines(ctx.conn, removed)
    ]


def why_no_evidence(hunk: Hunk) -> str:
    """Why a hunk has no evidence listed, in the words of what the hunk is (said instead of a bare "none")."""
    if hunk.file == RAW_MEMORIES or hunk.file.startswith(ROLLOUT_SUMMARIES + "/"):
        return (
            f"{hunk.file} is an input of the run (what Phase 1 extracted), not memory the agent wrote: "
            "its source is the rollout itself."
        )
    if hunk.file not in EVIDENCE_FILES:
        return f"{hunk.file} is not read for evidence (only MEMORY.md and memory_summary.md are)."
    if hunk.whole_file:
        return "A change of the whole file with no text lines (a mode or a deletion): no line to trace."
    if not hunk.added:
        return "This hunk only removes lines: evidence is traced for what comes in, not for what goes."
    return "No selected rollout matches these lines: no task reference and no raw memory shares their words."


def _first_line(text: str) -> str:
    return next((line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip()), "")


def _make(out: _Output, score: float, line: str, via: Literal["task", "raw_memory"], query: list[str]) -> Evidence:
    items = item_refs(line) or _closest_items([out.rollout_summary, out.raw_memory], line, query)
    return Evidence(
        thread_id=out.thread_id,
        rollout_summary_file=f"{ROLLOUT_SUMMARIES}/{out.stem}",
        score=score,
        excerpt=line[:400],
        via=via,
        items=items,
        project=out.cwd,
        date=out.updated_at,
        title=(out.title or _first_line(out.rollout_summary))[:120] or None,
    )


def hunk_infos(ctx: Context, diff: str, run: Any = None) -> list[Any]:
    """Every hunk of ``diff`` with its evidence, for ``review show --json`` and the UI."""
    from memtui.services.review.hunks import HunkInfo, hunks_of

    hunks = hunks_of(diff)
    found = evidence_for_hunks(ctx, hunks, run)
    hidden = (getattr(run, "trust_report", None) or {}).get("hidden", {})
    return [HunkInfo.of(h, [e.model_dump() for e in found.get(h.id, [])], hidden.get(h.file)) for h in hunks]
