"""The Rollouts filter's trigram index (``memtui/state/thread_filter.py``): the same rows as the LIKE scan it
replaces, kept in step with every write to ``threads``, built for an existing home by its migration, and holding
none of a forgotten rollout's words (not in its segments, the database file or the WAL)."""

from __future__ import annotations

import sqlite3
import string
from pathlib import Path

import pytest

from memtui.adapters.rollouts.model import Thread
from memtui.services.context import open_context
from memtui.services.forget import forget
from memtui.state import thread_filter, threads
from memtui.state.db import connect, like_pattern, migrate
from memtui.state.schema import MIGRATIONS

COLUMNS = ("preview", "cwd", "id", "source_kind", "session_source", "title")

# previews, titles and folders with what a LIKE pattern, an FTS5 query or case folding could get wrong
TEXTS = [
    "Fix the Shop-API checkout test",
    "shop-api: 50% of runs fail_fast",
    "a_b and a%b and a\\b are literal",
    'quote " inside, and AND OR NOT NEAR * ^ :',
    "Ünïcödé Straße ÄÖÜ äöü",
    "Σίσυφος ΣΊΣΥΦΟΣ",
    "Kelvin sign \u212a vs k, long s \u017f vs s, dotted \u0130stanbul",
    "emoji 🚀 launch 🚀🚀 and 中文 文字",
    "ends with pi",
    "x",
    "",
    "tab\tand\nnewline text",
    "number 42 and 4242 and 1042",
]
FOLDERS = [None, "/home/ana/src/shop-api", "/w/Ünï", "/tmp/a_b%", "/srv/x"]
TITLES = [None, "Deploy to PROD", "Título ñandú", "yz"]

FILTERS = [
    "shop",
    "SHOP",
    "Shop-API",
    "api",
    "pi",
    "%",
    "_",
    "50%",
    "a_b",
    "a%b",
    "\\",
    "a\\b",
    '"',
    'e "',
    "AND",
    "or",
    "*",
    "near",
    "ü",
    "Ü",
    "ÜNÏ",
    "ünï",
    "straße",
    "STRASSE",
    "σί",
    "ΣΊ",
    "k",
    "K",
    "\u212a",
    "\u0130st",
    "ist",
    "🚀",
    "🚀🚀",
    "文",
    "中文",
    "42",
    "4",
    "042",
    "x",
    "xy",  # a folder's last letter and the title's first never make one substring
    "hy",
    "e",
    "ed",
    "codex",
    "CLA",
    "cl",
    "exec",
    "019e",
    "0000aa",
    "shop 42",
    "shop status:pending",
    "source:claude ü",
    "status:failed",
    "fix test",
    "no-such-text",
    "zz",
    "a b c",
    "prod deploy",
]


def _fold(text: str) -> str:
    return text.translate(str.maketrans(string.ascii_uppercase, string.ascii_lowercase))


def _python_matches(row: dict[str, str | None], text: str) -> bool:
    """An independent oracle for plain terms: each term a substring of one column, ASCII letters folded."""
    return all(any(_fold(term) in _fold(row[c] or "") for c in COLUMNS) for term in text.split())


def _corpus() -> list[Thread]:
    out = []
    for i in range(240):
        out.append(
            Thread(
                id=f"019e{i:08x}-0000-7000-8000-{i * 7919:012x}",
                source_kind="codex" if i % 3 else "claude",
                path=f"/r/{i}.jsonl",
                cwd=FOLDERS[i % len(FOLDERS)],
                session_source="cli" if i % 4 else "exec",
                updated_at=1_700_000_000 + (i * 37) % 1000,
                preview=TEXTS[i % len(TEXTS)] + (f" #{i}" if i % 2 else ""),
                title=TITLES[i % len(TITLES)],
            )
        )
    return out


