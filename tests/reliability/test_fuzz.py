"""Hostile bytes: hypothesis fuzzing of the rollout readers, the ingest and the citation parser.

No exception escapes, and lines that cannot be used are counted (``skipped_lines``, ``dropped_lines``).
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtui.adapters.rollouts import claude, codex
from memtui.adapters.sources import items_from_bytes
from memtui.services.citations import (
    CitationStripper,
    parse_citations,
    parse_entry,
    record_citation,
    strip_citations,
)
from memtui.services.context import open_context
from memtui.services.ingest import find_citations, run_ingest
from memtui.state.db import connect
from tests.fixtures.rollouts import claude_lines, codex_lines
from tests.reliability import figures
from tests.reliability.harness import NOW
from tests.reliability.scale import FUZZ_EXAMPLES

TID = "019e0a1b-2c3d-7e4f-8a9b-000000000001"
SID = "6f1c7d0e-2b3a-4c5d-8e9f-0a1b2c3d4e5f"
CODEX = [json.dumps(x, separators=(",", ":")).encode() for x in codex_lines(thread_id=TID)]
CLAUDE = [json.dumps(x, separators=(",", ":")).encode() for x in claude_lines(session_id=SID)]
# derandomize comes from the hypothesis profile (tests/conftest.py): CI replays, local runs and the soak explore.
FAST = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# Lines that are certainly not a JSON object: they start with a byte no JSON text starts with.
garbage_lines = st.builds(
    lambda head, tail: head + tail.replace(b"\n", b" "),
    st.sampled_from([b"<", b"#", b"\xff", b"~"]),
    st.binary(max_size=60),
)


def index_both(data: bytes, path_name: str) -> list:
    """Every reader over the same bytes; returns their results (none may raise)."""
    out = [
        codex.index_file(Path(f"/x/{path_name}.jsonl"), data, size=len(data), mtime_ns=0, archived=False, now=NOW),
        claude.index_file(Path(f"/x/{path_name}.jsonl"), data, size=len(data), mtime_ns=0, now=NOW),
    ]
    items_from_bytes(data, "codex")
    items_from_bytes(data, "claude")
    find_citations(TID, data)
    return out


def expected_bad_lines(data: bytes) -> int:
    """An independent count of the lines a reader must skip: blank or not a JSON object, before the empty lines
    that end the file (a BOM on the first line and CR line ends are accepted; invalid UTF-8 is repaired)."""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    lines = []
    for i, raw in enumerate(parts):
        if i == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        lines.append(raw[:-1] if raw.endswith(b"\r") else raw)
    while lines and not lines[-1].strip():
        lines.pop()
    bad = 0
    for raw in lines:
        if not raw.strip():
            bad += 1
            continue
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except UnicodeDecodeError:
            try:
                obj = orjson.loads(raw.decode("utf-8", "replace"))
            except orjson.JSONDecodeError:
                obj = None
        except (ValueError, RecursionError):
            obj = None
        bad += not isinstance(obj, dict)
    return bad


def check_counts(data: bytes, results: list) -> int:
    """Both readers counted exactly the bad lines of ``data`` (a reader that gave up on an empty file counts 0)."""
    expected = expected_bad_lines(data)
    for result in results:
        if result.reason == "empty file":
            assert expected == 0, (expected, data[:200])
        else:
            assert result.skipped_lines == expected, (result.source_kind, result.skipped_lines, expected, data[:200])
    return expected


@st.composite
def mutated(draw, base: list[bytes]) -> bytes:
    lines = list(base)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["cut", "insert", "replace_value", "dup", "drop", "bad_utf8", "crlf"]))
        line = lines[i]
        if op == "cut":
            lines[i] = line[: draw(st.integers(0, len(line)))]
        elif op == "insert":
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + draw(st.binary(max_size=12)).replace(b"\n", b"") + line[at:]
        elif op == "replace_value":
            try:
                obj = json.loads(line)
            except ValueError:  # an earlier mutation broke this line already
                continue
            if not isinstance(obj, dict):
                continue
            key = draw(st.sampled_from([*obj.keys(), "payload", "type", "message"]))
            obj[key] = draw(json_values)
            lines[i] = json.dumps(obj).encode()
        elif op == "dup":
            lines.insert(i, line)
        elif op == "drop" and len(lines) > 1:
            lines.pop(i)
        elif op == "bad_utf8":
            lines[i] = line.replace(b"a", b"\xc3\x28", 1)
        elif op == "crlf":
            lines[i] = line + b"\r"
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


def test_fuzz_rollout_readers_never_raise_on_random_bytes_or_mutated_lines():
    tried, counted = [0], [0]

    @FAST
    @given(data=st.one_of(st.binary(max_size=3000), mutated(CODEX), mutated(CLAUDE)))
    def check(data):
        tried[0] += 1
        counted[0] += check_counts(data, index_both(data, TID))

    check()
    figures.record("fuzz: rollouts", bad_inputs=tried[0], bad_lines=counted[0])


def test_fuzz_garbage_lines_in_a_valid_rollout_are_counted_exactly():
    tried, counted = [0], [0]

    @FAST
    @given(
        base=st.sampled_from(["codex", "claude"]),
        inserts=st.lists(st.tuples(st.integers(1, 30), garbage_lines), min_size=1, max_size=5),
    )
    def check(base, inserts):
        tried[0] += 1
        lines = list(CODEX if base == "codex" else CLAUDE)
        for at, garbage in inserts:
            lines.insert(min(at, len(lines) - 1), garbage)  # never last: a cut last line is counted differently
        data = b"\n".join(lines) + b"\n"
        results = index_both(data, TID if base == "codex" else SID)
        result = results[0] if base == "codex" else results[1]
        assert result.thread is not None, result.reason
        assert result.skipped_lines == len(inserts), (result.skipped_lines, len(inserts))
        counted[0] += result.skipped_lines

    check()
    figures.record("fuzz: rollouts", bad_inputs=tried[0], bad_lines=counted[0])


def test_fuzz_ingest_of_hostile_files_records_every_file_and_never_raises(tmp_path, isolated_env):
    codex_home = isolated_env["CODEX_HOME"] / "sessions" / "2026" / "07" / "01"
    codex_home.mkdir(parents=True)
    ctx = open_context()
    tried, counted = [0], [0]

    @settings(FAST, max_examples=max(20, FUZZ_EXAMPLES // 10))
    @given(data=st.one_of(st.binary(max_size=2000), mutated(CODEX)))
    def check(data):
        tried[0] += 1
        path = codex_home / f"rollout-2026-07-01T09-12-44-019e0a1b-2c3d-7e4f-8a9b-{tried[0]:012d}.jsonl"
        path.write_bytes(data)
        run_ingest(ctx)
        row = ctx.conn.execute(
            "SELECT status, reason, skipped_lines FROM ingest_files WHERE path=?", (str(path),)
        ).fetchone()
        assert row is not None and (row["status"] == "indexed" or row["reason"]), dict(row or {})
        if row["reason"] != "empty file":
            assert row["skipped_lines"] == expected_bad_lines(data), (dict(row), data[:200])
            counted[0] += row["skipped_lines"]

    check()
    ctx.close()
    figures.record("fuzz: rollouts", bad_inputs=tried[0], bad_lines=counted[0])


# --- citations ---------------------------------------------------------------------------------------------------

VALID_ENTRY = "MEMORY.md:{a}-{b}|note=[{note}]"


def test_fuzz_citation_parser_never_raises_and_counts_dropped_lines():
    tried, dropped = [0], [0]
    bad_entry = (
        st.text(max_size=60)
        .map(lambda s: s.replace("\n", " "))
        .filter(lambda s: s.strip() and parse_entry(s) is None and "<" not in s)
    )

    @FAST
    @given(
        good=st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 2**32), st.text(max_size=10)), max_size=5),
        bad=st.lists(bad_entry, max_size=5),
        noise=st.text(max_size=200),
        order=st.randoms(use_true_random=False),
    )
    def check(good, bad, noise, order):
        tried[0] += 1
        parse_citations(noise)  # arbitrary text: no exception
        strip_citations(noise)
        stripper = CitationStripper()
        for i in range(0, len(noise), 7):
            stripper.push(noise[i : i + 7])
        stripper.finish()
        valid = [
            VALID_ENTRY.format(a=a, b=b, note=n.replace("\n", " ").replace("]", "").replace("|note=[", ""))
            for a, b, n in good
            if a <= 2**32 - 1 and b <= 2**32 - 1
        ]
        lines = valid + bad
        order.shuffle(lines)
        text = (
            noise.replace("<", "")
            + "<oai-mem-citation>\n<citation_entries>\n"
            + "\n".join(lines)
            + "\n</citation_entries>\n<rollout_ids>\n"
            + TID
            + "\n</rollout_ids>\n</oai-mem-citation>"
        )
        result = parse_citations(text)
        assert result.dropped_lines == len(bad), (lines, result.dropped_lines)
        assert len(result.citation.entries) == len(valid)
        dropped[0] += result.dropped_lines

    check()
    figures.record("fuzz: citations", bad_inputs=tried[0], bad_lines=dropped[0])


def test_fuzz_citations_recorded_from_hostile_text_never_raise(isolated_env):
    conn = connect(isolated_env["MEMTUI_HOME"] / "state.sqlite")
    tried = [0]

    @settings(FAST, max_examples=max(20, FUZZ_EXAMPLES // 10))
    @given(entries=st.lists(st.text(max_size=40), max_size=4), ids=st.lists(st.text(max_size=40), max_size=3))
    def check(entries, ids):
        tried[0] += 1
        text = (
            "<oai-mem-citation><citation_entries>\n"
            + "\n".join(entries)
            + "\n</citation_entries><rollout_ids>\n"
            + "\n".join(ids)
            + "\n</rollout_ids></oai-mem-citation>"
        )
        result = parse_citations(text)
        if result.citation is not None:
            record_citation(
                conn, result.citation, "manual", f"fuzz:{tried[0]}", memory_root=isolated_env["MEMTUI_HOME"]
            )

    check()
    conn.close()
    figures.record("fuzz: citations", bad_inputs=tried[0])
