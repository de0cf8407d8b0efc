"""A regression check: every registered benchmark run for an older commit's code and the working tree's, in
alternation on the same machine, with both values per figure, their ratio, and ``SLOWER`` where the working tree is
more than 10 % worse.

    .venv/bin/python benchmarks/compare.py BASE [--rounds 3] [--only batch,phase1] [--quick] [--markdown]
        [--note batch.prepare_s="why it is slower"]

BASE is a commit or tag. Its code is checked out into a temporary ``git worktree`` outside the repository (removed
afterwards, also on Ctrl-C); each benchmark is the working tree's script, run once per round for each side with
``MEMTUI_BENCH_CODE`` naming the code it measures (``benchmarks/figures.py``), the two sides' order swapped each
round so a machine growing busier weighs on both alike. A figure's value is the median over the rounds. A
``lower``-better figure (a time) is flagged above 1.10x the base, a ``higher``-better one (a throughput, a precision)
below 0.91x; ``none`` is context and never flagged. ``--note FIGURE=WHY`` prints WHY beside that figure and keeps it
from failing the run: the way a row says why it is slower on purpose.

Exit status: 0 when nothing is flagged (or every flag has a note), 1 when something is, 2 when a benchmark printed
no figures for a side. Run it before landing a change to a hot path (docs/development.md).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from figures import CODE_ENV, Figure, parse

HERE = Path(__file__).resolve().parent
SLOWER_LIMIT = 1.10  # a lower-better figure above this ratio is flagged; a higher-better one below its inverse
FASTER_LIMIT = 0.91


@dataclass(frozen=True)
class Benchmark:
    """One script of ``benchmarks/``: its arguments for a comparison run and for a ``--quick`` smoke run."""

    script: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()


# A new benchmark joins by calling ``figures.emit`` and adding one entry here. The sizes are smaller than the
# scripts' defaults where a full run takes minutes: a comparison runs each of them 2 x rounds times.
BENCHMARKS: dict[str, Benchmark] = {
    "phase1": Benchmark("phase1.py", (), ("--rollouts", "16", "--latency", "0.02")),
    "http_client": Benchmark(
        "http_client.py", ("--requests", "50", "--rounds", "3"), ("--requests", "10", "--rounds", "1")
    ),
    "batch": Benchmark(
        "batch.py", ("--rollouts", "2000", "--sync-sample", "100"), ("--rollouts", "60", "--sync-sample", "10")
    ),
    "ingest": Benchmark("ingest.py", ("--gb", "0.2"), ("--gb", "0.01")),
    "redact": Benchmark("redact.py", ("--mb", "10"), ("--mb", "1")),
    "phase2": Benchmark("phase2.py", ("--n", "2000", "--repeat", "5"), ("--n", "50", "--repeat", "2")),
    "search": Benchmark("search.py", ("--threads", "30000", "--repeat", "5"), ("--threads", "500", "--repeat", "1")),
    "health": Benchmark("health.py", ("--threads", "30000"), ("--threads", "500", "--repeat", "1")),
    "tui": Benchmark("tui.py", ("--sizes", "10000", "--repeats", "3"), ("--sizes", "200", "--repeats", "1")),
    "mcp_startup": Benchmark("mcp_startup.py", ("--repeat", "2"), ("--repeat", "1")),
    "scale": Benchmark("scale.py", ("--sizes", "1000", "--repeat", "3"), ("--sizes", "100", "--repeat", "1")),
    "offline_extractor": Benchmark("offline_extractor.py"),
    "startup": Benchmark("startup.py", ("--repeat", "5"), ("--repeat", "1", "--no-every-command")),
}


@dataclass(frozen=True)
class Row:
    benchmark: str
    figure: str
    unit: str
    better: str
    base: float
    head: float
    ratio: float
    flagged: bool
    note: str = ""


def ratio(base: float, head: float) -> float:
    """head / base; a zero base gives 1 when head is zero too, else infinity."""
    if base == 0:
        return 1.0 if head == 0 else math.inf
    return head / base


def worse(better: str, r: float) -> bool:
    """Whether the working tree is more than 10 % worse than the base on a figure of this direction."""
    if better == "lower":
        return r > SLOWER_LIMIT
    if better == "higher":
        return r < FASTER_LIMIT
    return False


def compare(
    benchmark: str, base: Sequence[dict[str, Figure]], head: Sequence[dict[str, Figure]], notes: dict[str, str]
) -> list[Row]:
    """One row per figure either side printed: the medians over rounds, the ratio and whether it is flagged."""
    rows = []
    names = list(dict.fromkeys([k for f in head for k in f] + [k for f in base for k in f]))
    for name in names:
        b = [f[name].value for f in base if name in f]
        h = [f[name].value for f in head if name in f]
        like = next(f[name] for f in [*head, *base] if name in f)
        bv = statistics.median(b) if b else math.nan
        hv = statistics.median(h) if h else math.nan
        r = ratio(bv, hv) if b and h else math.nan
        note = notes.get(f"{benchmark}.{name}", "")
        if not b:
            note = note or "new figure: the base prints none"
        rows.append(
            Row(benchmark, name, like.unit, like.better, bv, hv, r, bool(b and h) and worse(like.better, r), note)
        )
    return rows


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "-"
    if math.isinf(v):
        return "inf"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"


def flag_word(row: Row) -> str:
    if not row.flagged:
        return ""
    return "SLOWER (noted)" if row.note else "SLOWER"


def table(rows: Sequence[Row], *, markdown: bool = False) -> str:
    head = ("figure", "unit", "better", "base", "head", "ratio", "flag", "why")
    body = [
        (
            f"{r.benchmark}.{r.figure}",
            r.unit,
            r.better,
            _fmt(r.base),
            _fmt(r.head),
            "-" if math.isnan(r.ratio) else ("inf" if math.isinf(r.ratio) else f"{r.ratio:.2f}x"),
            flag_word(r),
            r.note,
        )
        for r in rows
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 3 + ["---:"] * 3 + ["---"] * 2) + "|"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [max(len(c[i]) for c in [head, *body]) for i in range(len(head) - 1)]
    out = []
    for cells in [head, *body]:
        left = [cells[i].ljust(widths[i]) if i < 3 or i == 6 else cells[i].rjust(widths[i]) for i in range(len(widths))]
        out.append("  ".join([*left, cells[-1]]).rstrip())
    return "\n".join(out)


class Interrupted(Exception):
    pass


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(f"signal {signum}")


@contextmanager
def checkout(repo: Path, rev: str) -> Iterator[Path]:
    """BASE's tree in a temporary worktree outside the repository, removed on the way out whatever happens."""
    parent = Path(tempfile.mkdtemp(prefix="memtui-compare-"))
    where = parent / "base"
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(where), rev],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(where)], check=False)
        shutil.rmtree(parent, ignore_errors=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], check=False)


