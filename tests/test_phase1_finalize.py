"""One finalize for Phase 1: the synchronous run and a collected batch store an extraction through the same two
calls (``finalize.prepare``, ``finalize.store``), with the same result for the same reply.

Real model calls on 127.0.0.1 (the chat server and the batch server), real SQLite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.services.batch import ops
from memtui.services.context import open_context
from memtui.services.phase1 import finalize
from memtui.services.phase1.extractor import StageOneOutput
from memtui.services.phase1.run import run_phase1
from memtui.state.jobs import try_claim_stage1_job
from memtui.state.outputs import get_stage1_output
from tests.support.batch_server import VALID_OUTPUT, BatchServer, ok
from tests.support.chat_server import reply_json
from tests.test_phase1_run import job, runs, seed

SECRET = "sk-proj" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
REPLY = {**VALID_OUTPUT, "raw_memory": VALID_OUTPUT["raw_memory"] + f"- the deploy key is {SECRET}\n"}
MEMTUI = Path(__file__).resolve().parents[1] / "memtui"


@pytest.fixture
def home(isolated_env, frozen_clock):
    ctx = open_context()
    yield ctx, isolated_env["CODEX_HOME"]
    ctx.close()


@pytest.fixture
def calls(monkeypatch):
    seen: list[tuple[str, str]] = []
    real_prepare, real_store = finalize.prepare, finalize.store

    def prepare(extraction, counts, items=None):
        seen.append(("prepare", ""))
        return real_prepare(extraction, counts, items)

    def store(conn, thread_id, token, *args, **kwargs):
        out = real_store(conn, thread_id, token, *args, **kwargs)
        seen.append(("store", thread_id))
        return out

    monkeypatch.setattr(finalize, "prepare", prepare)
    monkeypatch.setattr(finalize, "store", store)
    return seen


def _stored(conn, thread_id: str) -> tuple[str, str, str]:
    out = get_stage1_output(conn, thread_id)
    (run,) = runs(conn, thread_id)
    return out["raw_memory"], out["rollout_summary"], run["redactions"]


def test_sync_and_batch_finalize_through_the_same_calls_with_the_same_result(home, calls, chat_server, monkeypatch):
    ctx, _ = home
    first, second = seed(home, 2)
    chat_server.script(reply_json(REPLY))
    summary = run_phase1(open_context({"base_url": chat_server.base_url}), thread_id=first)
    assert summary.succeeded == 1 and calls == [("prepare", ""), ("store", first)]

    calls.clear()
    with BatchServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
        monkeypatch.setenv("MEMTUI_PROVIDER", "openai")
        srv.handler = lambda cid, body: ok(REPLY)
        ops.submit(open_context())
        assert ops.collect(open_context()).succeeded == 1
    assert calls == [("prepare", ""), ("store", second)]

    sync, batch = _stored(ctx.conn, first), _stored(ctx.conn, second)
    assert SECRET not in sync[0] and "[REDACTED_SECRET]" in sync[0]
    assert sync == batch  # the same reply is stored the same way, redaction counts included
    assert job(ctx.conn, first)["status"] == job(ctx.conn, second)["status"] == "done"


def test_a_lost_lease_stores_nothing_and_is_no_no_op(home):
    ctx, _ = home
    (t,) = seed(home)

    claim = try_claim_stage1_job(ctx.conn, t, "me", 1, 600, None)
    out = finalize.redact_output(StageOneOutput(**REPLY), {})
    for empty in (False, True):
        given = out.model_copy(update={"raw_memory": ""}) if empty else out
        stored = finalize.store(ctx.conn, t, "not-" + str(claim.ownership_token), 1, given)
        assert (stored.outcome, stored.noop, stored.error) == ("lost_lease", 0, finalize.LOST_LEASE)
    assert get_stage1_output(ctx.conn, t) is None


def test_only_finalize_stores_a_phase1_output():
    offenders = [
        f"{p.relative_to(MEMTUI)}:{n}"
        for p in MEMTUI.rglob("*.py")
        if p.relative_to(MEMTUI).as_posix() not in ("services/phase1/finalize.py", "state/jobs.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "mark_stage1_job_succeeded" in line
    ]
    assert offenders == []
