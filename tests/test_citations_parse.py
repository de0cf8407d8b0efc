"""Stripping and parsing of memory citations (with Codex's own test cases)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtui.services.citations import (
    CitationEntry,
    CitationStripper,
    MemoryCitation,
    canonical_thread_id,
    parse_citations,
    parse_entry,
    strip_citations,
)

OPEN, CLOSE = "<oai-mem-citation>", "</oai-mem-citation>"
ID_A = "019c6e27-e55b-73d1-87d8-4e01f1f75043"
ID_B = "019dff00-1234-7abc-8def-001122334455"


def stream(chunks: list[str]) -> tuple[str, list[str]]:
    s = CitationStripper()
    visible, bodies = [], []
    for chunk in [*chunks, None]:
        out = s.finish() if chunk is None else s.push(chunk)
        visible.append(out.visible)
        bodies.extend(out.bodies)
    return "".join(visible), bodies


# --- stripping ---------------------------------------------------------------------------------------------


def test_strip_is_not_nested_exact_reference_example():
    assert strip_citations(f"a{OPEN}x{OPEN}y{CLOSE}z{CLOSE}b") == (f"az{CLOSE}b", [f"x{OPEN}y"])


def test_strip_collects_multiple_blocks():
    assert strip_citations(f"a{OPEN}one{CLOSE}b{OPEN}two{CLOSE}c") == ("abc", ["one", "two"])


def test_strip_auto_closes_unterminated_block():
    assert strip_citations(f"x{OPEN}source") == ("x", ["source"])
    assert strip_citations(f"x{OPEN}source</oai-mem") == ("x", ["source</oai-mem"])


def test_strip_keeps_partial_open_tag_at_eof_as_visible_text():
    assert strip_citations("hello <oai-mem-cit") == ("hello <oai-mem-cit", [])


def test_strip_buffers_partial_open_tag_across_chunks():
    s = CitationStripper()
    first = s.push("abc <oai-mem")
    assert (first.visible, first.bodies) == ("abc ", [])
    second = s.push("-citation>x</oai-mem-citation>z")
    assert (second.visible, second.bodies) == ("z", ["x"])
    tail = s.finish()
    assert (tail.visible, tail.bodies) == ("", [])


def test_strip_streams_across_chunk_boundaries():
    assert stream(["Hello <oai-mem-cita", "tion>source A</oai-mem-cita", "tion> world"]) == (
        "Hello  world",
        ["source A"],
    )


def test_strip_text_without_tags_is_unchanged():
    assert strip_citations("no citations < here >") == ("no citations < here >", [])


@given(
    st.lists(st.sampled_from(["a", "<", OPEN[:5], OPEN, CLOSE, CLOSE[:7], "\n", "x</", "é"]), max_size=12), st.data()
)
@settings(max_examples=200, deadline=None)
def test_strip_any_chunking_equals_whole_text(parts, data):
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert stream(chunks) == strip_citations(text)


# --- parsing -----------------------------------------------------------------------------------------------

REFERENCE = f"""The answer.
{OPEN}
<citation_entries>
MEMORY.md:234-236|note=[responsesapi citation extraction code pointer]
rollout_summaries/2026-02-17T21-23-02-LN3m-example.md:10-12|note=[weekly report format]
</citation_entries>
<rollout_ids>
{ID_A}
{ID_A}
</rollout_ids>
{CLOSE}"""


def test_parse_extracts_entries_and_rollout_ids_dropping_duplicate_id():
    r = parse_citations(REFERENCE)
    assert r.wrapped and r.visible == "The answer.\n"
    assert r.citation == MemoryCitation(
        entries=[
            CitationEntry(
                path="MEMORY.md", line_start=234, line_end=236, note="responsesapi citation extraction code pointer"
            ),
            CitationEntry(
                path="rollout_summaries/2026-02-17T21-23-02-LN3m-example.md",
                line_start=10,
                line_end=12,
                note="weekly report format",
            ),
        ],
        rollout_ids=[ID_A],
    )
    assert r.dropped_lines == 0 and r.invalid_ids == []


def test_parse_supports_legacy_thread_ids_and_reports_non_uuid():
    r = parse_citations(
        f"{OPEN}<citation_entries>\nMEMORY.md:1-2|note=[x]\n</citation_entries>\n<thread_ids>\n{ID_B}\nnot-a-uuid\n</thread_ids>{CLOSE}"
    )
    assert r.citation.rollout_ids == [ID_B, "not-a-uuid"]
    assert r.citation.thread_ids == [ID_B]
    assert r.invalid_ids == ["not-a-uuid"]


def test_parse_prefers_rollout_ids_over_legacy_thread_ids():
    r = parse_citations(f"{OPEN}<rollout_ids>\n{ID_A}\n</rollout_ids><thread_ids>\n{ID_B}\n</thread_ids>{CLOSE}")
    assert r.citation.rollout_ids == [ID_A] and r.citation.entries == []


def test_parse_ids_deduplicated_across_blocks_in_first_seen_order():
    text = f"{OPEN}<rollout_ids>\n{ID_B}\n{ID_A}\n</rollout_ids>{CLOSE} and {OPEN}<rollout_ids>\n{ID_A}\n{ID_B}\n</rollout_ids>{CLOSE}"
    assert parse_citations(text).citation.rollout_ids == [ID_B, ID_A]


def test_parse_bare_seed_form_with_space_before_pipe():
    text = "<citation_entries>\npath/to/file.md:10-15 |note=[why this matters]\npath/to/other.md:42-50 |note=[other context]\n</citation_entries>\n<rollout_ids>\nthread-abc-123\nthread-def-456\n</rollout_ids>"
    r = parse_citations(text)
    assert not r.wrapped
    assert [(e.path, e.line_start, e.line_end, e.note) for e in r.citation.entries] == [
        ("path/to/file.md", 10, 15, "why this matters"),
        ("path/to/other.md", 42, 50, "other context"),
    ]
    assert r.invalid_ids == ["thread-abc-123", "thread-def-456"] and r.citation.thread_ids == []


@pytest.mark.parametrize(
    "line",
    [
        "MEMORY.md:1-2",  # no note
        "MEMORY.md:1-2|note=[unterminated",
        "MEMORY.md 1-2|note=[no colon]",
        "MEMORY.md:|note=[no number]",
        "MEMORY.md:L|note=[bare L]",
        "MEMORY.md:LL3-4|note=[double L]",
        "MEMORY.md:a-2|note=[not a number]",
        "MEMORY.md:-1-2|note=[negative]",
        "MEMORY.md:1-4294967296|note=[above u32]",
        "MEMORY.md:1_0-20|note=[underscore]",
        "MEMORY.md:1-|note=[empty end]",
    ],
)
def test_malformed_entry_lines_are_dropped_and_counted(line):
    r = parse_citations(f"<citation_entries>\n{line}\nMEMORY.md:3-4|note=[good]\n\n   \n</citation_entries>")
    assert r.dropped_lines == 1
    assert [(e.line_start, e.note) for e in r.citation.entries] == [(3, "good")]


@pytest.mark.parametrize(
    ("line", "start", "end"),
    [
        ("MEMORY.md:12|note=[single line]", 12, 12),
        ("MEMORY.md:12\u201318|note=[en dash]", 12, 18),
        ("MEMORY.md:12 \u2014 18|note=[em dash]", 12, 18),
        ("MEMORY.md:L12-L18|note=[github style]", 12, 18),
        ("MEMORY.md:L7|note=[github single]", 7, 7),
        ("MEMORY.md:12-12|note=[canonical single]", 12, 12),
    ],
)
def test_common_range_spellings_are_accepted(line, start, end):
    e = parse_entry(line)
    assert e is not None and (e.path, e.line_start, e.line_end) == ("MEMORY.md", start, end)
    assert parse_entry(e.format()) == e  # and they normalise to the canonical form


def test_entry_split_rules_last_note_last_colon_first_dash():
    e = parse_entry(" C:/mem/MEMORY.md : 7 - 9 |note=[ a] b ] ")
    # the note runs from the last "|note=[" to the final "]"; the last ":" ends the path; the first "-" splits
    assert (e.path, e.line_start, e.line_end, e.note) == ("C:/mem/MEMORY.md", 7, 9, "a] b")
    assert parse_entry("x.md:1-2|note=[a |note=[b]") is None  # the earlier "|note=[" lands in the range
    assert parse_entry("x.md:+3-4|note=[]") == CitationEntry(path="x.md", line_start=3, line_end=4, note="")


def test_entries_are_not_deduplicated_and_crlf_is_tolerated():
    text = "<citation_entries>\r\nMEMORY.md:1-2|note=[x]\r\nMEMORY.md:1-2|note=[x]\r\n</citation_entries>"
    assert len(parse_citations(text).citation.entries) == 2


def test_blocks_need_both_tags():
    assert parse_citations("<citation_entries>\nMEMORY.md:1-2|note=[x]\n").citation is None
    assert parse_citations(f"{OPEN}<rollout_ids>\n{ID_A}\n").citation is None  # auto-closed body, ids block open


def test_unterminated_wrapper_is_still_parsed():
    r = parse_citations(f"answer {OPEN}<citation_entries>\nMEMORY.md:1-2|note=[x]\n</citation_entries>")
    assert r.visible == "answer " and len(r.citation.entries) == 1


def test_nested_open_tag_is_body_text():
    r = parse_citations(f"{OPEN}{OPEN}<rollout_ids>\n{ID_A}\n</rollout_ids>{CLOSE}tail{CLOSE}")
    assert r.citation.rollout_ids == [ID_A] and r.visible == f"tail{CLOSE}"


def test_chunk_free_and_empty_inputs_give_no_citation():
    for text in ["", "just an answer", f"{OPEN}{CLOSE}", f"{OPEN}<citation_entries>\n</citation_entries>{CLOSE}"]:
        r = parse_citations(text)
        assert r.citation is None and r.dropped_lines == 0


def test_canonical_thread_id_forms():
    assert canonical_thread_id(ID_A.upper()) == ID_A
    assert canonical_thread_id("{" + ID_A + "}") == ID_A
    assert canonical_thread_id("urn:uuid:" + ID_A) == ID_A
    assert canonical_thread_id(ID_A.replace("-", "")) == ID_A
    for bad in ["not-a-uuid", "{" + ID_A, ID_A + "0", "", "thread-abc-123"]:
        assert canonical_thread_id(bad) is None


def test_from_codex_camel_case_and_back():
    data = {
        "entries": [{"path": "MEMORY.md", "lineStart": 12, "lineEnd": 18, "note": "shop-api CI tz pitfall"}],
        "rolloutIds": [ID_B],
    }
    c = MemoryCitation.from_codex(data)
    assert c.entries[0].line_start == 12 and c.rollout_ids == [ID_B]
    assert c.to_codex() == data


def test_from_codex_skips_malformed_parts():
    c = MemoryCitation.from_codex(
        {
            "entries": [
                {"path": "a.md", "lineStart": "1", "lineEnd": 2},
                {"path": "b.md", "lineStart": True, "lineEnd": 2},
                {"path": "c.md", "lineStart": -1, "lineEnd": 2},
                "junk",
                {"path": "ok.md", "line_start": 1, "line_end": 2},
            ],
            "rolloutIds": [ID_A, 7, None, ID_A, " "],
        }
    )
    assert [e.path for e in c.entries] == ["ok.md"] and c.rollout_ids == [ID_A]
    with pytest.raises(TypeError):
        MemoryCitation.from_codex(["not", "a", "dict"])  # type: ignore[arg-type]


# --- properties --------------------------------------------------------------------------------------------

FRAGMENTS = [
    OPEN,
    CLOSE,
    "<citation_entries>",
    "</citation_entries>",
    "<rollout_ids>",
    "</rollout_ids>",
    "<thread_ids>",
    "</thread_ids>",
    "|note=[",
    "]",
    ":",
    "-",
    "\n",
    "\r\n",
    " ",
    "12",
    "MEMORY.md",
    ID_A,
    "x",
    "é",
    "\x00",
]


@given(st.one_of(st.text(), st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)))
@settings(max_examples=400, deadline=None)
def test_parser_never_raises(text):
    r = parse_citations(text)
    assert r.dropped_lines >= 0
    if r.citation is not None:
        assert r.citation.entries or r.citation.rollout_ids
        # Anything the parser produced formats back to the same citation.
        assert (
            parse_citations(r.citation.format()).citation == r.citation or "<" in r.citation.format().split("\n", 1)[1]
        )


_field = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="<"), max_size=30)
_path = _field.map(str.strip).filter(bool)
_note = _field.map(str.strip).filter(lambda s: "|note=[" not in s)
_entries = st.builds(
    CitationEntry, path=_path, line_start=st.integers(0, 2**32 - 1), line_end=st.integers(0, 2**32 - 1), note=_note
)
_ids = st.lists(st.one_of(st.uuids().map(str), _path), unique=True, max_size=5)


@given(st.lists(_entries, max_size=6), _ids, st.booleans())
@settings(max_examples=300, deadline=None)
def test_format_then_parse_round_trips(entries, ids, wrapped):
    citation = MemoryCitation(entries=entries, rollout_ids=ids)
    r = parse_citations(citation.format(wrapped=wrapped))
    if not entries and not ids:
        assert r.citation is None
    else:
        assert r.citation == citation and r.dropped_lines == 0 and r.wrapped == wrapped
