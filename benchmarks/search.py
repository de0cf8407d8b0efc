"""Full-text search over 100,000 threads: each with a rollout summary, a raw memory and two indexed messages.

    .venv/bin/python benchmarks/search.py [--threads 100000] [--repeat 7]

Builds a throwaway MEMTUI_HOME, inserts threads and stage-1 rows with SQL (the stage-1 triggers add the summary and
raw-memory documents), message documents as refresh() would store them (Zipf-distributed words), then times ``memtui.services.search.search`` (bm25,
top 20, with file/line or thread/item resolution) for rare, common and multi-word queries, with and without
``--project``. Target: under 100 ms each. "unranked" is the same FTS5 match returning 20 rowids without bm25, measured
in the same run; the ratio is what ranking, the candidate bound and line/snippet resolution cost on top of it.
"""

from __future__ import annotations

import argparse
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
VOCABULARY = 5_000  # Zipf-distributed words, as in prose: a few in most documents, most in few


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(VOCABULARY * 2)})
    rng.shuffle(words)
    words = words[:VOCABULARY]
    return words, [1 / (rank + 1) ** 1.05 for rank in range(len(words))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the home here once and reuse it on later runs")
    args = parser.parse_args()
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="memtui-bench-search-"))
    reuse = args.keep is not None and (tmp / "home" / "state.sqlite").exists()
    os.environ.update({"MEMTUI_HOME": str(tmp / "home"), "HOME": str(tmp / "user")})

    from memtui.services.context import open_context
    from memtui.services.search import ensure_index, fts_query, scope_query, search
    from memtui.state.search_index import FTS

    rng = random.Random(14)
    ctx = open_context()
    conn = ctx.conn
    now = 1_783_684_800

    words, weights = vocabulary(rng)

    def sentence(n: int) -> str:
        return " ".join(rng.choices(words, weights, k=n))

    t0 = time.perf_counter()
    conn.execute("BEGIN")
    for i in range(0 if reuse else args.threads):
        tid = f"0194f5a6-89ab-7cde-8123-{i:012x}"
        cwd = f"/work/proj{i % 50}"
        conn.execute(
            "INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, ingested_at)"
            " VALUES (?, 'codex', ?, ?, 'cli', ?, ?)",
            (tid, f"/rollouts/{tid}.jsonl", cwd, now - i, now),
        )
        rare = " zqmarker" if i % 1000 == 0 else ""  # 100 documents hold a rare word
        conn.execute(
            "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug,"
            " generated_at) VALUES (?, ?, ?, ?, ?, ?)",
            (tid, now - i, f"- {sentence(20)}", f"# Session {i}\n{sentence(25)}{rare}\n{sentence(15)}", "s", now),
        )
        conn.executemany(
            "INSERT INTO search_docs (kind, source, loc, role, project, text) VALUES ('message', ?, ?, ?, ?, ?)",
            [(tid, n, "user" if n % 2 else "assistant", cwd, sentence(25)) for n in (1, 2)],
        )
    conn.execute("COMMIT")
    ensure_index(conn)  # one bulk build, as after the migration of an existing home; later writes go through triggers
    build = time.perf_counter() - t0
    docs = conn.execute("SELECT COUNT(*) FROM search_docs").fetchone()[0]
    size = ctx.paths.state_db.stat().st_size
    threads = conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0]
    what = "reused" if reuse else f"built in {build:.1f} s:"
    print(f"{what} {threads:,} threads, {docs:,} documents; database {size / 1e6:.0f} MB")

    def share(word: str) -> str:
        n = conn.execute("SELECT COUNT(*) FROM search_docs_fts WHERE search_docs_fts MATCH ?", (f'"{word}"',))
        return f"{n.fetchone()[0] / docs:.1%}"

    top, mid, low = words[0], words[60], words[1500]
    cases = [
        ("rare word (100 docs)", "zqmarker", None),
        (f"word in {share(low)} of docs", low, None),
        (f"word in {share(mid)} of docs", mid, None),
        (f"word in {share(top)} of docs", top, None),
        ("two words", f"{mid} {low}", None),
        ("three frequent words", " ".join(words[:3]), None),
        (f"word in {share(mid)}, --project", mid, Path("/work/proj7")),
        (f"word in {share(top)}, --project", top, Path("/work/proj7")),
        ("no match", "kumquatx", None),
    ]

    def unranked(query: str, project: Path | None) -> None:
        match = fts_query(query) + (f" AND {scope_query(project)}" if project else "")
        conn.execute(f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH ? ORDER BY rowid DESC LIMIT 20", (match,)).fetchall()

    def median_ms(fn) -> tuple[float, float]:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1000)
        return statistics.median(times), max(times)

    results = []
    for label, query, project in cases:
        hits = search(conn, query, project=project, limit=20)
        med, mx = median_ms(lambda q=query, p=project: search(conn, q, project=p, limit=20))
        base, _ = median_ms(lambda q=query, p=project: unranked(q, p))
        results.append((label, med, mx, len(hits), base))
    worst = 0.0
    print(f"{'query':<28} {'median ms':>10} {'max ms':>8} {'hits':>5} {'unranked ms':>12} {'ratio':>6}")
    for label, med, mx, n, base in results:
        worst = max(worst, med)
        print(f"{label:<28} {med:>10.1f} {mx:>8.1f} {n:>5} {base:>12.2f} {med / max(base, 0.01):>6.1f}")
    verdict = "OK" if worst < 100 else "OVER"
    print(f"slowest median {worst:.1f} ms over {threads:,} threads: {verdict} (target < 100 ms)")
    emit(
        "search",
        {
            "slowest_query_ms": Figure(round(worst, 2), "ms"),
            "median_query_ms": Figure(round(statistics.median(r[1] for r in results), 2), "ms"),
            "unranked_median_ms": Figure(round(statistics.median(r[4] for r in results), 2), "ms", "none"),
        },
    )
    ctx.close()
    if args.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if worst < 100 else 1


if __name__ == "__main__":
    sys.exit(main())