def _like_ids(conn: sqlite3.Connection, text: str, statuses: dict[str, str]) -> list[str]:
    """The reference: every plain term through LIKE over the same columns, in the page's order."""
    clauses, args = [], []
    for term in text.split():
        key, _, value = term.partition(":")
        if key in ("status", "source") and value:
            continue
        clauses.append("(" + " OR ".join(f"COALESCE({c}, '') LIKE ? ESCAPE '\\'" for c in COLUMNS) + ")")
        args += [like_pattern(term)] * len(COLUMNS)
    rows = conn.execute(
        "SELECT id, source_kind, session_source FROM threads"
        + (" WHERE " + " AND ".join(clauses) if clauses else "")
        + " ORDER BY updated_at DESC, id DESC",
        args,
    ).fetchall()
    ids = []
    for tid, kind, source in rows:
        keep = True
        for term in text.split():
            key, _, value = term.partition(":")
            if key == "source" and value:
                keep &= value in (kind, source)
            elif key == "status" and value:
                keep &= statuses.get(tid) == value
        if keep:
            ids.append(tid)
    return ids


def _assert_same_as_like(conn: sqlite3.Connection) -> int:
    statuses = {r.id: r.status for r in threads.list_page(conn, "", "updated", True, 0, 10_000)}
    by_id = {
        r[0]: dict(zip(COLUMNS, r[1:], strict=True))
        for r in conn.execute(f"SELECT id, {', '.join(COLUMNS)} FROM threads")
    }
    nonempty = 0
    for text in FILTERS:
        expected = _like_ids(conn, text, statuses)
        page = [r.id for r in threads.list_page(conn, text, "updated", True, 0, 10_000)]
        assert page == expected, text
        assert threads.count_listed(conn, text) == len(expected), text
        assert threads.count_listed_from_indexes(conn, text) in (None, len(expected)), text
        offset = [r.id for r in threads.list_page(conn, text, "updated", True, 3, 5)]
        assert offset == expected[3:8], text
        if ":" not in text:
            assert set(expected) == {i for i, row in by_id.items() if _python_matches(row, text)}, text
        nonempty += bool(expected)
    return nonempty


def test_the_index_finds_exactly_the_rows_like_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connect(tmp_path / "s.sqlite")
    corpus = _corpus()
    threads.upsert_threads(conn, corpus)
    # the corpus can tell them apart: ASCII-only folding, literal % _ \ ", terms within one column
    assert threads.count_listed(conn, "Ü") != threads.count_listed(conn, "ü")
    assert threads.count_listed(conn, "xy") == 0 and threads.count_listed(conn, "a%b") > 0
    assert _assert_same_as_like(conn) > 30
    # a count the indexes answer comes with the page; one that tests every thread's text or status follows it
    for text in ("shop-api", "42", "fix test", "status:failed", "source:claude", "", "zz"):
        assert threads.count_listed_from_indexes(conn, text) is not None, text
    for text in ("k", "shop k", "status:pending", "shop status:failed"):
        assert threads.count_listed_from_indexes(conn, text) is None, text
    # the other ways a page and a count are answered: walking the threads in order, and a LIKE for the two-character
    # terms (too many trigrams to expand)
    monkeypatch.setattr(threads, "_SORT_MATCHES_UP_TO", 0)
    _assert_same_as_like(conn)
    monkeypatch.setattr(thread_filter, "MAX_EXPANSION", 0)
    _assert_same_as_like(conn)


