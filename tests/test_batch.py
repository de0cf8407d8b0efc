"""Bulk Phase 1: the real openai client against the loopback Files/Batches server, real SQLite, real rollouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtui.adapters.llm.backends.openai_http import OpenAIHttpBackend
from memtui.adapters.llm.structured import request_body
from memtui.cli import main
from memtui.domain.render import render_items
from memtui.services.batch import ops, remote
from memtui.services.batch import prepare as prepare_mod
from memtui.services.batch.model import input_hash
from memtui.services.context import open_context
from memtui.services.phase1.eligibility import select_candidates
from memtui.services.phase1.extractor import ModelExtractor, StageOneOutput, read_items
from memtui.state.outputs import get_stage1_output
from tests.conftest import FROZEN_NOW
from tests.support.batch_server import VALID_OUTPUT, BatchServer, LineReply, ok
from tests.test_phase1_run import job, runs, seed

SECRET = "sk-proj" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


@pytest.fixture
def home(isolated_env, frozen_clock):
    ctx = open_context()
    yield ctx, isolated_env["CODEX_HOME"]
    ctx.close()


@pytest.fixture
def server(monkeypatch):
    with BatchServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
        monkeypatch.setenv("MEMTUI_PROVIDER", "openai")
        yield srv


def fresh():
    return open_context()


def input_lines(server: BatchServer, batch_id: str) -> list[dict]:
    data = server.files[server.batches[batch_id]["batch"]["input_file_id"]]["data"]
    return [json.loads(x) for x in data.splitlines()]


def sub_rows(conn) -> list:
    return conn.execute("SELECT * FROM batch_submissions ORDER BY created_at, id").fetchall()


def test_submit_then_collect_stores_results_like_the_synchronous_path(home, server):
    ctx, _ = home
    ids = seed(home, 3)
    server.polls_to_complete = 2  # a slow batch: in progress at the first poll
    server.handler = lambda cid, body: ok({**VALID_OUTPUT, "raw_memory": VALID_OUTPUT["raw_memory"] + f"- {SECRET}\n"})
    s = ops.submit(fresh())
    assert (s.prepared.claimed, s.prepared.requests, len(s.submitted)) == (3, 3, 1)
    (batch_id,) = s.submitted
    (sub,) = sub_rows(ctx.conn)
    assert (sub["status"], sub["batch_id"], sub["requests"], sub["kind"]) == ("submitted", batch_id, 3, "openai")
    assert server.batches[batch_id]["batch"]["completion_window"] == "24h"
    assert server.batches[batch_id]["batch"]["metadata"] == {"memtui_submission": sub["id"]}
    # One line per rollout: custom_id = thread id + hash of the filtered input; the body of the synchronous call.
    extractor = ModelExtractor(ctx.settings, OpenAIHttpBackend(ctx.settings))
    candidates = {c.thread_id: c for c in select_candidates(ctx.conn, ctx.settings, all_threads=True)[0]}
    for line in input_lines(server, batch_id):
        tid, digest = line["custom_id"].rsplit(":", 1)
        assert (
            digest == input_hash(render_items(read_items(candidates[tid])))
            and line["url"] == "/v1/chat/completions"
            and line["method"] == "POST"
        )
        message, _ = extractor.prepare(candidates[tid])
        assert line["body"] == request_body(
            ctx.settings.extract_model, extractor.system, message, StageOneOutput, "stage_one_output"
        )
    for t in ids:  # claimed with a lease for the batch window
        assert job(ctx.conn, t)["status"] == "running"
        assert job(ctx.conn, t)["lease_until"] - FROZEN_NOW == ctx.settings.batch_lease_hours * 3600
    again = ops.submit(fresh())  # a second run while the batch is out: nothing is sent twice
    assert again.collected.still_running == 1 and again.prepared.requests == 0 and again.submitted == []
    assert again.prepared.skipped.get("running") == 3 and len(server.batches) == 1
    c = ops.collect(fresh())
    assert (c.succeeded, c.failed, c.collected_submissions) == (3, 0, 1), c
    for t in ids:
        out = get_stage1_output(ctx.conn, t)
        assert SECRET not in out["raw_memory"] and "[REDACTED_SECRET]" in out["raw_memory"]
        assert job(ctx.conn, t)["status"] == "done"
        (r,) = runs(ctx.conn, t)
        assert r["outcome"] == "succeeded" and r["prompt_tokens"] == 1000 and '"openai_key"' in r["redactions"]
    assert sub_rows(ctx.conn)[0]["status"] == "collected"
    assert ops.collect(fresh()).checked == 0  # nothing left to poll


def test_partial_failures_schema_failures_and_an_expired_batch(home, server):
    ctx, _ = home
    ids = seed(home, 5)
    replies = {
        ids[0]: ok(),
        ids[1]: ok({**VALID_OUTPUT, "confidence": 0.9}),  # unknown field: a schema failure, retried later
        ids[2]: LineReply(status=500, message="upstream overloaded"),
        ids[3]: LineReply(error_code="invalid_request", message="bad body"),
        ids[4]: ok(),
    }
    order = []

    def handler(cid, body):
        order.append(cid.split(":")[0])
        return replies[cid.split(":")[0]]

    server.handler = handler
    server.expire_after = 4  # the fifth request never runs: batch_expired in the error file
    ops.submit(fresh())
    c = ops.collect(fresh())
    ran = order[:4]
    never = [t for t in ids if t not in ran]
    assert (c.succeeded + c.failed, c.released) == (4, 1), c
    conn = ctx.conn
    for t in ran:
        row = job(conn, t)
        if t == ids[0] or t == ids[4]:
            assert row["status"] == "done"
        else:
            assert row["status"] == "error" and row["retry_remaining"] == 2 and row["retry_at"] > FROZEN_NOW
    if ids[1] in ran:
        assert "unexpected field 'confidence'" in job(conn, ids[1])["last_error"]
    if ids[2] in ran:
        assert "HTTP 500" in job(conn, ids[2])["last_error"]
    (t,) = never
    row = job(conn, t)  # released: no retry spent, claimable again at once
    assert (row["status"], row["retry_remaining"], row["lease_until"], row["retry_at"]) == ("pending", 3, None, None)
    assert "batch_expired" in row["last_error"]
    assert runs(conn, t)[0]["outcome"] == "failed"
    nxt = ops.submit(fresh())
    assert nxt.prepared.requests == 1 and input_lines(server, nxt.submitted[0])[0]["custom_id"].startswith(t)


def test_a_result_whose_rollout_changed_is_never_stored(home, server):
    ctx, codex = home
    (t,) = seed(home)
    ops.submit(fresh())
    path = next(codex.rglob(f"*{t}.jsonl"))
    with path.open("a") as fh:
        fh.write(json.dumps({"timestamp": "2026-07-10T06:00:00.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "one more thing"}]}}) + "\n")  # fmt: skip
    c = ops.collect(fresh())
    assert (c.stale, c.succeeded) == (1, 0)
    assert get_stage1_output(ctx.conn, t) is None
    assert "rollout changed" in job(ctx.conn, t)["last_error"]


def test_a_crash_after_create_before_storing_the_id_never_submits_twice(home, server, monkeypatch):
    ctx, _ = home
    seed(home, 2)
    real_set = remote._set

    def crash_when_submitted(conn, sub_id, **cols):
        if cols.get("status") == "submitted":
            raise KeyboardInterrupt("killed right after POST /v1/batches")
        real_set(conn, sub_id, **cols)

    monkeypatch.setattr(remote, "_set", crash_when_submitted)
    with pytest.raises(KeyboardInterrupt):
        ops.submit(fresh())
    assert len(server.batches) == 1 and sub_rows(ctx.conn)[0]["status"] == "uploaded"
    monkeypatch.setattr(remote, "_set", real_set)
    s = ops.submit(fresh())  # resumes: finds the batch by its metadata, creates none
    assert len(server.batches) == 1 and any("submitted as" in r for r in s.collected.resumed)
    assert s.prepared.requests == 0 and s.collected.succeeded == 2  # resumed, polled and collected in one go


def test_a_crash_while_preparing_releases_the_claims(home, server, monkeypatch):
    ctx, _ = home
    ids = seed(home, 3)
    real = ModelExtractor.prepare_items
    calls = []

    def dying(self, job, items, rendered=None):
        calls.append(job.thread_id)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed while preparing")
        return real(self, job, items, rendered)

    monkeypatch.setattr(ModelExtractor, "prepare_items", dying)
    with pytest.raises(KeyboardInterrupt):
        ops.submit(fresh())
    assert sum(job(ctx.conn, t)["status"] == "running" for t in ids) == 3 and not server.batches
    monkeypatch.setattr(ModelExtractor, "prepare_items", real)
    s = ops.submit(fresh())
    assert any("abandoned" in r for r in s.collected.resumed) and s.collected.released == 3
    assert s.prepared.requests == 3 and len(server.batches) == 1
    by_status = {r["status"]: r for r in sub_rows(ctx.conn)}
    assert set(by_status) == {"abandoned", "submitted"}
    assert not Path(by_status["abandoned"]["input_path"]).exists()
    assert ops.collect(fresh()).succeeded == 3


def test_files_split_at_the_request_limit(home, server, monkeypatch):
    seed(home, 5)
    monkeypatch.setattr(prepare_mod, "MAX_REQUESTS_PER_FILE", 2)
    s = ops.submit(fresh())
    assert [len(input_lines(server, b)) for b in s.submitted] == [2, 2, 1]
    assert ops.collect(fresh()).succeeded == 5


def test_files_split_at_the_byte_limit(home, server, monkeypatch):
    ctx, _ = home
    seed(home, 3)
    extractor = ModelExtractor(ctx.settings, OpenAIHttpBackend(ctx.settings))
    first = select_candidates(ctx.conn, ctx.settings, all_threads=True)[0][0]
    message, _ = extractor.prepare(first)
    body = request_body(ctx.settings.extract_model, extractor.system, message, StageOneOutput, "stage_one_output")
    limit = int(len(json.dumps(body)) * 1.5)  # room for one request per file, never two
    monkeypatch.setattr(prepare_mod, "MAX_BYTES_PER_FILE", limit)
    s = ops.submit(fresh())
    assert len(s.submitted) == 3 and all(Path(f).stat().st_size <= limit for f in s.prepared.files)


def test_cancel_releases_what_never_ran(home, server):
    ctx, _ = home
    ids = seed(home, 2)
    server.polls_to_complete = 100
    ops.submit(fresh())
    assert any("cancelling" in line for line in ops.cancel(fresh()))
    c = ops.collect(fresh())
    assert (c.released, c.succeeded) == (2, 0)
    assert all(job(ctx.conn, t)["status"] == "pending" and job(ctx.conn, t)["retry_remaining"] == 3 for t in ids)


def test_export_then_import_for_vllm_run_batch(home, tmp_path, monkeypatch, capsys):
    ctx, _ = home
    ids = seed(home, 3)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000000000000000")  # a model name, no server needed
    out = tmp_path / "requests.jsonl"
    assert main(["phase1", "--export-batch", str(out)]) == 0
    assert "vllm run-batch -i" in capsys.readouterr().out
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 3 and {x["custom_id"].split(":")[0] for x in lines} == set(ids)
    assert main(["phase1", "--export-batch", str(out)]) == 2  # never overwrites
    capsys.readouterr()
    results = tmp_path / "results.jsonl"

    def result(line, content):
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}  # fmt: skip
        return json.dumps({"id": "r", "custom_id": line["custom_id"], "response": {"status_code": 200, "body": body},
                           "error": None})  # fmt: skip

    results.write_text(
        result(lines[0], json.dumps(VALID_OUTPUT)) + "\n" + result(lines[1], "not json") + "\n"
        + json.dumps({"custom_id": "unknown:0", "response": None, "error": {"code": "x", "message": "y"}}) + "\n"
    )  # fmt: skip
    assert main(["phase1", "--import-batch", str(results), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["succeeded"], summary["failed"], summary["unmatched"], summary["still_running"]) == (1, 1, 1, 1)
    third = lines[2]["custom_id"].split(":")[0]
    assert job(ctx.conn, third)["status"] == "running"  # not in this file: still claimed, import it later
    results.write_text(result(lines[2], json.dumps(VALID_OUTPUT)) + "\n")
    assert main(["phase1", "--import-batch", str(results), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["succeeded"] == 1
    assert [r["status"] for r in sub_rows(ctx.conn)] == ["collected"]


def test_batch_cli_status_collect_cancel(home, server, capsys):
    seed(home, 2)
    server.polls_to_complete = 3
    assert main(["phase1", "--batch", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prepared"]["requests"] == 2 and len(out["submitted"]) == 1
    assert main(["batch", "status", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["remote_status"] == "in_progress" and row["counts"]["total"] == 2 and row["pending"] == 2
    assert main(["batch", "collect"]) == 0
    assert "succeeded" in capsys.readouterr().out
    assert main(["batch", "cancel", "nope"]) == 2


def test_batch_needs_an_api(home, capsys):
    seed(home)
    assert main(["phase1", "--batch"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


@pytest.mark.parametrize("crash_at", ["uploaded", "submitted"])
def test_every_crash_point_of_submit_resumes_without_a_second_batch(home, server, monkeypatch, crash_at):
    ctx, _ = home
    ids = seed(home, 3)
    real_set = remote._set

    def crash(conn, sub_id, **cols):
        if cols.get("status") == crash_at:
            raise KeyboardInterrupt(f"killed before recording status {crash_at}")
        real_set(conn, sub_id, **cols)

    monkeypatch.setattr(remote, "_set", crash)
    with pytest.raises(KeyboardInterrupt):
        ops.submit(fresh())
    monkeypatch.setattr(remote, "_set", real_set)
    c = ops.collect(fresh())
    assert len(server.batches) == 1 and c.succeeded == 3
    assert all(len(runs(ctx.conn, t)) == 1 for t in ids)  # one attempt row per rollout, none duplicated


def test_a_crash_in_the_middle_of_collect_finalizes_each_result_once(home, server, monkeypatch):
    from memtui.services.batch import apply

    ctx, _ = home
    ids = seed(home, 4)
    ops.submit(fresh())
    real = apply.apply_one
    seen = []

    def dies_after_second(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out)
        if len(seen) == 2:
            raise KeyboardInterrupt("killed after finalizing, before recording the request")
        return out

    monkeypatch.setattr(apply, "apply_one", dies_after_second)
    with pytest.raises(KeyboardInterrupt):
        ops.collect(fresh())
    monkeypatch.setattr(apply, "apply_one", real)
    c = ops.collect(fresh())
    assert (c.recovered, c.succeeded) == (1, 2), c
    assert all(get_stage1_output(ctx.conn, t) is not None for t in ids)
    assert all(len(runs(ctx.conn, t)) == 1 and runs(ctx.conn, t)[0]["outcome"] == "succeeded" for t in ids)


def test_an_unreachable_api_is_a_clear_error_and_the_prepared_file_is_sent_next_time(home, monkeypatch, capsys):
    ctx, _ = home
    seed(home, 2)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
    assert main(["phase1", "--batch"]) == 2
    assert "memtui: Connection error" in capsys.readouterr().err
    assert [r["status"] for r in sub_rows(ctx.conn)] == ["prepared"]  # the work is kept, the claims held
    with BatchServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        s = ops.submit(fresh())
        assert len(srv.batches) == 1 and s.collected.succeeded == 2 and s.prepared.requests == 0


def test_a_rollout_touched_but_unchanged_still_matches_and_its_result_is_stored(home, server):
    import os

    ctx, codex = home
    (t,) = seed(home)
    ops.submit(fresh())
    path = next(codex.rglob(f"*{t}.jsonl"))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # same bytes, new mtime: re-filtered
    c = ops.collect(fresh())
    assert (c.succeeded, c.stale) == (1, 0) and get_stage1_output(ctx.conn, t) is not None


def test_a_no_op_result_deletes_nothing_new_and_records_the_no_op(home, server):
    ctx, _ = home
    (t,) = seed(home)
    server.handler = lambda cid, body: ok({"rollout_summary": "", "rollout_slug": None, "raw_memory": ""})
    ops.submit(fresh())
    c = ops.collect(fresh())
    assert (c.noop, c.succeeded) == (1, 0)
    assert get_stage1_output(ctx.conn, t) is None and job(ctx.conn, t)["status"] == "done"
    (r,) = runs(ctx.conn, t)
    assert (r["outcome"], r["noop"]) == ("no_output", 1)


def test_jobs_out_in_a_batch_do_not_use_the_synchronous_running_cap(home, server, chat_server):
    from memtui.services.phase1.run import run_phase1
    from tests.support.chat_server import reply_json

    ids = seed(home, 3)
    ops.submit(fresh(), limit=2)
    chat_server.script(reply_json(VALID_OUTPUT))
    s = run_phase1(open_context({"base_url": chat_server.base_url, "concurrency": 1}))
    assert (s.claimed, s.succeeded, s.skipped.get("running")) == (1, 1, 2)
    assert sum(job(home[0].conn, t)["status"] == "done" for t in ids) == 1


def test_a_quote_the_user_never_said_is_dropped_like_in_the_synchronous_path(home, server):
    ctx, _ = home
    (t,) = seed(home)
    forged = '- the user said: "always deploy on Fridays"\n'
    server.handler = lambda cid, body: ok({**VALID_OUTPUT, "raw_memory": VALID_OUTPUT["raw_memory"] + forged})
    ops.submit(fresh())
    c = ops.collect(fresh())
    assert (c.succeeded, c.dropped_quotes) == (1, 1)
    stored = get_stage1_output(ctx.conn, t)["raw_memory"]
    assert "Fridays" not in stored and "run the suite with TZ=UTC" in stored


def test_an_offline_run_after_a_collected_batch_stores_its_output_and_leaves_no_job_running(home, server, capsys):
    """Offline, then a batch result updating the output (which sets the search purge flag), then offline again: the
    UPSERT's DO UPDATE path ran the trigger's ``INSERT OR REPLACE`` of the flag as a plain INSERT (``UNIQUE
    constraint failed: meta.key``) and the job stayed running until its lease expired."""
    ctx, _ = home
    (t,) = seed(home, 1, user_text="The checkout tests fail on CI. Always run the tests with TZ=UTC in this repo.")
    assert main(["phase1", "--offline", "--thread", t]) == 0
    assert main(["phase1", "--batch", "--thread", t]) == 0
    assert main(["batch", "collect"]) == 0
    assert ctx.conn.execute("SELECT value FROM meta WHERE key='search.purge'").fetchone() is not None
    capsys.readouterr()
    code = main(["phase1", "--offline", "--thread", t, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["succeeded"] == 1, out
    row = job(ctx.conn, t)
    assert row["status"] == "done" and row["last_error"] is None
    assert get_stage1_output(ctx.conn, t)["offline"] == 1


def test_a_failure_while_storing_an_output_fails_the_job_instead_of_leaving_it_running(home, monkeypatch, capsys):
    ctx, _ = home
    (t,) = seed(home, 1, user_text="The checkout tests fail on CI. Always run the tests with TZ=UTC in this repo.")
    from memtui.services.phase1 import finalize

    def broken(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(finalize, "mark_stage1_job_succeeded", broken)
    code = main(["phase1", "--offline", "--thread", t, "--json"])
    out, _ = capsys.readouterr()
    assert code in (0, 1) and json.loads(out)["failed"] == 1
    row = job(ctx.conn, t)
    assert row["status"] != "running" and "disk full" in row["last_error"]


def test_prepare_in_worker_processes_writes_the_lines_and_rows_of_the_one_process_path(home, tmp_path):
    """The pool (claims, files and rows in this process; reading, rendering, redacting and budgeting in workers)
    writes byte for byte what the one-process path would, in candidate order; an unreadable rollout fails alike."""
    ctx, _ = home
    ids = seed(home, 7)
    candidates = select_candidates(ctx.conn, ctx.settings, all_threads=True)[0]
    Path(next(c.path for c in candidates if c.thread_id == ids[3])).unlink()  # gone: the read fails, in a worker
    extractor = ModelExtractor(ctx.settings, OpenAIHttpBackend(ctx.settings))
    model = extractor.request_model or ctx.settings.extract_model
    expected = [prepare_mod._build(extractor, c, model) for c in candidates]
    out = tmp_path / "requests.jsonl"
    s = prepare_mod.prepare(ctx.conn, ctx.settings, kind="file", out=out, all_threads=True, workers=2)
    lines = [b.line for b in expected if not isinstance(b, str)]
    assert (s.claimed, s.requests, s.failed) == (7, 6, 1)
    assert out.read_bytes() == b"".join(lines)
    rows = ctx.conn.execute("SELECT custom_id, measurements FROM batch_requests ORDER BY rowid").fetchall()
    built = [b for b in expected if not isinstance(b, str)]
    assert [(r[0], json.loads(r[1])) for r in rows] == [(b.cid, b.measurements) for b in built]
    failure = next(b for b in expected if isinstance(b, str))
    assert job(ctx.conn, ids[3])["last_error"] == failure and runs(ctx.conn, ids[3])[-1]["outcome"] == "failed"
