"""How each stage's cost grows with the home: 1k, 10k and 100k threads, as same-run ratios.

    .venv/bin/python benchmarks/scale.py [--sizes 1000,10000,100000] [--repeat 7] [--cache DIR] [--skip tui,review]

A home per size is built once with SQL into the real schema (threads, their stage-1 outputs, two indexed messages
each, the search index) and consolidated and approved once offline; it is cached under ``--cache`` (a folder in the
temp dir by default) and copied for each run, so a second run starts at the measurements. Timed per size:

- ``noop``: the no-change Phase 2 run (the fingerprint's shortcut), alternated with one ``git status`` of the same
  memory root (the ideal); goal under 4x at 100k threads.
- ``approve_run`` / ``after_approve``: a run bringing 256 new summaries, approved; then the first run after that
  approve (memory health's first look at the new blocks, the sync, git); goal under 10 s at 100k.
- ``health_first``: memory health computed from nothing (every block checked against the user messages); 10 s.
- ``index_build``: the search index (FTS5) built over every document of the home, as after an upgrade; 10 s.
- ``tui_first``: the TUI's first paint of Rollouts against a bare Textual app painting the same SQL
  (``benchmarks/tui.py``); goal within 1.5x at 100k.
- ``review_paint``: from pressing ``3`` to the Review screen painted with its first hunk, for a run awaiting review
  that brings 256 new summaries; goal under 1 s.

Each stage prints its cost, its ratio to the same run's ``git status`` (or bare app), and its growth from the
previous size. The last line is one JSON object of figures (name -> value) for ``benchmarks/compare.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from figures import Figure, code_root, emit

ROOT = Path(__file__).resolve().parent
CODE = code_root()

NOW = 1_783_684_800
NEW_RUN = 256  # summaries a run brings (the default max_raw_memories_for_consolidation)
CACHE_VERSION = "v1"
GOALS = {"noop_vs_git": 4.0, "after_approve_s": 10.0, "health_first_s": 10.0, "index_build_s": 10.0}
PROJECTS = [f"/work/proj{i}" for i in range(40)]


def _words(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(10_000)})
    rng.shuffle(words)
    words = words[:5_000]
    return words, [1 / (rank + 1) ** 1.05 for rank in range(len(words))]


class Corpus:
    """Zipf-distributed words, as in prose (``benchmarks/search.py``), from a fixed seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words, self.weights = _words(self.rng)

    def sentence(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=n))


def tid(i: int, series: int = 0x8123) -> str:
    return f"0194f5a6-89ab-7cde-{series:04x}-{i:012x}"


