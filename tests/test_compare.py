"""benchmarks/compare.py: the flagging rule on made-up figures, and a whole comparison (temporary worktree, both
sides run in alternation, table, exit status, clean-up) over a scratch repository whose one benchmark reports a
cost read from the code it measures. Nothing here is timed."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def compare(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("compare")


def test_a_lower_better_figure_is_flagged_past_ten_percent_and_a_higher_better_one_below_0_91(compare):
    assert compare.worse("lower", 1.11) and not compare.worse("lower", 1.09) and not compare.worse("lower", 0.5)
    assert compare.worse("higher", 0.90) and not compare.worse("higher", 0.92) and not compare.worse("higher", 3.0)
    assert not compare.worse("none", 100.0) and not compare.worse("none", 0.01)
    assert compare.ratio(0, 0) == 1.0 and compare.ratio(0, 1) == float("inf") and compare.worse("lower", float("inf"))


def test_rows_take_each_sides_median_over_rounds_and_a_note_keeps_a_flag_from_failing(compare):
    F = compare.Figure
    base = [{"t": F(1.0, "s"), "rate": F(100.0, "MB/s", "higher"), "n": F(5, "rows", "none")}] * 2 + [
        {"t": F(9.0, "s"), "rate": F(100.0, "MB/s", "higher"), "n": F(5, "rows", "none")}
    ]  # an outlier round: the median ignores it
    head = [
        {"t": F(1.11, "s"), "rate": F(90.0, "MB/s", "higher"), "n": F(50, "rows", "none"), "new": F(1.0, "s")},
        {"t": F(1.12, "s"), "rate": F(89.0, "MB/s", "higher"), "n": F(50, "rows", "none"), "new": F(1.0, "s")},
        {"t": F(1.5, "s"), "rate": F(91.0, "MB/s", "higher"), "n": F(50, "rows", "none"), "new": F(1.0, "s")},
    ]
    rows = {r.figure: r for r in compare.compare("b", base, head, {"b.rate": "redacts more kinds now"})}
    t, rate, n, new = rows["t"], rows["rate"], rows["n"], rows["new"]
    assert (t.base, t.head, round(t.ratio, 2), t.flagged, t.note) == (1.0, 1.12, 1.12, True, "")
    assert (rate.base, rate.head, rate.ratio, rate.flagged) == (100.0, 90.0, 0.9, True)
    assert rate.note == "redacts more kinds now" and compare.flag_word(rate) == "SLOWER (noted)"
    assert not n.flagged and n.ratio == 10.0  # context only
    assert not new.flagged and "base prints none" in new.note
    same = compare.compare("b", [{"t": F(1.0, "s")}], [{"t": F(1.09, "s")}], {})
    assert not same[0].flagged and compare.flag_word(same[0]) == ""
    text = compare.table(list(rows.values()))
    assert text.splitlines()[0].split() == ["figure", "unit", "better", "base", "head", "ratio", "flag", "why"]
    assert "b.t" in text and "1.12x" in text and "SLOWER" in text
    assert compare.table(list(rows.values()), markdown=True).splitlines()[1].startswith("|---|")


COST_BENCH = """
    import sys
    from pathlib import Path
    from figures import Figure, code_root, emit
    root = code_root()
    cost = float((root / "cost.txt").read_text())
    print("rounds run against", root.name)
    emit("cost", {"cost_s": Figure(cost, "s"), "rate": Figure(10 / cost, "ops/s", "higher"), "n": Figure(3, "", "none")})
"""


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return done.stdout


@pytest.fixture
def scratch(tmp_path, compare, monkeypatch):
    """A repository with benchmarks/{compare,figures,cost}.py and a cost.txt the benchmark reports; cost 1.0
    committed."""
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    for name in ("compare.py", "figures.py"):
        shutil.copy(BENCH / name, repo / "benchmarks" / name)
    (repo / "benchmarks" / "cost.py").write_text(textwrap.dedent(COST_BENCH))
    (repo / "cost.txt").write_text("1.0")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    monkeypatch.setattr(compare, "HERE", repo / "benchmarks")
    monkeypatch.setattr(compare, "BENCHMARKS", {"cost": compare.Benchmark("cost.py", ("--full",), ())})
    monkeypatch.setattr(sys, "argv", ["compare.py"])
    return repo


@pytest.mark.parametrize(("cost", "status", "flag"), [("1.09", 0, False), ("1.11", 1, True)])
def test_a_whole_comparison_against_a_commit_flags_the_slower_working_tree(
    scratch, compare, capsys, cost, status, flag
):
    (scratch / "cost.txt").write_text(cost)  # the working tree's code, not committed
    log = scratch.parent / "runs.log"
    assert compare.main(["HEAD", "--quick", "--only", "cost", "--rounds", "2", "--log", str(log)]) == status
    out = capsys.readouterr().out.splitlines()
    head = _git(scratch, "rev-parse", "--short", "HEAD").strip()
    assert out[0].startswith(f"compare {head} (base) with the working tree (head): 2 round(s) --quick")
    assert "load average" in out[0]
    assert out[1].split() == ["figure", "unit", "better", "base", "head", "ratio", "flag", "why"]
    rows = {line.split()[0]: line.split() for line in out[2:5]}
    assert rows["cost.cost_s"][3:6] == ["1", cost.rstrip("0"), f"{float(cost):.2f}x"]
    assert ("SLOWER" in rows["cost.cost_s"]) is flag and ("SLOWER" in rows["cost.rate"]) is (float(cost) > 1.099)
    assert "SLOWER" not in rows["cost.n"]
    assert (out[-1].startswith("2 figure(s) more than 10 % worse")) is flag
    # Each side ran once per round, the base from a worktree outside the repository, which is gone afterwards.
    text = log.read_text()
    ran = [line.removeprefix("rounds run against ") for line in text.splitlines() if line.startswith("rounds run")]
    assert ran == ["base", "repo", "repo", "base"]  # the order swapped each round
    (base,) = set(re.findall(r"^=== cost\.py  \[(.+)\] exit 0$", text, re.MULTILINE)) - {str(scratch)}
    assert not Path(base).exists() and not Path(base).is_relative_to(scratch)
    assert _git(scratch, "worktree", "list").count("\n") == 1
    # The log tables again to the same rows, without running anything.
    assert compare.main(["HEAD", "--from-log", str(log)]) == status
    again = capsys.readouterr().out.splitlines()
    assert again[0] == f"compare {head} (base) with the working tree (head), from {log}:" and again[1:] == out[1:5]


def test_a_note_lets_a_flagged_figure_pass_and_an_unknown_benchmark_is_refused(scratch, compare, capsys):
    (scratch / "cost.txt").write_text("2.0")
    notes = ["--note", "cost.cost_s=does twice the work on purpose", "--note", "cost.rate=the same work"]
    assert compare.main(["HEAD", "--quick", "--only", "cost", "--rounds", "1", *notes]) == 0
    out = capsys.readouterr().out
    assert "SLOWER (noted)  does twice the work on purpose" in out
    with pytest.raises(SystemExit):
        compare.main(["HEAD", "--only", "nosuch"])
    assert "unknown benchmark(s) nosuch" in capsys.readouterr().err


def test_a_benchmark_that_prints_no_figures_is_reported(scratch, compare, capsys):
    (scratch / "benchmarks" / "cost.py").write_text("print('no figures here')\n")
    assert compare.main(["HEAD", "--quick", "--only", "cost", "--rounds", "1"]) == 2
    assert "no figures: cost (base printed no figures)" in capsys.readouterr().out
