"""Every error-line shape the Batch API and ``vllm run-batch`` write is parsed, released and reported with its
message; a batch that fails validation keeps its ``batch.errors``; the README's ``vllm run-batch`` recipe runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.services.batch import ops
from memtui.services.batch.apply import parse_result_lines
from tests.test_batch import fresh, home, server, sub_rows  # noqa: F401  (fixtures)
from tests.test_phase1_run import job, seed

README = Path(__file__).resolve().parents[1] / "README.md"

SHAPES = [
    # vLLM: a plain-string error
    ({"error": "Model 'gpt-5.4-mini' not found"}, "Model 'gpt-5.4-mini' not found"),
    # older vLLM: a numeric code
    ({"error": {"code": 400, "message": "max_tokens is too large"}}, "max_tokens is too large"),
    # nested: the server's whole error response as the line's error
    ({"error": {"error": {"message": "context length exceeded", "code": "400"}}}, "context length exceeded"),
    # vLLM's ErrorResponse as the response body, no line error
    (
        {"response": {"status_code": 400, "body": {"object": "error", "message": "bad schema", "code": 400}}},
        "bad schema",
    ),
    # FastAPI validation detail in the body
    ({"response": {"status_code": 422, "body": {"detail": [{"msg": "field required"}]}}}, "field required"),
]


@pytest.mark.parametrize(("shape", "message"), SHAPES, ids=["string", "numeric_code", "nested", "vllm_body", "detail"])
def test_every_error_line_shape_is_parsed_released_and_reported(home, tmp_path, monkeypatch, capsys, shape, message):  # noqa: F811
    ids = seed(home, 1)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000000000000000")
    out = tmp_path / "requests.jsonl"
    assert main(["phase1", "--export-batch", str(out)]) == 0
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"id": "r", "custom_id": line["custom_id"], "response": None, **shape}) + "\n")
    parsed, bad = parse_result_lines(results.read_bytes())
    assert bad == 0 and line["custom_id"] in parsed
    capsys.readouterr()
    assert main(["phase1", "--import-batch", str(results), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["failed"], summary["unmatched"], summary["still_running"]) == (1, 0, 0)
    row = job(home[0].conn, ids[0])
    assert row["status"] == "error" and row["lease_until"] is None  # no longer claimed
    assert message in row["last_error"]


def test_a_batch_that_fails_validation_keeps_its_reason(home, server):  # noqa: F811
    ctx, _ = home
    ids = seed(home, 2)
    server.validation_errors = [{"code": "model_not_found", "message": "The model 'nope' does not exist", "line": 1}]
    ops.submit(fresh())
    c = ops.collect(fresh())
    assert c.released == 2
    assert any("model_not_found" in k and "does not exist" in k for k in c.failures), c.failures
    for t in ids:
        row = job(ctx.conn, t)
        assert row["status"] == "pending" and "The model 'nope' does not exist" in row["last_error"]
    assert "does not exist" in sub_rows(ctx.conn)[0]["detail"]


def test_the_readme_vllm_recipe_passes_the_model():
    text = "\n".join(p.read_text(encoding="utf-8") for p in [README, *sorted(README.parent.glob("docs/*.md"))])
    recipes = re.findall(r"vllm run-batch [^\n`]*", text)
    assert recipes, "the README or docs/ have a vllm run-batch recipe"
    assert all("--model" in r for r in recipes), recipes
