"""Memory health: precision and recall of the offline rules, and the cost of computing health over many threads.

    .venv/bin/python benchmarks/health.py [--threads 100000] [--blocks 40] [--repeat 5] [--json]

1. Quality, on the held-out ``tests/fixtures/health_eval.py`` (never used to tune the rules; the tuning set is
   printed too, for contrast): precision and recall for restated and for contradicted. Goal offline: precision
   >= 0.9 and recall >= 0.7 for both.
2. Cost, on a throwaway home: ``--threads`` interactive threads with two indexed user messages each (Zipf words,
   as ``benchmarks/search.py`` writes them; one thread in 500 restates or contradicts a block), an approved
   MEMORY.md of ``--blocks`` preference lines. Timed: the first computation (every block checked against its FTS
   candidates), and the update after one new session (only its messages are read). Both are printed as ratios
   against the same run's FTS query cost (``memtui.services.search.search`` for two words, bm25 top 20); the update must
   stay under 1 s.

Exit status 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from figures import Figure, code_root, emit

code_root()

from memtui.services.health.rules import relate  # noqa: E402
from tests.fixtures.health_eval import EVAL_SET  # noqa: E402
from tests.fixtures.health_tuning import TUNING_SET  # noqa: E402

PRECISION_GOAL, RECALL_GOAL = 0.9, 0.7
UPDATE_LIMIT_SECONDS = 1.0
DAY = 86_400


def quality(cases: list[tuple[str, str, str | None]]) -> dict[str, dict[str, float | int]]:
    out: dict[str, dict[str, float | int]] = {}
    got = [(label, (r.value if (r := relate(block, sentence)) else None)) for block, sentence, label in cases]
    for relation in ("restated", "contradicted"):
        tp = sum(1 for want, have in got if want == have == relation)
        fp = sum(1 for want, have in got if have == relation and want != relation)
        fn = sum(1 for want, have in got if want == relation and have != relation)
        out[relation] = {
            "labelled": tp + fn,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
            "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
        }
    return out


def scale(threads: int, blocks: int, repeat: int) -> dict[str, float | int]:
    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-health-"))
    os.environ.update({"MEMTUI_HOME": str(tmp / "home"), "HOME": str(tmp / "user")})
    try:
        return _scale(tmp, threads, blocks, repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scale(tmp: Path, threads: int, n_blocks: int, repeat: int) -> dict[str, float | int]:
    from memtui.adapters.memroot import baseline
    from memtui.core import clock
    from memtui.services import history
    from memtui.services.context import open_context
    from memtui.services.health.signals import compute_health
    from memtui.services.search import ensure_index, search

    rng = random.Random(25)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = list(dict.fromkeys("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(10_000)))
    words = words[:5_000]
    weights = [1 / (rank + 1) ** 1.05 for rank in range(len(words))]
    now = 1_783_684_800
    approved = now - 30 * DAY
    clock.freeze(now)
    ctx = open_context()
    conn, root = ctx.conn, ctx.paths.memory_root
    days = ["mondays", "tuesdays", "wednesdays", "thursdays", "fridays"]
    rules = []
    for i in range(n_blocks):
        a, b = f"{words[200 + 3 * i]} {words[201 + 3 * i]}", words[202 + 3 * i]
        rules.append((a, b, days[i % 5], days[(i + 2) % 5]))
    lines = ["# Task Group: /work/proj0", "scope: bench", "applies_to: cwd=/work/proj0; reuse_rule=bench", ""]
    lines += ["## Task 1: bench", "", "### rollout_summary_files", "- rollout_summaries/x.md (thread_id=bench)", ""]
    lines += ["## User preferences"]
    lines += [
        f'- the user said: "We always ship the {a} {b} on {d}." [item 1] -> follow this [Task 1]'
        for a, b, d, _ in rules
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
    with clock.frozen(approved):
        commit = baseline.ensure_baseline(root)
        history.record_decision(conn, "manual_commit", files_in=["MEMORY.md"], commit=commit)

    def said(i: int) -> str:
        if i % 500 == 0:
            a, b, d, other = rules[(i // 500) % len(rules)]
            return f"From now on we ship the {a} {b} on {other}." if i % 1000 else f"Always ship the {a} {b} on {d}."
        return " ".join(rng.choices(words, weights, k=25))

    t0 = time.perf_counter()
    conn.execute("BEGIN")
    for i in range(threads):
        tid = f"0194f5a6-89ab-7cde-8123-{i:012x}"
        cwd = f"/work/proj{i % 50}"
        started = approved + 60 + i * 20
        conn.execute(
            "INSERT INTO threads (id, source_kind, path, cwd, session_source, created_at, updated_at, ingested_at)"
            " VALUES (?, 'codex', ?, ?, 'cli', ?, ?, ?)",
            (tid, f"/rollouts/{tid}.jsonl", cwd, started, started + 600, now),
        )
        conn.executemany(
            "INSERT INTO search_docs (kind, source, loc, role, project, text) VALUES ('message', ?, ?, 'user', ?, ?)",
            [(tid, 1, cwd, said(i)), (tid, 3, cwd, " ".join(rng.choices(words, weights, k=25)))],
        )
    conn.execute("COMMIT")
    ensure_index(conn)
    build = time.perf_counter() - t0

    def timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        value = fn()
        return time.perf_counter() - t, value

    queries = [f"{a} {b}" for a, b, _, _ in rules[:repeat]]
    fts = statistics.median(timed(lambda q=q: search(conn, q))[0] for q in queries)
    first, report = timed(lambda: compute_health(conn, root, refresh=False))
    found = sum(len(b.restated) + len(b.contradicted) for b in report.blocks)  # type: ignore[attr-defined]
    updates = []
    for k in range(repeat):
        tid = f"0194f5a6-89ab-7cde-9999-{k:012x}"
        a, b, _, other = rules[k]
        conn.execute(
            "INSERT INTO threads (id, source_kind, path, cwd, session_source, created_at, updated_at, ingested_at)"
            " VALUES (?, 'codex', ?, '/work/proj0', 'cli', ?, ?, ?)",
            (tid, f"/rollouts/{tid}.jsonl", now - 100 + k, now - 50 + k, now),
        )
        conn.executemany(
            "INSERT INTO search_docs (kind, source, loc, role, project, text) VALUES ('message', ?, ?, 'user', ?, ?)",
            [
                (tid, 1, "/work/proj0", f"From now on we ship the {a} {b} on {other}."),
                (tid, 3, "/work/proj0", "Thanks."),
            ],
        )
        conn.commit()
        seconds, after = timed(lambda: compute_health(conn, root, refresh=False))
        assert after.scanned_messages == 2 and after.scanned_blocks == 0, after  # type: ignore[attr-defined]
        updates.append(seconds)
    update = statistics.median(updates)
    ctx.close()
    clock.reset()
    return {
        "threads": threads,
        "blocks": n_blocks,
        "findings_first": found,
        "planted": len(range(0, threads, 500)),
        "build_seconds": round(build, 1),
        "fts_query_seconds": round(fts, 4),
        "first_seconds": round(first, 3),
        "update_seconds": round(update, 4),
        "first_vs_fts": round(first / fts, 1),
        "update_vs_fts": round(update / fts, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    held_out = quality(EVAL_SET)
    tuning = quality(TUNING_SET)
    cost = scale(args.threads, args.blocks, args.repeat)
    ok = (
        all(q["precision"] >= PRECISION_GOAL and q["recall"] >= RECALL_GOAL for q in held_out.values())
        and cost["update_seconds"] < UPDATE_LIMIT_SECONDS
    )
    if args.json:
        print(json.dumps({"held_out": held_out, "tuning": tuning, "cost": cost, "ok": ok}, indent=2))
        return 0 if ok else 1
    for name, q in (("held-out", held_out), ("tuning", tuning)):
        for relation, m in q.items():
            print(
                f"{name:<8} {relation:<12} precision {m['precision']:.2f} recall {m['recall']:.2f}"
                f"  ({m['labelled']} labelled: {m['tp']} found, {m['fp']} wrong, {m['fn']} missed)"
            )
    print(
        f"{cost['threads']:,} threads, {cost['blocks']} blocks: FTS query {cost['fts_query_seconds'] * 1000:.1f} ms;"
        f" first computation {cost['first_seconds']:.2f} s ({cost['first_vs_fts']}x the query,"
        f" {cost['findings_first']} findings of {cost['planted']} planted); update after one new session {cost['update_seconds'] * 1000:.0f} ms"
        f" ({cost['update_vs_fts']}x the query; limit {UPDATE_LIMIT_SECONDS:.0f} s)"
    )
    print("goals met" if ok else "goal missed (precision >= 0.9, recall >= 0.7 held out; update < 1 s)")
    quality_figures = {
        f"held_out_{relation}_{m}": Figure(float(q[m]), "", "higher")
        for relation, q in held_out.items()
        for m in ("precision", "recall")
    }
    emit(
        "health",
        {
            "first_s": Figure(float(cost["first_seconds"]), "s"),
            "update_ms": Figure(round(float(cost["update_seconds"]) * 1000, 2), "ms"),
            "fts_query_ms": Figure(round(float(cost["fts_query_seconds"]) * 1000, 2), "ms", "none"),
            **quality_figures,
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