def insert_threads(conn: Any, corpus: Corpus, ids: list[int], *, series: int, newest: int, summary_words: int) -> None:
    """Threads, their stage-1 outputs and two indexed user/assistant messages each, in a few statements (the
    triggers then write one FTS segment per statement, as ingest's batches do)."""
    threads, outputs, docs, stamps = [], [], [], []
    for k, i in enumerate(ids):
        t, cwd = tid(i, series), PROJECTS[i % len(PROJECTS)]
        updated = newest - k * 7
        path = f"/rollouts/{t}.jsonl"
        threads.append([t, path, cwd, updated - 600, updated, f"task {i}: {corpus.sentence(6)}", 4000, NOW])
        raw = f"- {corpus.sentence(10)}\n- always run {corpus.sentence(2)} before {corpus.sentence(2)}"
        summary = f"# Session {i}\n" + "\n".join(corpus.sentence(12) for _ in range(summary_words // 12))
        outputs.append([t, updated - 60, raw, summary, f"task_{i}", NOW])
        docs += [[t, 1, "user", cwd, corpus.sentence(25)], [t, 3, "assistant", cwd, corpus.sentence(25)]]
        stamps.append([f"thread:{t}", f"4000:{updated}:{path}"])
    conn.execute("BEGIN")
    conn.execute(
        "INSERT INTO threads (id, source_kind, path, cwd, session_source, created_at, updated_at, preview, bytes,"
        " ingested_at) SELECT value->>0, 'codex', value->>1, value->>2, 'cli', value->>3, value->>4, value->>5,"
        " value->>6, value->>7 FROM json_each(?)",
        (json.dumps(threads),),
    )
    conn.execute(
        "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug,"
        " generated_at) SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5 FROM json_each(?)",
        (json.dumps(outputs),),
    )
    conn.execute(
        "INSERT INTO search_docs (kind, source, loc, role, project, text) SELECT 'message', value->>0, value->>1,"
        " value->>2, value->>3, value->>4 FROM json_each(?)",
        (json.dumps(docs),),
    )
    conn.execute(
        "INSERT OR REPLACE INTO search_sources (key, stamp) SELECT value->>0, value->>1 FROM json_each(?)",
        (json.dumps(stamps),),
    )
    conn.execute("COMMIT")


def _env(home: Path) -> None:
    os.environ.update({"MEMTUI_HOME": str(home), "HOME": str(home.parent / "user")})
    for name in [k for k in os.environ if k.startswith("OPENAI_")]:
        del os.environ[name]


def build(cache: Path, n: int) -> tuple[Path, dict[str, float]]:
    """The cached home of ``n`` threads, consolidated and approved once; built when missing."""
    home = cache / f"{CACHE_VERSION}-{n}" / "home"
    done = home.parent / "built.json"
    if done.exists():
        return home, json.loads(done.read_text())
    shutil.rmtree(home.parent, ignore_errors=True)
    home.mkdir(parents=True)
    _env(home)
    from memtui.core import clock
    from memtui.services.context import open_context
    from memtui.services.phase2.consolidate import run_phase2
    from memtui.services.search import ensure_index

    clock.freeze(NOW)
    ctx = open_context(home=home)
    t0 = time.perf_counter()
    corpus = Corpus(35)
    for start in range(0, n, 20_000):
        insert_threads(
            ctx.conn,
            corpus,
            list(range(start, min(n, start + 20_000))),
            series=0x8123,
            newest=NOW - 3600 - start * 7,
            summary_words=60,
        )
    rows = time.perf_counter() - t0
    t0 = time.perf_counter()
    ensure_index(ctx.conn)
    index = time.perf_counter() - t0
    t0 = time.perf_counter()
    first = run_phase2(ctx, offline=True, auto_approve=True)
    assert first.outcome == "approved", first
    seconds = time.perf_counter() - t0
    ctx.close()
    clock.reset()
    figures = {"rows_s": rows, "index_s": index, "first_run_s": seconds}
    done.write_text(json.dumps(figures))
    return home, figures


def copy_home(cached: Path, work: Path) -> Path:
    home = work / "home"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(cached, home, symlinks=True)
    (work / "user").mkdir(exist_ok=True)
    return home


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def git_status(root: Path) -> None:
    from memtui.adapters.memroot.baseline import _env as git_env

    subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, env={**os.environ, **git_env(root)}, check=True, capture_output=True
    )


def measure_size(n: int, cached: Path, work: Path, args: argparse.Namespace) -> dict[str, float]:
    home = copy_home(cached, work)
    _env(home)
    from memtui.core import clock
    from memtui.services.context import open_context
    from memtui.services.health.signals import compute_health
    from memtui.services.phase2 import unchanged
    from memtui.services.phase2.consolidate import run_phase2
    from memtui.services.search import search
    from memtui.state import search_index

    clock.freeze(NOW)
    ctx = open_context(home=home)
    root = ctx.paths.memory_root
    out: dict[str, float] = {}

    # warm up: the copy moved every inode, so the first run (and git's index) see new stats
    run_phase2(ctx, offline=True, force=True)
    git_status(root)
    noop, git, short = [], [], 0
    for _ in range(args.repeat):  # alternated, so a loaded machine slows both alike
        said: list[str] = []
        t = time.perf_counter()
        r = run_phase2(ctx, offline=True, force=True, progress=said.append)
        noop.append(time.perf_counter() - t)
        assert r.outcome == "no_changes", r
        short += unchanged.SAID in said
        t = time.perf_counter()
        git_status(root)
        git.append(time.perf_counter() - t)
    out["git_status_ms"] = statistics.median(git) * 1000
    out["noop_ms"] = statistics.median(noop) * 1000
    out["noop_vs_git"] = out["noop_ms"] / out["git_status_ms"]
    out["noop_short_share"] = short / args.repeat

    # a run bringing 256 new summaries, approved; then the first run after that approve
    corpus = Corpus(1000 + n)
    insert_threads(ctx.conn, corpus, list(range(NEW_RUN)), series=0x9000, newest=NOW - 60, summary_words=60)
    t = time.perf_counter()
    r = run_phase2(ctx, offline=True, force=True, auto_approve=True)
    out["approve_run_s"] = time.perf_counter() - t
    assert r.outcome == "approved", r
    t = time.perf_counter()
    r = run_phase2(ctx, offline=True, force=True)
    out["after_approve_s"] = time.perf_counter() - t
    assert r.outcome == "no_changes", r
    out["after_approve_vs_git"] = out["after_approve_s"] * 1000 / out["git_status_ms"]

    # memory health from nothing: every block of the approved memory against the user messages
    fts = median_time(lambda: search(ctx.conn, f"{corpus.words[40]} {corpus.words[300]}"), args.repeat)
    with ctx.conn:
        ctx.conn.execute("DELETE FROM health_findings")
        ctx.conn.execute("DELETE FROM health_blocks")
        ctx.conn.execute("DELETE FROM meta WHERE key LIKE 'health.%'")
    t = time.perf_counter()
    report = compute_health(ctx.conn, root, refresh=False)
    out["health_first_s"] = time.perf_counter() - t
    out["health_blocks"] = report.scanned_blocks
    out["health_first_vs_fts"] = out["health_first_s"] / fts

    # the search index over every document, as after an upgrade that rebuilds it
    docs = ctx.conn.execute("SELECT COUNT(*) FROM search_docs").fetchone()[0]
    ctx.conn.executescript(
        f"DROP TRIGGER IF EXISTS {search_index.DOCS}_ai; DROP TRIGGER IF EXISTS {search_index.DOCS}_ad;"
        f" DROP TRIGGER IF EXISTS {search_index.DOCS}_au; DROP TABLE IF EXISTS {search_index.FTS};"
    )
    t = time.perf_counter()
    search_index.ensure_index(ctx.conn)
    out["index_build_s"] = time.perf_counter() - t
    out["index_docs"] = docs
    ctx.close()

    if "tui" not in args.skip:
        out.update(tui_first(home, args.repeat))
    if "review" not in args.skip:
        out.update(review_paint(home, n))
    clock.reset()
    return out


def tui_first(home: Path, repeat: int) -> dict[str, float]:
    from tui import bare_costs, measure

    firsts = []
    for _ in range(max(1, repeat // 2)):
        first, _t, _c = asyncio.run(measure(home, [], 0))
        firsts.append(first)
    bare, _m, _c = asyncio.run(bare_costs(home, [], max(1, repeat // 2)))
    first = statistics.median(firsts)
    return {"tui_first_ms": first * 1000, "tui_bare_ms": bare * 1000, "tui_first_vs_bare": first / bare}


def review_paint(home: Path, n: int) -> dict[str, float]:
    """A run awaiting review that brings 256 new summaries; then the TUI from pressing ``3`` to its first hunk."""
    from memtui.services.context import open_context
    from memtui.services.phase2.consolidate import run_phase2

    ctx = open_context(home=home)
    insert_threads(ctx.conn, Corpus(2000 + n), list(range(NEW_RUN)), series=0x9100, newest=NOW - 30, summary_words=264)
    r = run_phase2(ctx, offline=True, force=True)
    assert r.outcome == "awaiting_review", r
    diff = len(ctx.conn.execute("SELECT diff FROM phase2_runs WHERE id=?", (r.run_id,)).fetchone()[0] or "")
    ctx.close()
    seconds = asyncio.run(_review_paint(home))
    return {"review_paint_ms": seconds * 1000, "review_diff_kb": diff / 1000}


async def _review_paint(home: Path) -> float:
    from textual import events

    from memtui.tui.app import make_app
    from memtui.tui.screens.review import ReviewScreen

    app = make_app(home=home, ingest_on_start=False, status_refresh=False, cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        t = time.perf_counter()
        app.post_message(events.Key("3", "3"))  # not pilot.press: it waits until the app is idle
        while True:  # the first hunk laid out on screen (its region known): the paint comes with that refresh
            screen = app.screen
            if (
                isinstance(screen, ReviewScreen)
                and screen.is_mounted
                and (hunks := screen.diff.hunks)
                and hunks[0].region.height
            ):
                break
            await asyncio.sleep(0.005)
        return time.perf_counter() - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated thread counts")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(  # one per measured checkout: a home is built into the schema of the code that built it
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir())
        / f"memtui-bench-scale-{hashlib.sha256(str(CODE.resolve()).encode()).hexdigest()[:8]}",
    )
    parser.add_argument("--skip", default="", help="comma-separated stages to leave out: tui, review")
    args = parser.parse_args()
    args.skip = set(filter(None, args.skip.split(",")))
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    figures: dict[str, float] = {}
    previous: dict[str, float] | None = None
    work = Path(tempfile.mkdtemp(prefix="memtui-bench-scale-run-"))
    try:
        for n in sizes:
            cached, built = build(args.cache, n)
            got = measure_size(n, cached, work / str(n), args)
            print(
                f"\n{n:,} threads (home built in {built['rows_s']:.1f} s + index {built['index_s']:.1f} s"
                f" + first run {built['first_run_s']:.1f} s; cached in {cached.parent})"
            )
            report(got, previous)
            figures.update({f"scale.{n}.{k}": round(v, 4) for k, v in got.items()})
            previous = got
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    emit("scale", {k: Figure(v, *_kind(k)) for k, v in figures.items()})
    return 0


def _kind(key: str) -> tuple[str, Literal["lower", "higher", "none"]]:
    """A figure's unit and direction from its name: times and ratios to the ideal lower; counts are context."""
    stage = key.rsplit(".", 1)[-1]
    if stage.startswith(("git_status", "tui_bare")) or stage in ("health_blocks", "index_docs", "review_diff_kb"):
        return ("ms" if stage.endswith("_ms") else ""), "none"
    if stage.endswith("_share"):
        return "", "higher"
    if "_vs_" in stage:
        return "x ideal", "lower"
    return ("ms" if stage.endswith("_ms") else "s"), "lower"


def report(got: dict[str, float], previous: dict[str, float] | None) -> None:
    def growth(key: str) -> str:
        if previous is None or not previous.get(key):
            return ""
        return f"  growth x{got[key] / previous[key]:.1f}"

    def goal(key: str) -> str:
        return "" if key not in GOALS else ("  ok" if got[key] < GOALS[key] else f"  OVER (goal < {GOALS[key]})")

    print(f"  git status (ideal)        {got['git_status_ms']:8.1f} ms{growth('git_status_ms')}")
    print(
        f"  no-change Phase 2         {got['noop_ms']:8.1f} ms  {got['noop_vs_git']:.1f}x git status"
        f" ({got['noop_short_share']:.0%} by the fingerprint){growth('noop_ms')}{goal('noop_vs_git')}"
    )
    print(f"  run with 256 new + approve{got['approve_run_s']:8.2f} s{growth('approve_run_s')}")
    print(
        f"  first run after approve   {got['after_approve_s']:8.2f} s  {got['after_approve_vs_git']:.0f}x git status"
        f"{growth('after_approve_s')}{goal('after_approve_s')}"
    )
    print(
        f"  health first look         {got['health_first_s']:8.2f} s  {got['health_blocks']:.0f} blocks,"
        f" {got['health_first_vs_fts']:.0f}x one search{growth('health_first_s')}{goal('health_first_s')}"
    )
    print(
        f"  search index build        {got['index_build_s']:8.2f} s  {got['index_docs']:.0f} documents"
        f"{growth('index_build_s')}{goal('index_build_s')}"
    )
    if "tui_first_ms" in got:
        print(
            f"  TUI first paint           {got['tui_first_ms']:8.0f} ms  {got['tui_first_vs_bare']:.2f}x bare app"
            f" ({got['tui_bare_ms']:.0f} ms){growth('tui_first_ms')}"
        )
    if "review_paint_ms" in got:
        print(
            f"  Review screen painted     {got['review_paint_ms']:8.0f} ms  ({got['review_diff_kb']:.0f} KB of diff)"
            f"{growth('review_paint_ms')}"
        )


if __name__ == "__main__":
    sys.exit(main())