def test_the_index_follows_reingest_titles_and_forgotten_words(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite")
    corpus = _corpus()
    threads.upsert_threads(conn, corpus)
    first = corpus[0]
    assert threads.count_listed(conn, "brandnewword") == 0
    # a re-ingest with a changed first message: the old words leave the index, the new ones are found
    changed = first.model_copy(update={"preview": "BrandNewWord replaces it", "updated_at": first.updated_at + 1})
    threads.upsert_threads(conn, [changed])
    assert [r.id for r in threads.list_page(conn, "brandnewword", "updated", True, 0, 10)] == [first.id]
    assert first.id not in {r.id for r in threads.list_page(conn, "checkout", "updated", True, 0, 1000)}
    # an unchanged re-ingest leaves it as it was; a Codex title is found
    threads.upsert_threads(conn, [changed])
    assert threads.count_listed(conn, "brandnewword") == 1
    codex = next(t for t in corpus if t.source_kind == "codex")
    assert threads.set_titles(conn, "codex", [("Quokka migration plan", codex.id)]) == 1
    assert [r.id for r in threads.list_page(conn, "quokka", "updated", True, 0, 10)] == [codex.id]
    # forgetting blanks the words, and a later ingest of the same file does not bring them back
    threads.forget_words(conn, first.id)
    conn.execute("INSERT INTO forgotten_threads (thread_id, forgotten_at) VALUES (?, 1)", (first.id,))
    assert threads.count_listed(conn, "brandnewword") == 0
    threads.upsert_threads(conn, [changed.model_copy(update={"updated_at": changed.updated_at + 5})])
    assert threads.count_listed(conn, "brandnewword") == 0 and threads.count_listed(conn, "replaces") == 0
    _assert_same_as_like(conn)


def test_an_existing_home_gets_the_index_from_its_migration(tmp_path: Path) -> None:
    step = next(i for i, m in enumerate(MIGRATIONS) if "CREATE VIRTUAL TABLE IF NOT EXISTS threads_filter" in m)
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:step]:
        old.executescript(script)
    old.execute(f"PRAGMA user_version = {step}")
    old.executemany(
        "INSERT INTO threads (id, source_kind, path, cwd, session_source, updated_at, preview, title, ingested_at)"
        " VALUES (?, 'codex', ?, ?, 'cli', ?, ?, ?, 0)",
        [
            ("t-old-1", "/r/1.jsonl", "/home/ana/src/Shop-API", 10, "Wombat deploy notes", None),
            ("t-old-2", "/r/2.jsonl", None, 20, "nothing here", "Ünï title"),
        ],
    )
    old.close()
    conn = connect(path)  # migrates
    assert migrate(conn) == len(MIGRATIONS)
    assert [r.id for r in threads.list_page(conn, "wombat", "updated", True, 0, 10)] == ["t-old-1"]
    assert threads.count_listed(conn, "shop-api") == 1 and threads.count_listed(conn, "ÜnÏ".replace("Ï", "ï")) == 1
    assert threads.count_listed(conn, "üNï") == 0  # LIKE folds ASCII letters only, and so does the index
    assert threads.count_listed(conn, "-2") == 1  # a two-character term at a column's end


# Private-use characters, found nowhere else: every trigram's last two characters are stored whole in the FTS5
# segments (a term shares at most its first bytes with the one before it), so their bytes show whether the index
# still holds the forgotten words.
MARKER = "\ue101\ue102\ue103\ue104\ue105\ue106"
PAIRS = [MARKER[i : i + 2].encode() for i in range(len(MARKER) - 1)]


def _index_bytes(conn: sqlite3.Connection) -> bytes:
    return b"".join(r[0] for r in conn.execute("SELECT block FROM threads_filter_data") if r[0] is not None)


def test_forgetting_a_rollout_leaves_none_of_its_words_in_the_index_the_database_or_the_wal(isolated_env) -> None:
    home = isolated_env["MEMTUI_HOME"]
    ctx = open_context()
    try:
        conn = ctx.conn
        corpus = _corpus()
        gone = corpus[5].model_copy(update={"preview": f"deploy with {MARKER} tomorrow", "title": f"T{MARKER}"})
        threads.upsert_threads(conn, [*corpus[:5], gone, *corpus[6:]])
        # more writes after it, so its trigrams sit in several segments
        threads.upsert_threads(conn, [t.model_copy(update={"preview": t.preview + " again"}) for t in corpus[6:60]])
        assert [r.id for r in threads.list_page(conn, MARKER[1:4], "updated", True, 0, 10)] == [gone.id]
        assert all(p in _index_bytes(conn) for p in PAIRS)  # the check can fail: the index holds them

        forget(ctx, gone.id, "private")

        assert threads.count_listed(conn, MARKER[1:4]) == 0
        assert not any(p in _index_bytes(conn) for p in PAIRS)
        # a re-ingest of the forgotten rollout's file does not index its words again
        threads.upsert_threads(conn, [gone.model_copy(update={"updated_at": gone.updated_at + 9})])
        assert threads.count_listed(conn, MARKER[:2]) == 0
        assert not any(p in _index_bytes(conn) for p in PAIRS)
        _assert_same_as_like(conn)
    finally:
        ctx.close()
    for name in ("state.sqlite", "state.sqlite-wal"):
        path = home / name
        data = path.read_bytes() if path.exists() else b""
        assert not any(p in data for p in PAIRS), name
