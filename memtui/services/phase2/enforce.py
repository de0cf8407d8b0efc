"""Phase 2: the classes survive consolidation, and no run may promote a statement to the user's.

After the agent (or the offline merge) wrote the memory files, every line the run added gets the marker of the
Phase 1 statement it comes from (matched by its words against the selected raw memories and rollout summaries,
whose markers memtui wrote), never the marker the agent wrote: a line that matches nothing is the agent's own. A
line that presents itself as the user's (``the user prefers ...``, ``remember:``, a ``[trust:user]`` marker) while
its evidence is tool output or the agent's reasoning refuses the whole run. Lines the file held before the run
(a person's edits, the approved baseline) are left exactly as they were. Hidden characters are removed and counted
per line, so the review can flag where the run tried to write them.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from itertools import compress
from pathlib import Path

from memtui.core.hidden import strip_hidden
from memtui.domain.tasks import TASK_REF_SPACED
from memtui.domain.trust import markers
from memtui.domain.trust.classes import Trust, weaker
from memtui.domain.trust.injection import distinctive_tokens, words
from memtui.state.selection import Stage1Output

MATCH = 0.5  # share of a line's words a Phase 1 statement must hold to be its source
TAINT = 0.6  # share of a line's words that makes a tool or flagged statement its (co-)source
BEYOND_USER = 0.25  # for a line the user's statement sources: share of its words a tool supplies beyond the user's
MAX_REASONS = 3


class TrustViolation(ValueError):
    """A run presented a ``tool`` or ``agent`` statement as the user's."""

    def __init__(self, message: str, keys: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.keys = frozenset(keys)  # ``refusal_key`` of each refused line: the next run drops them, not fails


def refusal_key(line: str) -> str:
    """What identifies a refused line across runs (no text: a hash, so nothing of a rollout is kept by it)."""
    return hashlib.sha256(" ".join(markers.strip(line).split()).encode()).hexdigest()[:32]


def _refusal(line: str, source: Evidence | None) -> str:
    if source is None:
        return f"{line.strip()[:160]} (no statement of the user's supports it)"
    item = f"[item {source.marker.item}] " if source.marker is not None and source.marker.item else ""
    said = source.text.strip().lstrip("-*").strip()
    return f'{line.strip()[:160]} (its words come from {item}of rollout {source.thread[:8]}: "{said[:120]}")'


@dataclass(frozen=True)
class Evidence:
    """One Phase 1 statement: its words, its marker and its rollout."""

    words: frozenset[str]
    tokens: frozenset[str]
    marker: markers.Marker | None  # None: stored before statements had classes
    thread: str
    text: str = ""  # the statement without its marker: what a refusal names


def evidence_of(memories: Iterable[tuple[str, str]]) -> list[Evidence]:
    """The marked statements of ``(thread_id, text)`` pairs (raw memories and rollout summaries)."""
    out: list[Evidence] = []
    for thread, text in memories:
        lines = text.split("\n")
        for i in markers.statement_lines(text):
            marker = markers.parse(lines[i])
            body = markers.strip(lines[i])
            out.append(Evidence(frozenset(words(body)), frozenset(distinctive_tokens(body)), marker, thread, body))
    return out


def run_evidence(selected: Iterable[Stage1Output]) -> list[Evidence]:
    """The evidence of a Phase 2 run: the statements of its selected stage-1 outputs."""
    pairs: list[tuple[str, str]] = []
    for m in selected:
        pairs += [(m.thread_id, m.raw_memory), (m.thread_id, m.rollout_summary)]
    return evidence_of(pairs)


class EvidenceIndex:
    """The statements by word and by distinctive token, so a line is compared only with those sharing one (a run
    writes thousands of lines against thousands of statements)."""

    def __init__(self, evidence: list[Evidence]) -> None:
        self.evidence = evidence
        self.by_word: dict[str, list[int]] = defaultdict(list)
        self.by_token: dict[str, list[int]] = defaultdict(list)
        for i, ev in enumerate(evidence):
            for w in ev.words:
                self.by_word[w].append(i)
            for t in ev.tokens:
                self.by_token[t].append(i)
        # the few statements that can taint a line (tool output, flagged text): only these are walked one by one
        self.tainting = frozenset(
            i
            for i, ev in enumerate(evidence)
            if ev.marker is not None and (ev.marker.flag or ev.marker.trust == Trust.TOOL)
        )

    def shared(self, mine: set[str], tokens: set[str]) -> tuple[Counter[int], set[int]]:
        """(statement -> words shared with ``mine``, statements sharing a token)."""
        counts: Counter[int] = Counter()
        for w in mine:
            counts.update(self.by_word.get(w, ()))
        return counts, {i for t in tokens for i in self.by_token.get(t, ())}


def derive(line: str, evidence: list[Evidence] | EvidenceIndex) -> markers.Marker | None:
    """The marker a line the run wrote earns from the Phase 1 statements it repeats; None when it repeats one
    stored before statements had classes (its class is unknown: the line stays unmarked, and lint reports it)."""
    return derive_with_taint(line, evidence)[0]


def derive_with_taint(
    line: str, evidence: list[Evidence] | EvidenceIndex
) -> tuple[markers.Marker | None, Evidence | None]:
    """``derive``, and the tool or flagged statement that tainted the line (None: nothing did).

    A line whose source is the user's own statement is tainted only by what it holds beyond that statement: a
    tool output that merely shares the user's words (the user asked to follow a guide whose text the session
    read) supplies nothing the user did not say."""
    index = evidence if isinstance(evidence, EvidenceIndex) else EvidenceIndex(evidence)
    body = TASK_REF_SPACED.sub("", markers.strip(line))  # a [Task id] tag is structure, not words of a statement
    mine, tokens = words(body), distinctive_tokens(body)
    counts, token_ids = index.shared(mine, tokens)
    best: Evidence | None = None
    best_cov = 0.0
    if counts:  # the statement sharing most words; the first of equals (in the statements' order) wins
        top = max(counts.values())
        first = min(compress(counts.keys(), map(top.__eq__, counts.values())))  # C loops: counts can be huge
        best, best_cov = index.evidence[first], top / len(mine)
    users = best is not None and best_cov >= MATCH and best.marker is not None and best.marker.trust == Trust.USER
    beyond = mine - best.words if users and best is not None else mine
    taint: markers.Marker | None = None
    tainted_by: Evidence | None = None
    for i in sorted((counts.keys() | token_ids) & index.tainting):  # in order: the first flagged one wins
        ev = index.evidence[i]
        m = ev.marker
        if m is None:
            continue
        if users and best is not None:
            cov = len(ev.words & beyond) / len(mine) if mine else 0.0
            by_token = bool(ev.tokens & (tokens - best.tokens))
        else:
            cov, by_token = (counts[i] / len(mine) if mine else 0.0), i in token_ids
        if not (cov >= BEYOND_USER if users else cov >= TAINT) and not by_token:
            continue
        if taint is None or (m.flag and not taint.flag):
            taint, tainted_by = m, ev
    return marker_from(best, best_cov, taint, tainted_by.thread if tainted_by else ""), tainted_by


def marker_from(
    best: Evidence | None, best_cov: float, taint: markers.Marker | None, taint_thread: str
) -> markers.Marker | None:
    """A line's marker from its source (the statement sharing most of its words, and that share) and what taints it
    (the first flagged, else the first tool statement it repeats)."""
    if best is None or best_cov < MATCH:
        marker = markers.Marker(Trust.AGENT)
    elif best.marker is None:
        if taint is None:
            return None
        marker = markers.Marker(Trust.AGENT)
    else:
        marker = replace(best.marker, approved=False, thread=best.thread[:8] if best.marker.flag else None)
    if taint is not None:
        flagged = marker.flag is not None
        marker = replace(
            marker,
            trust=weaker(marker.trust, taint.trust),
            flag=marker.flag if flagged else taint.flag,
            item=marker.item if flagged else taint.item,
            thread=marker.thread if flagged else (taint_thread[:8] if taint.flag else None),
        )
    return marker


@dataclass
class FileTrust:
    text: str
    hidden: dict[int, int] = field(default_factory=dict)  # 1-based line -> hidden characters removed
    classes: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    upgrades: list[str] = field(default_factory=list)
    upgrade_keys: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # lines a previous run was refused for, left out of this one


def enforce_text(
    text: str, before: str | None, evidence: list[Evidence] | EvidenceIndex, refused: frozenset[str] = frozenset()
) -> FileTrust:
    """``text`` (a memory file the run wrote) with hidden characters removed and every new statement marked.

    A new line presenting a tool or agent statement as the user's is an upgrade (the run is refused, naming it and
    the statement it came from); the same line in a later run (its key in ``refused``) is left out instead, so one
    refusal never blocks every run after it."""
    evidence = evidence if isinstance(evidence, EvidenceIndex) else EvidenceIndex(evidence)
    lines = text.split("\n")
    out = FileTrust(text)
    old = set((before or "").split("\n"))
    for n, line in enumerate(lines):
        if line in old:
            continue  # a line the file held before the run: not the run's to clean
        clean = strip_hidden(line)
        if clean.removed:
            out.hidden[n + 1] = clean.removed
            lines[n] = clean.text
    kept = {markers.strip(ln): ln for ln in (before or "").split("\n") if markers.has_marker(ln)}
    statements = markers.statement_lines("\n".join(lines))
    drop: set[int] = set()
    for i in sorted(set(range(len(lines))) - set(statements)):
        # Not a statement (a heading, an index line): marked only when it repeats tool output or flagged text.
        if lines[i].strip() and lines[i] not in old:
            m = derive(lines[i], evidence)
            if m is not None and (m.flag or m.trust == Trust.TOOL):
                lines[i] = markers.set_marker(lines[i], m)
                out.classes[m.trust.value] += 1
                out.flagged += m.flag is not None
            elif markers.has_marker(lines[i]):
                lines[i] = markers.strip(lines[i])  # a marker only memtui may write
    for i in statements:
        line = lines[i]
        if line in old:
            continue  # the baseline's or a person's line: exactly as it was
        if (prior := kept.get(markers.strip(line))) is not None:
            lines[i] = prior  # the same statement as before: its marker (a person's approval too) stays
            continue
        marker, tainted_by = derive_with_taint(line, evidence)
        if marker is None:
            lines[i] = markers.strip(line)  # unknown class: no marker, and none the agent claimed
            continue
        if marker.trust != Trust.USER and markers.presents_as_user(line):
            if (key := refusal_key(line)) in refused:
                out.dropped.append(markers.strip(line).strip())
                drop.add(i)
                continue
            out.upgrades.append(_refusal(line, tainted_by))
            out.upgrade_keys.append(key)
        lines[i] = markers.set_marker(line, marker)
        out.classes[marker.trust.value] += 1
        out.flagged += marker.flag is not None
    out.text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return out


@dataclass
class RunTrust:
    """What enforcing trust did to a run, for its summary and its review."""

    hidden_removed: int = 0
    hidden: dict[str, dict[int, int]] = field(default_factory=dict)  # file -> line -> count
    classes: Counter[str] = field(default_factory=Counter)
    flagged: int = 0
    dropped: list[str] = field(default_factory=list)  # "file: line" a previous run was refused for

    def as_json(self) -> dict[str, object]:
        return {
            "hidden_removed": self.hidden_removed,
            "hidden": {f: {str(k): v for k, v in lines.items()} for f, lines in self.hidden.items()},
            "classes": dict(self.classes),
            "flagged": self.flagged,
            "dropped_refused": len(self.dropped),
        }


def is_memory_file(rel: str) -> bool:
    return rel in ("MEMORY.md", "memory_summary.md") or (rel.startswith("skills/") and rel.endswith(".md"))


def enforce_run(
    root: Path,
    pre: dict[str, object],
    post: dict[str, str | None],
    evidence: list[Evidence],
    write: Callable[[str, bytes], None],
    refused: frozenset[str] = frozenset(),
) -> RunTrust:
    """Mark and clean every memory file the run wrote (``pre``: their content before it, ``post``: the hash the
    run left). A file a person changed since the run wrote it is theirs and left alone. Raises ``TrustViolation``
    (nothing rewritten) when the run presents a tool or agent statement as the user's."""
    report = RunTrust()
    index = EvidenceIndex(evidence)
    results: dict[str, FileTrust] = {}
    upgrades: list[str] = []
    keys: list[str] = []
    for rel in sorted(pre):
        path = root / rel
        if not is_memory_file(rel) or not path.is_file():
            continue
        data = path.read_bytes()
        if rel in post and hashlib.sha256(data).hexdigest() != post[rel]:
            continue  # edited by a person while the run went on
        text = data.decode("utf-8", errors="replace")
        old = pre[rel]
        before = old if isinstance(old, str) else None
        result = enforce_text(text, before, index, refused)
        results[rel] = result
        upgrades += [f"{rel}: {u}" for u in result.upgrades]
        keys += result.upgrade_keys
    if upgrades:
        shown = "; ".join(u[:360] for u in upgrades[:MAX_REASONS])
        more = f" (and {len(upgrades) - MAX_REASONS} more)" if len(upgrades) > MAX_REASONS else ""
        raise TrustViolation(
            f"presents {len(upgrades)} statement(s) as the user's that only tool output or the agent's reasoning "
            f"supports: {shown}{more}; the next run leaves these lines out",
            keys,
        )
    for rel, result in results.items():
        if result.text != (root / rel).read_text(encoding="utf-8", errors="replace"):
            write(rel, result.text.encode("utf-8"))
        if result.hidden:
            report.hidden[rel] = result.hidden
            report.hidden_removed += sum(result.hidden.values())
        report.classes.update(result.classes)
        report.flagged += result.flagged
        report.dropped += [f"{rel}: {d}" for d in result.dropped]
    return report
