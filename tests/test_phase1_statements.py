"""Durable-statement rules of the offline extractor, on the examples they were tuned on (the held-out set is
measured by ``benchmarks/offline_extractor.py``, not here)."""

from __future__ import annotations

import pytest

from memtui.services.phase1.statements import is_durable, is_rule_like, normalized, sentences
from tests.fixtures.offline_eval import EVAL_SET
from tests.fixtures.offline_tuning import TUNING_SET


@pytest.mark.parametrize(("sentence", "durable"), TUNING_SET)
def test_tuning_examples(sentence, durable):
    assert is_durable(sentence) is durable


def test_tuning_and_evaluation_sets_are_apart_and_balanced():
    tuning = {normalized(s) for s, _ in TUNING_SET}
    evaluation = [normalized(s) for s, _ in EVAL_SET]
    assert not tuning & set(evaluation)
    assert len(set(evaluation)) == len(EVAL_SET) >= 60
    assert sum(d for _, d in EVAL_SET) * 2 == len(EVAL_SET)


def test_sentences_split_on_sentence_ends_and_lines():
    assert sentences("Fix it. Always use make.\nThen run e.g. tests") == [
        "Fix it.",
        "Always use make.",
        "Then run e.g. tests",
    ]


def test_held_out_figures_meet_their_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's figure, from ``benchmarks/offline_extractor.py``: a guard that it stays true (it can fail)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "offline_extractor.py"
    monkeypatch.syspath_prepend(str(path.parent))  # its sibling ``figures``, as when it runs as a script
    spec = importlib.util.spec_from_file_location("offline_extractor_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    m = bench.measure()
    assert m["statements"] >= 60 and m["durable"] * 2 == m["statements"]
    assert m["precision"] >= bench.PRECISION_TARGET and m["recall"] >= bench.RECALL_TARGET


@pytest.mark.parametrize(
    ("sentence", "rule_like"),
    [
        ("Every shell script has to start with set -euo pipefail.", True),
        ("Keep the cache TTL at 300 seconds.", True),
        ("Before each commit, run cargo clippy with -D warnings.", True),
        ("Force-pushing to main is not allowed.", True),
        ("No database migrations on Fridays, please.", True),  # a prohibition said as a noun phrase
        ("No problem at all with this.", False),
        ("The smoke tests take five minutes on every run.", False),  # recurring, but no instruction
        ("Run the linters before each release this time.", False),  # time-limited
        ("Do we have to keep the cache?", False),
    ],
)
def test_rule_like_takes_standing_rules_without_a_normative_word_and_leaves_the_extractor_alone(sentence, rule_like):
    """Memory health's wider recogniser; the extractor's own (``is_durable``) does not take these forms."""
    assert is_rule_like(sentence) is rule_like
    if rule_like:
        assert not is_durable(sentence)
