"""Secrets planted everywhere a rollout and a model can put them never reach MEMTUI_HOME nor a model request.

The 50 fake secrets of ``tests/fixtures/secrets.py`` go into user messages, tool outputs and assistant answers of
a rollout, into the Phase 1 model's reply, into the consolidation agent's file writes and into a recorded
citation. Afterwards every byte under MEMTUI_HOME (the database after a WAL checkpoint, memory files, git objects,
logs) and every request body the loopback server received is searched for each of them.
"""

from __future__ import annotations

from memtui.adapters.redact import redact
from memtui.services.citations import parse_citations, record_citation
from memtui.services.ingest import run_ingest
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from tests.fixtures.redaction_eval import FP_TARGET, corpus
from tests.fixtures.rollouts import write_claude_session, write_codex_rollout
from tests.fixtures.secrets import POSITIVES
from tests.reliability import figures
from tests.reliability.harness import IDLE, NOW, Home, find_leaks, frozen, home_blobs
from tests.support.chat_server import ChatServer, Reply, reply_json, reply_text, reply_tool_calls

SECRETS = [s.secret for s in POSITIVES]
CONTEXTS = [s.context for s in POSITIVES]
TID = "019e0a1b-2c3d-7e4f-8a9b-00000000beef"


def citation_answer(note: str) -> str:
    return (
        "Done.\n<oai-mem-citation>\n<citation_entries>\n"
        f"MEMORY.md:1-2|note=[{note}]\n"
        f"</citation_entries>\n<rollout_ids>\n{TID}\n</rollout_ids>\n</oai-mem-citation>"
    )


def model(body: dict) -> Reply:
    """Phase 1 echoes every secret back; the agent writes them into the memory files with every write tool."""
    everything = "\n".join(CONTEXTS)
    if "response_format" in body:
        return reply_json(
            {
                "rollout_summary": "# Summary\n" + everything,
                "rollout_slug": SECRETS[0][:40],
                "raw_memory": "---\ndescription: keys\n---\n" + everything,
            }
        )
    turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    if turn == 0:
        return reply_tool_calls(
            ("read_file", {"path": "raw_memories.md"}),
            ("write_file", {"path": "MEMORY.md", "content": "# Task Group: keys\n" + everything}),
            ("write_file", {"path": "memory_summary.md", "content": "v1\n" + "\n".join(CONTEXTS[:10])}),
            ("write_file", {"path": "extensions/notes.md", "content": CONTEXTS[-1]}),
        )
    if turn == 1:
        return reply_tool_calls(
            ("replace_in_file", {"path": "MEMORY.md", "old": "# Task Group: keys", "new": CONTEXTS[3]}),
            ("read_file", {"path": "MEMORY.md"}),
            ("search", {"query": "key"}),
        )
    return reply_text("Consolidated. The keys were " + " ".join(SECRETS[:5]))


def test_no_planted_secret_reaches_memtui_home_or_a_model_request(isolated_env):
    home = Home(isolated_env["MEMTUI_HOME"].parent)
    write_codex_rollout(
        home.codex,
        thread_id=TID,
        user_messages=CONTEXTS[0::3],
        tool_calls=[{"name": "exec_command", "output": c} for c in CONTEXTS[1::3]],
        assistant_messages=[*CONTEXTS[2::3][:-1], citation_answer(CONTEXTS[2::3][-1])],
        git={"commit_hash": "3f2c9e1", "branch": "main", "repository_url": f"https://ana:{SECRETS[-1]}@git.example"},
        mtime=IDLE,
    )
    write_claude_session(
        home.claude,
        user_messages=CONTEXTS[::2],
        assistant_messages=CONTEXTS[1::2],
        tool_calls=[{"name": "Bash", "input": {"command": CONTEXTS[5]}, "output": CONTEXTS[7]}],
        summary=CONTEXTS[9],
        mtime=IDLE - 1,
    )
    with ChatServer(handler=model) as server, frozen(NOW):
        ctx = home.context(server.base_url)
        run_ingest(ctx)
        summary = run_phase1(ctx)
        assert summary.succeeded == 2, summary
        result = run_phase2(ctx, force=True)
        assert result.outcome == "awaiting_review", result.reason
        review.approve(ctx)
        citation = parse_citations(citation_answer(CONTEXTS[11])).citation
        record_citation(ctx.conn, citation, "manual", "manual:secrets", memory_root=home.root)
        ctx.close()
        requests = [("request body", raw) for raw in server.raw_requests]
    assert len(requests) >= 5
    stored = list(home_blobs(home))
    leaks = find_leaks(stored, SECRETS) + find_leaks(requests, SECRETS)
    figures.record("secrets", trials=1, planted=len(SECRETS), leaked=len({s for s, _ in leaks}))
    assert not leaks, sorted({w for _, w in leaks})
    assert (home.root / "MEMORY.md").is_file() and "[REDACTED_SECRET]" in (home.root / "MEMORY.md").read_text()


def test_false_positive_rate_on_the_held_out_negatives():
    """Counted on the held-out corpus (never used to tune the rules), not on the tuning examples."""
    negatives = corpus().NEGATIVES
    changed = [n for n in negatives if redact(n).text != n]
    figures.record("secrets", negatives=len(negatives), fp=len(changed))
    assert len(changed) / len(negatives) <= FP_TARGET, changed
