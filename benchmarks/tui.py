"""TUI benchmark (headless): launch to first paint of the Rollouts screen, and applying a filter.

Builds a home with N indexed threads (inserted in one statement; a tenth with stage-1 jobs and outputs), then
runs the app headless at 120x36 and times, in one process:
  - launch -> first paint: from constructing the app to the first window of rows painted;
  - filter: from setting the filter text to the filtered window painted (substring, status:, no match).

    .venv/bin/python benchmarks/tui.py                 # 10,000 and 100,000 threads
    .venv/bin/python benchmarks/tui.py --sizes 20000

Targets: first paint < 300 ms and a filter median < 100 ms at 100k threads. Each is also printed as a ratio to the
same run's bare cost, which a loaded machine slows alike: first paint against a bare Textual app that runs the same
first-window SQL and paints it in a plain DataTable; a filter against the same filter's SQL (a 100-row window +
count) plus filling and painting a plain DataTable with the window (a full page reload). A filter's CPU time (the
process's own work, count included, which other processes do not stretch) is printed against the bare reload's too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from figures import Figure, code_root, emit

ROOT = Path(__file__).resolve().parent
code_root()

from memtui.services.context import open_context  # noqa: E402

PROJECTS = ["shop-api", "infra", "docs-site", "mobile", "dotfiles", "data-pipeline", "web", "ml-notebooks"]
NOW = 1_783_684_800


def build_home(home: Path, n: int) -> float:
    started = time.perf_counter()
    ctx = open_context(home=home)
    conn = ctx.conn
    rows = []
    for i in range(n):
        project = PROJECTS[i % len(PROJECTS)]
        rows.append(
            (
                f"019e{i:08x}-0000-7000-8000-{i:012x}",
                "codex" if i % 5 else "claude",
                f"/home/ana/.codex/sessions/2026/07/rollout-{i}.jsonl",
                f"/home/ana/src/{project}",
                "cli" if i % 7 else "exec",
                NOW - i * 37,
                f"Session {i} about {project}: fix the flaky test number {i % 97}",
                1000 + (i * 7919) % 500_000,
                NOW,
            )
        )
    conn.execute("BEGIN")
    # one statement, as ingest writes a batch: the filter index's triggers then write one FTS5 segment, not one per row
    conn.execute(
        """INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, preview, bytes, ingested_at)
           SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6,
                  value ->> 7, value ->> 8 FROM json_each(?)""",
        (json.dumps(rows),),
    )
    tenth = rows[::10]
    conn.executemany(
        "INSERT INTO jobs (kind, job_key, status, retry_remaining, input_watermark) VALUES "
        "('memory_stage1', ?, ?, 3, ?)",
        [(r[0], "done" if j % 4 else "error", r[5]) for j, r in enumerate(tenth)],
    )
    conn.executemany(
        "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, generated_at,"
        " usage_count) VALUES (?, ?, '- a memory', '# summary', ?, ?)",
        [(r[0], r[5], NOW, j % 5) for j, r in enumerate(tenth) if j % 4],
    )
    conn.execute("COMMIT")
    ctx.close()
    return time.perf_counter() - started


async def measure(
    home: Path, filters: list[str], repeats: int
) -> tuple[float, dict[str, list[float]], dict[str, list[float]]]:
    from memtui.tui.app import make_app
    from memtui.tui.screens.rollouts import RolloutsScreen
    from memtui.tui.widgets.windowed_table import WindowedTable

    async def wait_loads(screen: RolloutsScreen, target: int, pilot) -> None:
        while screen.loads < target:
            await asyncio.sleep(0.001)
        await pilot.pause()  # the refresh that paints the new rows

    started = time.perf_counter()
    app = make_app(home=home, ingest_on_start=False, status_refresh=False, cursor_blink=False)
    timings: dict[str, list[float]] = {f: [] for f in filters}
    cpu: dict[str, list[float]] = {f: [] for f in filters}
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, RolloutsScreen)
        await wait_loads(screen, 1, pilot)
        first_paint = time.perf_counter() - started
        assert screen.query_one(WindowedTable).row_count > 0
        for _ in range(repeats):
            for text in filters:
                for value in (text, ""):
                    await pilot.pause()  # the previous load's count finished: nothing else runs
                    loads = screen.loads
                    t0, c0 = time.perf_counter(), time.process_time()
                    screen.query_one("#filter").value = value
                    await wait_loads(screen, loads + 1, pilot)
                    if value:
                        timings[text].append(time.perf_counter() - t0)
                        cpu[text].append(time.process_time() - c0)
    return first_paint, timings, cpu


async def bare_costs(home: Path, filters: list[str], repeats: int) -> tuple[float, dict[str, float], dict[str, float]]:
    """The floor under memtui's numbers: a plain DataTable app fed by the same SQL (medians, seconds; wall clock,
    then CPU time: the process's work, which other processes on a loaded machine do not stretch)."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    from memtui.services import views
    from memtui.tui.screens.rollouts import COLUMNS, row_cells
    from memtui.tui.widgets.windowed_table import WindowedTable

    window = WindowedTable.WINDOW
    keys = [c.key for c in COLUMNS]

    def fetch(text: str) -> list:
        conn = open_context(home=home).new_conn()
        try:
            rows = views.rollout_rows(conn, text, "updated", True, 0, window)
            views.count_rollouts(conn, text)
        finally:
            conn.close()
        return rows

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield DataTable()

        def fill(self, rows: list) -> None:
            table = self.query_one(DataTable)
            table.clear()
            for r in rows:
                cells = row_cells(r)
                table.add_row(*[cells[k] for k in keys], key=r.id)

    firsts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        app = Bare()
        async with app.run_test(size=(120, 36)) as pilot:
            table = app.query_one(DataTable)
            for c in COLUMNS:
                table.add_column(c.title, key=c.key, width=c.width)
            app.fill(fetch(""))
            await pilot.pause()
            firsts.append(time.perf_counter() - t0)
    per_filter: dict[str, list[float]] = {f: [] for f in filters}
    per_filter_cpu: dict[str, list[float]] = {f: [] for f in filters}
    app = Bare()
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.query_one(DataTable)
        for c in COLUMNS:
            table.add_column(c.title, key=c.key, width=c.width)
        for _ in range(repeats):
            for text in filters:
                await pilot.pause()
                t0, c0 = time.perf_counter(), time.process_time()
                app.fill(fetch(text))
                await pilot.pause()
                per_filter[text].append(time.perf_counter() - t0)
                per_filter_cpu[text].append(time.process_time() - c0)
    medians = {f: statistics.median(v) for f, v in per_filter.items()}
    return statistics.median(firsts), medians, {f: statistics.median(v) for f, v in per_filter_cpu.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description="memtui TUI benchmark")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    t0 = time.perf_counter()
    import memtui.tui.app  # noqa: F401  (import cost reported separately from launch)

    print(f"import memtui.tui.app: {time.perf_counter() - t0:.2f} s")
    filters = ["shop-api", "flaky test number 42", "status:failed", "no-such-text"]
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    out: dict[str, Figure] = {}
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="memtui-bench-tui-") as tmp:
            home = Path(tmp) / "home"
            build = build_home(home, n)
            first, timings, cpu = asyncio.run(measure(home, filters, args.repeats))
            bare_first, bare, bare_cpu = asyncio.run(bare_costs(home, filters, args.repeats))
            print(f"\n{n:,} threads (built in {build:.1f} s)")
            verdict = "ok" if first < 0.3 else "OVER TARGET"
            print(
                f"  launch -> first paint of Rollouts: {first * 1000:6.0f} ms  ({first / bare_first:.1f}x a bare "
                f"DataTable app, {bare_first * 1000:.0f} ms)   target < 300 ms  {verdict}"
            )
            for text, values in timings.items():
                median = statistics.median(values)
                verdict = "ok" if median < 0.1 else "OVER TARGET"
                print(
                    f"  filter {text!r:24} median {median * 1000:5.0f} ms  max {max(values) * 1000:5.0f} ms  "
                    f"({median / bare[text]:.1f}x SQL + bare DataTable, {bare[text] * 1000:.0f} ms)"
                    f"   target < 100 ms  {verdict}"
                )
                work = statistics.median(cpu[text])
                print(
                    f"  {'':31} CPU time {work * 1000:5.0f} ms  ({work / bare_cpu[text]:.2f}x the bare reload's "
                    f"{bare_cpu[text] * 1000:.0f} ms)"
                )
            slowest = max(statistics.median(v) for v in timings.values())
            out[f"{n}.first_paint_ms"] = Figure(round(first * 1000, 1), "ms")
            out[f"{n}.first_paint_vs_bare"] = Figure(round(first / bare_first, 3), "x bare app")
            out[f"{n}.slowest_filter_ms"] = Figure(round(slowest * 1000, 1), "ms")
    emit("tui", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
