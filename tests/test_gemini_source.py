"""Gemini CLI sessions read as Gemini CLI's own loader reads them (chatRecordingService.ts, 0.61), on records built
as it writes them: the header, ``$set`` (and ``$set.messages``), ``$rewindTo``, a record written again under its id;
the person's words from ``displayContent``, never ``<session_context>``, ``@file`` text, ``<hook_context>``, tool
responses or the harness's continuations; the project folder, dates and sub-sessions from the files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memtui.adapters.rollouts.model import Origin, Transcript
from memtui.adapters.sources import read_transcript, registry
from memtui.adapters.sources.gemini import session
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.eligibility import select_candidates
from memtui.state.threads import get_thread

PROJECT = "/work/shop"
SID = "3ad1c600-d9f9-4164-ba00-0c5f78eaa57f"
CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "<loaded_context>\n<project_context>\n--- Context from: /work/shop/GEMINI.md ---\nGEMINI-MD-MARKER\n"
    "--- End of Context from: /work/shop/GEMINI.md ---\n</project_context>\n</loaded_context>\n</session_context>"
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def header(sid: str = SID, *, start: str = "2026-11-02T09:00:00.000Z", kind: str = "main") -> dict[str, Any]:
    return {"sessionId": sid, "projectHash": _sha(PROJECT), "startTime": start, "lastUpdated": start, "kind": kind}


def context_set(at: str = "2026-11-02T09:00:00.001Z") -> dict[str, Any]:
    message = {"id": "ctx", "timestamp": at, "type": "user", "content": [{"text": CONTEXT}]}
    return {"$set": {"messages": [message], "lastUpdated": at}}


def user(mid: str, typed: str, at: str, *, extra: tuple[str, ...] = (), display: bool = True) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": mid,
        "timestamp": at,
        "type": "user",
        "content": [{"text": typed}, *({"text": t} for t in extra)],
    }
    if display:
        record["displayContent"] = [{"text": typed}]
    return record


def gemini(mid: str, text: str, at: str, **more: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "timestamp": at,
        "type": "gemini",
        "content": text,
        "thoughts": [],
        "model": "gemini-3.8-flash",
        **more,
    }


AT_FILE = [
    "\n--- Content from referenced files ---",
    "\nContent from @notes.txt:\n",
    "FILE-CONTENT-MARKER",
    "\n--- End of content ---",
]
HOOK = "<hook_context>HOOK-MARKER</hook_context>"


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_the_users_words_come_from_display_content_and_nothing_injected_is_theirs():
    call = {
        "id": "read_file_1",
        "name": "read_file",
        "args": {"file_path": "notes.txt"},
        "result": [
            {"functionResponse": {"id": "read_file_1", "name": "read_file", "response": {"output": "TOOL-OUT"}}}
        ],
        "status": "success",
    }
    data = jsonl(
        header(),
        context_set(),
        user("u1", "Always use pnpm here. Read @notes.txt", "2026-11-02T09:00:01Z", extra=(*AT_FILE, HOOK)),
        {"$set": {"lastUpdated": "2026-11-02T09:00:01Z"}},
        gemini("g1", "", "2026-11-02T09:00:02Z"),
        gemini("g1", "", "2026-11-02T09:00:02Z", toolCalls=[call]),  # written again with its call and result
        {
            "id": "r1",
            "timestamp": "2026-11-02T09:00:03Z",
            "type": "user",
            "content": [
                {"functionResponse": {"id": "read_file_1", "name": "read_file", "response": {"output": "TOOL-OUT"}}}
            ],
        },
        gemini("g2", "It says hello.", "2026-11-02T09:00:04Z"),
        # the next-speaker check's continuation, recorded with the prompt's displayContent
        {
            "id": "c1",
            "timestamp": "2026-11-02T09:00:05Z",
            "type": "user",
            "content": [{"text": "Please continue."}],
            "displayContent": [{"text": "Always use pnpm here. Read @notes.txt"}],
        },
        gemini("g3", "Done.", "2026-11-02T09:00:06Z"),
        # an AfterAgent hook's reason sent as the next turn, again with the prompt's displayContent
        {
            "id": "c2",
            "timestamp": "2026-11-02T09:00:07Z",
            "type": "user",
            "content": [{"text": "Run the linter before you stop."}],
            "displayContent": [{"text": "Always use pnpm here. Read @notes.txt"}],
        },
        gemini("g4", "Linted.", "2026-11-02T09:00:08Z"),
        user("u2", "The port is 4000.", "2026-11-02T09:00:09Z", extra=(HOOK,), display=False),  # no displayContent
        {"id": "i1", "timestamp": "2026-11-02T09:00:10Z", "type": "info", "content": "Request cancelled."},
        {"$set": {"lastUpdated": "2026-11-02T09:00:11Z", "summary": "pnpm and the port"}},
    )
    transcript = Transcript(session.items(data))
    assert transcript.user_texts() == ["Always use pnpm here. Read @notes.txt", "The port is 4000."]
    for item in transcript:
        if item.origin is Origin.USER:
            assert not any(m in item.text for m in ("GEMINI-MD", "FILE-CONTENT", "HOOK-MARKER", "TOOL-OUT", "Please"))
    assert [i.text for i in transcript if i.origin is Origin.CONTEXT] == [HOOK, HOOK]
    assert [i.origin for i in transcript if i.origin in (Origin.TOOL_CALL, Origin.TOOL_OUTPUT)] == [
        Origin.TOOL_CALL,
        Origin.TOOL_OUTPUT,  # once: the gemini record's result, not again from the functionResponse record
    ]
    assert "TOOL-OUT" in next(i.text for i in transcript if i.origin is Origin.TOOL_OUTPUT)
    assert not any("GEMINI-MD" in i.text or "FILE-CONTENT" in i.text for i in transcript)
    assert [i.text for i in transcript if i.origin is Origin.ASSISTANT] == ["It says hello.", "Done.", "Linted."]


def test_a_person_who_types_please_continue_is_heard():
    data = jsonl(header(), context_set(), user("u1", "Please continue.", "2026-11-02T09:00:01Z", display=False))
    assert Transcript(session.items(data)).user_texts() == ["Please continue."]


def test_a_rewind_drops_its_target_and_every_later_message():
    data = jsonl(
        header(),
        context_set(),
        user("u1", "Use tabs.", "2026-11-02T09:00:01Z"),
        gemini("g1", "ok", "2026-11-02T09:00:02Z"),
        user("u2", "Actually use four spaces.", "2026-11-02T09:00:03Z"),
        gemini("g2", "ok", "2026-11-02T09:00:04Z"),
        {"$rewindTo": "u2"},
        user("u3", "Use two spaces.", "2026-11-02T09:00:05Z"),
    )
    assert Transcript(session.items(data)).user_texts() == ["Use tabs.", "Use two spaces."]
    assert Transcript(session.items(data + jsonl({"$rewindTo": "no-such-id"}))).user_texts() == []


def test_set_messages_replaces_the_conversation_as_a_resume_writes_it():
    resumed = {"$set": {"messages": [user("u1", "Use tabs.", "2026-11-02T09:00:01Z")]}}
    data = jsonl(
        header(),
        context_set(),
        user("u1", "Use tabs.", "2026-11-02T09:00:01Z"),
        header(start="2026-11-03T10:00:00Z"),  # --resume writes a second header
        resumed,
        user("u2", "And LF line ends.", "2026-11-03T10:00:01Z"),
    )
    assert Transcript(session.items(data)).user_texts() == ["Use tabs.", "And LF line ends."]


def _write(home: Path, slug: str, name: str, data: bytes, root: str | None = PROJECT) -> Path:
    folder = home / ".gemini" / "tmp" / slug
    path = folder / "chats" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if root is not None:
        (folder / ".project_root").write_text(root)
    path.write_bytes(data)
    return path


def test_ingest_finds_main_sessions_sub_agents_and_legacy_files_with_their_folder_and_dates(isolated_env):
    home = isolated_env["HOME"]
    main = _write(
        home,
        "shop",
        "session-2026-11-02T09-00-3ad1c600.jsonl",
        jsonl(
            header(),
            context_set(),
            user("u1", "Always use pnpm here.", "2026-11-02T09:00:01Z"),
            gemini("g1", "ok", "2026-11-02T09:00:02Z"),
            {"$set": {"lastUpdated": "2026-11-02T09:30:00Z"}},
        ),
    )
    sub = _write(
        home,
        "shop",
        f"{SID}/agent-7.jsonl",
        jsonl(
            header("agent-7", kind="subagent"),
            {  # as 0.61 writes a sub-agent's first prompt: its GEMINI.md first, then the parent model's words
                "id": "s1",
                "timestamp": "2026-11-02T09:00:03Z",
                "type": "user",
                "content": [
                    {"text": "\n<loaded_context>\nGEMINI-MD-MARKER\n</loaded_context>"},
                    {"text": "Find the build script."},
                ],
            },
            gemini("s2", "scripts/build.sh", "2026-11-02T09:00:04Z"),
        ),
    )
    # a folder named by the project's sha256 (before project slugs), its root known from projects.json
    legacy_root = "/work/old"
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {legacy_root: "old"}}))
    legacy = {**header("legacy-1"), "projectHash": _sha(legacy_root)}
    legacy["messages"] = [user("l1", "Never commit .env files.", "2026-10-01T08:00:00Z")]
    old = _write(
        home, _sha(legacy_root), "session-2026-10-01T08-00-legacy-1.json", json.dumps(legacy, indent=2).encode(), None
    )
    ctx = open_context()
    summary = run_ingest(ctx)
    assert summary.by_source == {"gemini": 3}
    thread = get_thread(ctx.conn, SID)
    assert thread is not None and thread.cwd == PROJECT and thread.session_source == "cli"
    assert (thread.created_at, thread.updated_at) == (1793610000, 1793611800)  # from the records, not the file
    assert thread.preview == "Always use pnpm here." and thread.model == "gemini-3.8-flash"
    agent = get_thread(ctx.conn, f"{SID}:agent-7")
    assert agent is not None and agent.session_source == "subagent" and agent.parent_thread_id == SID
    sub_items = read_transcript(sub, "gemini")
    assert sub_items.user_texts() == []
    assert (sub_items[0].origin, sub_items[0].text) == (Origin.AGENT, "Find the build script.")  # the parent model's
    kept = get_thread(ctx.conn, "legacy-1")
    assert kept is not None and kept.cwd == legacy_root
    assert read_transcript(old, "gemini").user_texts() == ["Never commit .env files."]
    candidates, skipped = select_candidates(ctx.conn, ctx.settings, all_threads=True)
    assert {c.thread_id for c in candidates} == {SID, "legacy-1"} and skipped == {"not_interactive": 1}
    assert read_transcript(main, "gemini").user_texts() == ["Always use pnpm here."]

    # Gemini CLI rewrites a resumed legacy .json as .jsonl beside it: the .json is then not a second thread.
    old.with_suffix(".jsonl").write_bytes(
        jsonl({k: v for k, v in legacy.items() if k != "messages"}, *legacy["messages"])
    )
    # its retention deletes an old session: marked missing, the row (and what was extracted) stays
    main.unlink()
    run_ingest(ctx)
    gone = get_thread(ctx.conn, SID)
    assert gone is not None and gone.ingest_status == "missing"
    assert ctx.conn.execute("SELECT COUNT(*) FROM threads WHERE id = 'legacy-1'").fetchone()[0] == 1
    ctx.close()


def test_gemini_cli_home_moves_the_home(isolated_env, tmp_path, monkeypatch):
    elsewhere = tmp_path / "gemini-cli-home"
    _write(elsewhere, "shop", "session-x.jsonl", jsonl(header("x"), user("u", "hi", "2026-11-02T09:00:01Z")))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(elsewhere))
    found = list(registry.source("gemini").discover(None))  # type: ignore[arg-type]  # the source reads no Paths
    assert [Path(f.path).name for f in found] == ["session-x.jsonl"]
    assert registry.source("gemini").instructions(None).user == elsewhere / ".gemini" / "GEMINI.md"  # type: ignore[arg-type]


def test_the_context_file_is_the_one_settings_name(isolated_env):
    source = registry.source("gemini")
    folder = isolated_env["HOME"] / ".gemini"
    assert source.instructions(None).project == "GEMINI.md"  # type: ignore[arg-type]
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}))
    found = source.instructions(None)  # type: ignore[arg-type]
    assert (found.user, found.project) == (folder / "AGENTS.md", "AGENTS.md")
    (folder / "settings.json").write_text('{"context": {"fileName": "X.md"} // a comment Gemini CLI allows\n}')
    assert source.instructions(None).project == "GEMINI.md"  # type: ignore[arg-type]  # unreadable: the default