def run_one(bench: Benchmark, code: Path, quick: bool, log: Path | None) -> dict[str, Figure]:
    """The working tree's script measuring ``code``; its figures (empty when it printed none)."""
    env = dict(os.environ, **{CODE_ENV: str(code)})
    env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [os.environ.get("PYTHONPATH")])])
    args = bench.quick if quick else bench.args
    done = subprocess.run(
        [sys.executable, str(HERE / bench.script), *args], env=env, capture_output=True, text=True, check=False
    )
    if log is not None:
        with log.open("a") as fh:
            fh.write(
                f"=== {bench.script} {' '.join(args)} [{code}] exit {done.returncode}\n{done.stdout}{done.stderr}\n"
            )
    return parse(done.stdout)


_RUN = re.compile(r"^=== (\S+) .*\[(.+)\] exit -?\d+$", re.MULTILINE)


def from_log(text: str, head_code: str) -> dict[str, tuple[list[dict[str, Figure]], list[dict[str, Figure]]]]:
    """The runs a ``--log`` file recorded, by benchmark: (base runs, head runs), each run's figures."""
    by_script = {b.script: name for name, b in BENCHMARKS.items()}
    marks = list(_RUN.finditer(text))
    out: dict[str, tuple[list[dict[str, Figure]], list[dict[str, Figure]]]] = {}
    for m, following in zip(marks, [*marks[1:], None], strict=True):
        name = by_script.get(m.group(1), m.group(1).removesuffix(".py"))
        figs = parse(text[m.end() : following.start() if following else len(text)])
        if figs:
            out.setdefault(name, ([], []))[m.group(2) == head_code].append(figs)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("base", help="the commit or tag to compare the working tree against")
    ap.add_argument("--rounds", type=int, default=3, help="runs per side per benchmark (medians are printed)")
    ap.add_argument("--only", default="", help=f"comma-separated benchmarks, of: {', '.join(BENCHMARKS)}")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run of the comparison itself")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (for docs/performance.md)")
    ap.add_argument("--note", action="append", default=[], metavar="BENCH.FIGURE=WHY", help="why a figure is slower")
    ap.add_argument("--log", type=Path, help="append every run's full output to this file")
    ap.add_argument("--from-log", type=Path, help="run nothing: the table of the runs an earlier --log recorded")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    if unknown := [n for n in names if n not in BENCHMARKS]:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    notes = dict(n.split("=", 1) for n in args.note if "=" in n)
    repo = Path(
        subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    base_rev = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", args.base], capture_output=True, text=True, check=True
    ).stdout.strip()
    if args.from_log is not None:
        runs = from_log(args.from_log.read_text(), str(repo))
        rows = [
            r for name, (b, h) in runs.items() if name in names or not args.only for r in compare(name, b, h, notes)
        ]
        print(f"compare {base_rev} (base) with the working tree (head), from {args.from_log}:")
        print(table(rows, markdown=args.markdown))
        return 1 if any(r.flagged and not r.note for r in rows) else 0
    previous = signal.signal(signal.SIGTERM, _terminate)
    started, load0 = time.perf_counter(), os.getloadavg()
    rows: list[Row] = []
    missing = []
    try:
        with checkout(repo, args.base) as base_code:
            for name in names:
                bench = BENCHMARKS[name]
                base_runs: list[dict[str, Figure]] = []
                head_runs: list[dict[str, Figure]] = []
                for i in range(args.rounds):
                    sides = [(base_code, base_runs), (repo, head_runs)]
                    for code, runs in sides if i % 2 == 0 else sides[::-1]:
                        if figs := run_one(bench, code, args.quick, args.log):
                            runs.append(figs)
                if not base_runs or not head_runs:
                    missing.append(f"{name} ({'base' if not base_runs else 'head'} printed no figures)")
                got = compare(name, base_runs, head_runs, notes)
                rows += got
                print(f"{name}: {len(base_runs)}/{len(head_runs)} runs with figures", file=sys.stderr, flush=True)
    except (KeyboardInterrupt, Interrupted):
        print("interrupted: the base worktree was removed; the benchmarks finished so far:", file=sys.stderr)
        print(table(rows, markdown=args.markdown))
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    load1 = os.getloadavg()
    print(
        f"compare {base_rev} (base) with the working tree (head): {args.rounds} round(s){' --quick' if args.quick else ''},"
        f" {time.perf_counter() - started:.0f} s, load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end"
        f" ({os.cpu_count()} cores)"
    )
    print(table(rows, markdown=args.markdown))
    flagged = [r for r in rows if r.flagged and not r.note]
    for m in missing:
        print(f"no figures: {m}")
    if flagged:
        print(
            f"{len(flagged)} figure(s) more than 10 % worse than {base_rev}: "
            + ", ".join(f"{r.benchmark}.{r.figure}" for r in flagged)
        )
    return 2 if missing else (1 if flagged else 0)


if __name__ == "__main__":
    sys.exit(main())
