"""Full-text search: what is indexed, how hits are located, incremental refresh, and deleted text leaving the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.adapters.sources import memory_items
from memtui.cli import main
from memtui.services.context import open_context
from memtui.services.search import (
    chunk_lines,
    ensure_index,
    fts_query,
    purge_deleted,
    refresh,
    refresh_memory_index,
    search,
    search_memory,
)
from memtui.state.db import immediate
from memtui.state.outputs import delete_stage1_output, upsert_stage1_output
from tests.conftest import approve_root
from tests.fixtures.rollouts import write_codex_rollout
from tests.test_phase2_support import add_output


@pytest.fixture
def ctx():
    ctx = open_context()
    ctx.paths.ensure()
    yield ctx
    ctx.close()


def index_bytes(ctx) -> bytes:
    """Every byte the state database keeps on disk (main file and WAL)."""
    db = ctx.paths.state_db
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_fts_query_quotes_every_word():
    assert fts_query('deploy OR "rm -rf" NEAR(x)') == 'text : ("deploy" "OR" "rm" "rf" "NEAR" "x")'
    assert fts_query("  ...  ") == ""


def test_chunks_start_at_headings_and_blank_lines():
    text = "# Title\nintro line\n\n## Part\n- a\n- b\n"
    assert chunk_lines(text) == [(1, "# Title\nintro line"), (4, "## Part\n- a\n- b")]


def test_messages_are_indexed_with_their_item_number_and_redacted(ctx, isolated_env):
    secret = "ghp_" + "Q" * 36
    path = write_codex_rollout(
        isolated_env["CODEX_HOME"],
        cwd="/work/shop",
        user_messages=[f"why does the zanzibar checkout fail? token {secret}"],
        assistant_messages=["the zanzibar timezone differs on CI"],
    )
    assert main(["ingest"]) == 0
    hits = search(ctx.conn, "zanzibar")
    assert {h.role for h in hits} == {"user", "assistant"}
    items = memory_items(path, "codex")
    for h in hits:
        assert h.kind == "message" and h.item is not None
        item = items[h.item - 1]  # "item N" is the N-th element of memory_items, 1-based
        assert item["role"] == h.role and "zanzibar" in json.dumps(item)
    assert secret.encode() not in index_bytes(ctx)  # only redacted text enters the database
    assert "REDACTED" in " ".join(h.snippet for h in hits if h.role == "user")


def test_memory_files_hit_with_file_and_line_and_summaries_follow_stage1(ctx):
    root = ctx.paths.memory_root
    (root / "MEMORY.md").write_text(
        "# Memory\n\n# Task Group: shop\napplies_to: cwd=/work/shop; reuse_rule=x\n\n## Task 1: cache\n"
        "- the flamingo cache must be warmed before tests\n"
    )
    (root / "memory_summary.md").write_text("v1\n## General Tips\n- nothing about birds\n")
    approve_root(root)
    with immediate(ctx.conn):
        add_output(ctx.conn, "t-1", 100, summary="# Session\nfirst line\nthe pelican build broke on arm64\n")
    hits = search_memory(ctx.conn, root, "flamingo cache")
    assert [(h.kind, h.source, h.line, h.project) for h in hits] == [("memory", "MEMORY.md", 7, "/work/shop")]
    assert hits[0].location == "MEMORY.md:7"
    pelican = search(ctx.conn, "pelican")
    assert [(h.kind, h.source, h.line) for h in pelican] == [("summary", "t-1", 3)]
    with immediate(ctx.conn):  # a new snapshot replaces the old text (trigger on stage1_outputs)
        upsert_stage1_output(ctx.conn, "t-1", 200, "- raw", "# Session\nthe heron build is fine\n", None)
    assert search(ctx.conn, "pelican") == [] and search(ctx.conn, "heron")[0].kind == "summary"
    with immediate(ctx.conn):  # INSERT OR REPLACE (no delete trigger fires) replaces the documents too
        add_output(ctx.conn, "t-1", 300, summary="the ibis build", raw="- ibis")
    assert [h.kind for h in search(ctx.conn, "heron")] == []
    assert sorted(h.kind for h in search(ctx.conn, "ibis")) == ["raw_memory", "summary"]


def test_project_filter_keeps_the_project_and_unscoped_text(ctx):
    with immediate(ctx.conn):
        add_output(ctx.conn, "a", 1, summary="okapi in shop", cwd="/work/shop")
        add_output(ctx.conn, "b", 1, summary="okapi in the shop sub folder", cwd="/work/shop/api")
        add_output(ctx.conn, "c", 1, summary="okapi in blog", cwd="/work/blog")
        add_output(ctx.conn, "d", 1, summary="okapi in shopping", cwd="/work/shopping")
        add_output(ctx.conn, "e", 1, summary="okapi in shop-api", cwd="/work/shop-api")  # same tokens as shop/api
        add_output(ctx.conn, "f", 1, summary="okapi elsewhere", cwd="/x/work/shop")
    (ctx.paths.memory_root / "memory_summary.md").write_text("v1\n- okapi everywhere\n")
    approve_root(ctx.paths.memory_root)
    refresh_memory_index(ctx.conn, ctx.paths.memory_root)
    hits = search(ctx.conn, "okapi", project=Path("/work/shop"))  # the index's project filter, every kind
    assert sorted(h.source for h in hits if h.kind == "summary") == ["a", "b"]
    assert any(h.kind == "memory" and h.source == "memory_summary.md" for h in hits)


def test_ranked_by_bm25(ctx):
    with immediate(ctx.conn):
        add_output(ctx.conn, "few", 1, summary="walrus once, then a lot of other words " * 5)
        add_output(ctx.conn, "many", 1, summary="walrus walrus walrus walrus")
    hits = search(ctx.conn, "walrus")
    assert [h.source for h in hits if h.kind == "summary"] == ["many", "few"]
    assert hits[0].score <= hits[-1].score


def test_refresh_is_incremental(ctx, isolated_env):
    write_codex_rollout(isolated_env["CODEX_HOME"], user_messages=["narwhal one"])
    assert main(["ingest"]) == 0
    stats = refresh(ctx.conn, ctx.paths.memory_root)
    assert stats.threads_indexed == 0 and stats.files_indexed == 0  # the ingest already indexed it
    write_codex_rollout(isolated_env["CODEX_HOME"], user_messages=["narwhal two"])
    assert main(["ingest"]) == 0
    assert len([h for h in search(ctx.conn, "narwhal") if h.role == "user"]) == 2
    (ctx.paths.memory_root / "MEMORY.md").write_text("- narwhal notes\n")
    approve_root(ctx.paths.memory_root)
    assert refresh(ctx.conn, ctx.paths.memory_root).files_indexed == 1
    assert refresh(ctx.conn, ctx.paths.memory_root).files_indexed == 0


def test_deleted_text_leaves_the_index(ctx):
    """Forgotten outputs, deleted threads and lines removed from a memory file leave no term in the FTS index."""
    root = ctx.paths.memory_root
    ensure_index(ctx.conn)
    with immediate(ctx.conn):
        add_output(ctx.conn, "gone", 1, summary="the qqxylophonezz incident", raw="- qqmarimbazz detail")
    (root / "MEMORY.md").write_text("- keep this\n- the qqkazoozz line\n")
    approve_root(root)
    refresh(ctx.conn, root)
    for word in ("qqxylophonezz", "qqmarimbazz", "qqkazoozz"):
        assert search(ctx.conn, word), word
    with immediate(ctx.conn):
        delete_stage1_output(ctx.conn, "gone")
        ctx.conn.execute("DELETE FROM threads WHERE id='gone'")
    (root / "MEMORY.md").write_text("- keep this\n")
    approve_root(root)
    stats = refresh(ctx.conn, root)
    assert stats.purged
    for word in ("qqxylophonezz", "qqmarimbazz", "qqkazoozz"):
        assert search(ctx.conn, word) == []
        assert word[2:-2].encode() not in index_bytes(ctx), word  # not in the FTS segments, pages or WAL
    assert search(ctx.conn, "keep")
    assert not purge_deleted(ctx.conn)  # nothing left to purge


def test_cli_search_json_and_exit_codes(ctx, capsys):
    (ctx.paths.memory_root / "MEMORY.md").write_text("- the capybara deploy runs on fridays\n")
    approve_root(ctx.paths.memory_root)
    assert main(["search", "capybara", "deploy", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["location"] == "MEMORY.md:1" and hits[0]["kind"] == "memory"
    assert main(["search", "nothing-like-this"]) == 1
    assert main(["search", "capybara"]) == 0
    assert capsys.readouterr().out.startswith("MEMORY.md:1\n")


def test_cli_search_names_a_renamed_session_by_its_title(ctx, isolated_env, capsys):
    from tests.fixtures.rollouts import write_claude_session

    sid = "5a1e0c4d-2b3f-4c6d-8e9f-0a1b2c3d4e5f"
    rename = {"type": "custom-title", "customTitle": "Sitemap hunt", "sessionId": sid}  # Claude Code's /rename line
    write_claude_session(
        isolated_env["CLAUDE_CONFIG_DIR"], session_id=sid, user_messages=["where is the okapi sitemap built?"],
        extra_lines=[rename],
    )  # fmt: skip
    write_claude_session(isolated_env["CLAUDE_CONFIG_DIR"], user_messages=["the okapi feed is slow"])
    assert main(["ingest"]) == 0
    capsys.readouterr()
    assert main(["search", "okapi"]) == 0
    out = capsys.readouterr().out
    assert f"thread {sid} item 1 (user)  “Sitemap hunt”" in out
    assert out.count("“") == 1  # a session with no title of its own is not given its first words twice
    assert main(["search", "okapi", "sitemap", "--json"]) == 0
    assert [h["title"] for h in json.loads(capsys.readouterr().out)] == ["Sitemap hunt"]


def test_very_common_words_are_filtered_but_not_ranked(ctx, monkeypatch):
    """A word in MAX_CANDIDATES documents or more still filters; ranking uses the rarer words, else recency."""
    import memtui.services.search as search_module

    monkeypatch.setattr(search_module, "MAX_CANDIDATES", 3)
    with immediate(ctx.conn):
        for i in range(6):
            extra = " yak yak yak" if i == 1 else (" yak" if i == 4 else "")
            add_output(ctx.conn, f"t{i}", 1, summary=f"common words here{extra}", raw="-", cwd=f"/work/p{i % 2}")
    common = search(ctx.conn, "common words")  # both words in 6 documents (>= 3): newest first, at most 3
    assert [h.source for h in common if h.kind == "summary"] == ["t5", "t4", "t3"]
    assert all(h.score == 0.0 for h in common)
    ranked = search(ctx.conn, "common yak")  # yak is in 2 documents: bm25 on it, the common word still filters
    assert [h.source for h in ranked] == ["t1", "t4"] and ranked[0].score < ranked[1].score
    scoped = search(ctx.conn, "common yak", project=Path("/work/p0"))
    assert [h.source for h in scoped] == ["t4"]


def test_a_snippet_cut_to_width_keeps_the_lines_trust_marker_whole_and_no_hidden_character():
    """Issue 32.2: a 200-character cut dropped the [trust:…; injection?] marker at the end of a long line."""
    from memtui.services.search import SNIPPET_CHARS, _snippet

    marker = "[trust:observed; injection? shell, item 5]"
    line = "- always\u200b run the\u202e installer " + "word " * 80 + marker
    shown = _snippet(line, 1)
    assert shown.endswith(marker) and len(shown) <= SNIPPET_CHARS
    assert "\u200b" not in shown and "\u202e" not in shown


def test_a_memory_line_holding_the_query_ranks_above_messages(ctx, isolated_env):
    """A session that says the words again and again outscores a MEMORY.md line in bm25; the memory line comes first
    (issue 33.7: "MEMORY.md lines holding the query rank below transcript messages")."""
    write_codex_rollout(
        isolated_env["CODEX_HOME"],
        cwd="/work/shop",
        user_messages=["quokka quokka timezone? quokka timezone quokka"] * 3,
        assistant_messages=["quokka timezone quokka timezone quokka"],
    )
    assert main(["ingest"]) == 0
    (ctx.paths.memory_root / "MEMORY.md").write_text(
        "# Memory\n\n## Task 1: checkout\n- run the quokka suite with TZ=UTC: its timezone differs on CI, and the "
        "snapshot dates shift by a day when the machine is east of Greenwich, which fails every later step\n"
    )
    approve_root(ctx.paths.memory_root)
    hits = search_memory(ctx.conn, ctx.paths.memory_root, "quokka timezone")
    assert {h.kind for h in hits} == {"memory", "message"}
    assert hits[0].kind == "memory" and hits[0].location == "MEMORY.md:4"
    assert all(h.kind == "message" for h in hits[1:])
