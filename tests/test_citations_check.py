"""Validation of citations against the memory root and the index, and ``memtui cite check``."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from memtui.adapters.memroot.approved import published_dir
from memtui.cli import main
from memtui.core.paths import resolve_paths
from memtui.services.citations import CitationEntry, MemoryCitation
from memtui.services.citations.check import check_citation, check_entry, check_ids, hash_lines
from memtui.services.citations.usage import record_citation
from memtui.state.db import connect
from tests.conftest import approve_root

ID_A = "019c6e27-e55b-73d1-87d8-4e01f1f75043"
ID_B = "019dff00-1234-7abc-8def-001122334455"


@pytest.fixture
def root() -> Path:
    root = resolve_paths().memory_root
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("# Memory\n\n## shop-api\nCI runs in UTC\n\n   \n")
    approve_root(root)  # citations are checked against the approved memory agents read
    return root


@pytest.fixture
def conn() -> sqlite3.Connection:
    return connect(resolve_paths().state_db)


def add_thread(conn: sqlite3.Connection, tid: str, with_memory: bool = False) -> None:
    conn.execute(
        "INSERT INTO threads(id, source_kind, path, session_source, updated_at, ingested_at) VALUES (?,?,?,?,?,?)",
        (tid, "codex", f"/r/{tid}.jsonl", "cli", 1, 1),
    )
    if with_memory:
        conn.execute(
            "INSERT INTO stage1_outputs(thread_id, source_updated_at, raw_memory, rollout_summary, generated_at) "
            "VALUES (?, 1, 'raw', 'summary', 1)",
            (tid,),
        )


def entry(path: str = "MEMORY.md", start: int = 3, end: int = 4) -> CitationEntry:
    return CitationEntry(path=path, line_start=start, line_end=end, note="n")


def test_entry_statuses(root):
    assert check_entry(root, entry()).status == "ok"
    assert check_entry(root, entry("nope.md")).status == "missing_file"
    assert check_entry(root, entry("rollout_summaries")).status == "missing_file"  # not a file
    assert check_entry(root, entry(start=4, end=7)).status == "out_of_range"  # the file has 6 lines
    assert check_entry(root, entry(start=0, end=1)).status == "out_of_range"  # lines start at 1
    assert check_entry(root, entry(start=4, end=3)).status == "out_of_range"
    assert check_entry(root, entry(start=5, end=6)).status == "blank_lines"
    assert check_entry(root, entry(start=6, end=6)).status == "blank_lines"  # whitespace only


def test_crlf_and_the_absolute_path_of_the_published_copy(root):
    (root / "skills").mkdir()
    (root / "skills" / "crlf.md").write_bytes(b"one\r\ntwo\r\n")
    approve_root(root)
    check = check_entry(root, entry("skills/crlf.md", 1, 2))
    assert check.status == "ok" and check.text_hash == hash_lines(["one", "two"])
    published = published_dir(root)
    assert check_entry(root, entry(str(published / "MEMORY.md"))).status == "ok"
    assert check_entry(root, entry(str(root / "MEMORY.md"))).status == "ok"


SECRET = "DB_PASSWORD=hunter2-prod"


@pytest.mark.parametrize("how", ["absolute", "escape", "escape through the published copy", "not a memory file"])
def test_a_file_outside_the_approved_memory_is_never_read_or_hashed(root, tmp_path, how):
    """Issue 32.3: memory_cite was a confirmation oracle for any file the process could read."""
    secret = tmp_path / "prod.env"
    secret.write_text(f"# prod\n{SECRET}\n")
    secret.chmod(0o600)
    (root / "tombstones.md").write_text(f"- {SECRET}\n")
    approve_root(root)
    path = {
        "absolute": str(secret),
        "escape": f"../../{secret.name}",
        "escape through the published copy": str(published_dir(root) / ".." / ".." / secret.name),
        "not a memory file": "tombstones.md",
    }[how]
    check = check_entry(root, entry(path, 2, 2))
    assert check.status == "missing_file" and "not in the approved memory agents read" in check.detail
    assert check.text_hash is None and check.resolved is None


def test_stale_when_cited_lines_changed_since_recorded(root, conn):
    citation = MemoryCitation(entries=[entry()], rollout_ids=[])
    record_citation(conn, citation, "manual", "k1", memory_root=root)
    assert check_entry(root, entry(), conn).status == "ok"
    (root / "MEMORY.md").write_text("# Memory\n\n## shop-api\nCI runs in Europe/Lisbon\n\n   \n")
    approve_root(root)
    stale = check_entry(root, entry(), conn)
    assert stale.status == "stale"
    # Another range of the same file is judged on its own record (none here).
    assert check_entry(root, entry(start=1, end=1), conn).status == "ok"
    # Recording again makes the current text the reference.
    record_citation(conn, citation, "manual", "k2", memory_root=root)
    assert check_entry(root, entry(), conn).status == "ok"


def test_rollout_ids_resolve_to_indexed_threads(conn):
    add_thread(conn, ID_A, with_memory=True)
    add_thread(conn, ID_B)
    checks = check_ids(conn, [ID_A.upper(), ID_B, "019e0000-0000-7000-8000-000000000000", "not-a-uuid"])
    assert [(c.status, c.has_memory) for c in checks] == [
        ("ok", True),
        ("ok", False),
        ("unknown", False),
        ("not_uuid", False),
    ]
    assert checks[0].thread_id == ID_A


def test_report_is_invalid_when_any_entry_is(root, conn):
    good = check_citation(root, MemoryCitation(entries=[entry()], rollout_ids=["x"]), conn)
    assert good.ok  # ids never make a report invalid; they are reported per id
    bad = check_citation(root, MemoryCitation(entries=[entry(), entry("nope.md")]), conn)
    assert not bad.ok and [e.entry.path for e in bad.invalid_entries] == ["nope.md"]


ANSWER = f"""Done.
<oai-mem-citation>
<citation_entries>
MEMORY.md:3-4|note=[tz | pitfall]
missing.md:1-2|note=[gone]
broken line
</citation_entries>
<rollout_ids>
{ID_A}
</rollout_ids>
</oai-mem-citation>"""


def test_cli_check_table_json_and_exit_codes(root, conn, tmp_path, capsys, monkeypatch):
    add_thread(conn, ID_A, with_memory=True)
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER)
    assert main(["cite", "check", str(answer)]) == 1
    out = capsys.readouterr().out
    assert "ok" in out and "missing file" in out and "tz | pitfall" in out and "dropped 1" in out
    assert main(["cite", "check", str(answer), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [e["status"] for e in data["entries"]] == ["ok", "missing_file"]
    assert data["rollout_ids"][0]["status"] == "ok" and data["dropped_lines"] == 1

    answer.write_text(ANSWER.replace("missing.md:1-2|note=[gone]\n", ""))
    assert main(["cite", "check", str(answer)]) == 0

    monkeypatch.setattr("sys.stdin", io.StringIO("no citation at all"))
    assert main(["cite", "check", "-"]) == 1
    assert "no citation" in capsys.readouterr().err
    assert main(["cite", "check", str(tmp_path / "absent.txt")]) == 2


def test_cli_parse_prints_json(tmp_path, capsys):
    answer = tmp_path / "a.txt"
    answer.write_text(ANSWER)
    assert main(["cite", "parse", str(answer)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["citation"]["entries"][0] == {
        "path": "MEMORY.md",
        "line_start": 3,
        "line_end": 4,
        "note": "tz | pitfall",
    }
    assert data["dropped_lines"] == 1 and data["thread_ids"] == [ID_A]


def test_cli_parse_accepts_json_flag_as_documented(tmp_path, capsys):
    answer = tmp_path / "a.txt"
    answer.write_text(ANSWER)
    assert main(["cite", "parse", str(answer), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["thread_ids"] == [ID_A]


def test_a_citation_is_checked_against_the_approved_memory_agents_read_not_the_working_tree(root, conn):
    """Agents read the approved copy; an uncommitted edit (or a run awaiting review) that shifts the lines does not
    turn their correct citation into a wrong one, and lines only the working tree holds are not citable."""
    from memtui.adapters.memroot.approved import published_dir
    from memtui.services.context import open_context
    from memtui.services.phase2.review import baseline_commit

    baseline_commit(open_context())  # MEMORY.md as the fixture wrote it becomes the approved baseline
    assert (published_dir(root) / "MEMORY.md").is_file()
    (root / "MEMORY.md").write_text("# Memory\n\nunapproved 1\nunapproved 2\n\n## shop-api\nCI runs in UTC\n\nmore\n")
    approved_line = check_entry(root, entry(start=4, end=4), conn)
    assert approved_line.status == "ok" and approved_line.text_hash == hash_lines(["CI runs in UTC"])
    assert check_entry(root, entry(start=9, end=9), conn).status == "out_of_range"  # only the working tree has it
    absolute = check_entry(root, entry(str(root / "MEMORY.md"), 4, 4), conn)
    assert absolute.text_hash == hash_lines(["CI runs in UTC"])
