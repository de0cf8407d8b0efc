"""Memory health: signals per approved block, their evidence, the CLI, the actions and what Phase 2 does with them."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memtui.cli import main
from memtui.core import clock
from memtui.domain.health import Relation
from memtui.services.context import Context, open_context
from memtui.services.health import actions
from memtui.services.health.consolidation import binding_inputs
from memtui.services.health.rules import relate, uncommon
from memtui.services.health.signals import compute_health
from memtui.services.ingest import run_ingest
from memtui.services.phase1.run import run_phase1
from memtui.services.phase2 import review
from memtui.services.phase2.consolidate import run_phase2
from memtui.services.phase2.prompt import PromptInputs, render_consolidation_prompt
from memtui.services.review.evidence import hunk_infos
from memtui.state import tombstones
from memtui.state.health import Proposal
from tests.fixtures.health_eval import EVAL_SET
from tests.fixtures.health_tuning import KNOWN_MISSES, TUNING_SET
from tests.fixtures.rollouts import write_codex_rollout

pytestmark = pytest.mark.usefixtures("frozen_clock")  # 2026-07-10: the sessions below are recent

SHOP = "/home/ana/src/shop-api"
FIRST = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
APPROVED = int(datetime(2026, 7, 2, 9, 0, tzinfo=UTC).timestamp())
LATER = datetime(2026, 7, 3, 9, 0, tzinfo=UTC)
RULES = [
    "Set up the release. We always deploy on Tuesdays.",
    "Release notes must go in CHANGELOG.md.",
    "Always run the test suite with TZ=UTC before saying it passes.",
]


def _related(block: str, sentence: str) -> str | None:
    got = relate(block, sentence)
    return got.value if got else None


def test_every_tuning_example_is_related_as_labelled() -> None:
    """One test over the whole set (a thousand pairs as one test each cost the day-to-day run seconds of set-up);
    a failure lists every pair the rules relate otherwise, with what they found."""
    wrong = [(b, s, label, got) for b, s, label in TUNING_SET if (got := _related(b, s)) != label]
    assert wrong == []


def test_a_known_miss_is_still_missed() -> None:
    """A known miss the rules get now belongs in TUNING_SET."""
    now_right = [(b, s, label) for b, s, label in KNOWN_MISSES if _related(b, s) == label]
    assert now_right == []


def test_another_value_in_the_blocks_place_changes_it_without_a_word_of_change() -> None:
    # the previous rules needed a word of change ("now", "switched"); a plain statement of the same subject with
    # another value of the same kind in the block's place is a change by itself
    assert relate("Feature flags are managed in LaunchDarkly.", "feature flags are managed in flagsmith") == (
        Relation.CONTRADICTED
    )
    assert relate("Logs are kept for 14 days.", "logs are kept for 90 days") == Relation.CONTRADICTED
    assert relate("Container images are scanned by Trivy.", "grype scans our container images") == (
        Relation.CONTRADICTED
    )
    # ... but not when it adds, keeps the old value, names another subject, asks, supposes, reports or recalls
    for block, sentence in [
        ("Feature flags are managed in LaunchDarkly.", "we use launchdarkly, and unleash for the self-hosted build"),
        ("Logs are kept for 14 days.", "audit logs are kept for 7 years"),
        ("Background jobs are queued in Sidekiq.", "are background jobs queued in solid_queue?"),
        ("Container images are scanned by Trivy.", "if trivy misses things we could try grype"),
        ("Secrets are synced by Doppler.", "marta said secrets should be synced by vault"),
        ("Queues run on RabbitMQ.", "the queue ran on redis back in 2019"),
        ("Use yarn for the web app, never npm.", "We prefer pnpm over npm."),
    ]:
        assert relate(block, sentence) is None, sentence
    # the block's own value said to be ending, in words no list of goings held before
    assert relate("Queues run on RabbitMQ.", "rabbitmq is going away, queues go to nats") == Relation.CONTRADICTED
    assert relate(
        "Workflow automations are built in n8n.", "new workflow automations go in windmill, n8n is legacy"
    ) == (Relation.CONTRADICTED)
    # a verb's noun, a compound written three ways, a subject by its head noun
    assert relate("TLS termination is done by Pingora.", "pingora terminates tls for us") == Relation.RESTATED
    assert relate("Ad-hoc analytics queries run in DuckDB.", "run the ad hoc analytics queries in duckdb") == (
        Relation.RESTATED
    )
    assert relate("Vector embeddings are stored in Qdrant.", "embeddings go in qdrant") == Relation.RESTATED


def test_the_evaluation_set_is_held_out_from_the_tuning_set() -> None:
    tuned = {s for _, s, _ in TUNING_SET + KNOWN_MISSES}
    assert not tuned & {s for _, s, _ in EVAL_SET}
    assert {label for _, _, label in EVAL_SET} == {"restated", "contradicted", "corrected", None}
    assert len(EVAL_SET) >= 64  # no smaller than the round before it


def test_a_word_outside_common_english_is_a_value_whatever_its_case() -> None:
    # the package's word list, not the tuning set: product names typed in lower case are names, words are not
    assert {"gotenberg", "opensearch", "fly.io", "k6"} <= {
        w for w in ("gotenberg", "opensearch", "fly.io", "k6") if uncommon(w)
    }
    assert not any(uncommon(w) for w in ("cluster", "reports", "nightly", "expensive", "the", "tiles"))
    # so a new value typed in lower case stands in for the block's, and another cluster is another subject
    said = relate("Invoices are rendered with WeasyPrint.", "invoice rendering switched to gotenberg")
    assert said is not None and said.value == "contradicted"
    assert relate("The ClickHouse cluster has 4 nodes.", "the kafka cluster has 12 nodes now") is None
    # a frequency is one value however it is said, and a going said of its subject retires it
    assert relate("The ETL syncs run nightly.", "the etl syncs run every 4 hours now") == Relation.CONTRADICTED
    assert relate("Video uploads are transcoded by Mux.", "mux is out, we transcode uploads with ffmpeg") == (
        Relation.CONTRADICTED
    )
    # an event is no standing change
    assert relate("Search uses Algolia.", "the algolia index is gone after the reindex failed") is None


# --- a home with an approved memory and later sessions ----------------------------------------------------------


def _approved_home(env: dict[str, Path], messages: list[str] = RULES, cwd: str = SHOP) -> Context:
    write_codex_rollout(env["CODEX_HOME"], cwd=cwd, user_messages=messages, when=FIRST)
    ctx = open_context()
    run_ingest(ctx)
    assert run_phase1(ctx, offline=True, all_threads=True).succeeded == 1
    run = run_phase2(ctx, offline=True)
    with clock.frozen(APPROVED):
        review.approve(ctx, run.run_id)
    return ctx


def _session(
    env: dict[str, Path], ctx: Context, messages: list[str], *, when: datetime = LATER, cwd: str = SHOP
) -> str:
    path = write_codex_rollout(env["CODEX_HOME"], cwd=cwd, user_messages=messages, when=when)
    run_ingest(ctx)
    return path.stem.split("-", 6)[-1]


def _by_statement(report, words: str):  # type: ignore[no-untyped-def]
    return next(b for b in report.blocks if words in b.text)


def test_restated_contradicted_and_corrected_link_to_the_transcript_item(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    thread = _session(
        isolated_env,
        ctx,
        [
            "Prepare the release. From now on we deploy on Thursdays, not Tuesdays.",
            "No, I told you release notes go in CHANGELOG.md.",
            "Always run the test suite with TZ=UTC before saying it passes.",
        ],
    )
    report = compute_health(ctx.conn, ctx.paths.memory_root)
    tuesday = _by_statement(report, "Tuesdays")
    assert [(e.thread_id, e.relation, e.text) for e in tuesday.contradicted] == [
        (thread, "contradicted", "From now on we deploy on Thursdays, not Tuesdays.")
    ]
    assert report.blocks[0].id == tuesday.id  # worst first
    notes = _by_statement(report, "CHANGELOG")
    assert notes.signals == ["corrected"] and notes.corrected[0].text.startswith("No, I told you")
    tz = _by_statement(report, "TZ=UTC")
    assert tz.signals == ["restated"]
    # the item is the N-th memory item of that rollout, where the user said it
    from memtui.adapters.sources import memory_items

    path = ctx.conn.execute("SELECT path FROM threads WHERE id=?", (thread,)).fetchone()[0]
    item = memory_items(Path(path), "codex")[tz.restated[0].item - 1]
    assert "TZ=UTC" in json.dumps(item) and item["role"] == "user"


def test_a_session_counts_once_and_only_after_the_approval_in_the_blocks_project(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    again = "Always run the test suite with TZ=UTC before saying it passes."
    _session(isolated_env, ctx, [again, "Thanks.", again], when=LATER)  # twice in one session: once
    _session(isolated_env, ctx, [again], when=datetime(2026, 7, 4, 9, 0, tzinfo=UTC))
    _session(isolated_env, ctx, [again], when=datetime(2026, 7, 1, 12, 0, tzinfo=UTC))  # before the approval
    _session(isolated_env, ctx, [again], when=LATER, cwd="/home/ana/src/other")  # another project
    tz = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "TZ=UTC")
    assert len(tz.restated) == 2
    assert {e.at for e in tz.restated} == {int(LATER.timestamp()), int(datetime(2026, 7, 4, 9, tzinfo=UTC).timestamp())}


def test_citations_count_once_per_session_and_only_of_the_text_still_there(isolated_env) -> None:
    from memtui.services.citations.parse import parse_citations
    from memtui.services.citations.usage import record_citation

    ctx = _approved_home(isolated_env)
    lines = (ctx.paths.memory_root / "MEMORY.md").read_text().splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "TZ=UTC" in line)
    body = (
        f"<oai-mem-citation>\n<citation_entries>\nMEMORY.md:{n}-{n}|note=[tz]\n</citation_entries>\n</oai-mem-citation>"
    )
    citation = parse_citations(body).citation
    assert citation is not None
    for key, thread in (("a", "s1"), ("b", "s1"), ("c", "s2")):
        record_citation(ctx.conn, citation, "rollout", key, thread, memory_root=ctx.paths.memory_root)
    report = compute_health(ctx.conn, ctx.paths.memory_root)
    tz = _by_statement(report, "TZ=UTC")
    assert tz.cited == 2 and "cited" in tz.signals
    assert _by_statement(report, "CHANGELOG").cited == 0
    assert tz.last_verified is None  # a citation never verifies


def test_stale_by_window_and_by_a_path_missing_from_the_project(isolated_env, tmp_path: Path) -> None:
    ctx = _approved_home(isolated_env)
    with clock.frozen(APPROVED + 10 * 86_400):
        fresh = compute_health(ctx.conn, ctx.paths.memory_root, unused_days=30)
    assert not any(b.stale for b in fresh.blocks)
    with clock.frozen(APPROVED + 40 * 86_400):
        old = compute_health(ctx.conn, ctx.paths.memory_root, unused_days=30)
        assert all(b.stale and "not cited or restated for 40 days" in str(b.stale_reason) for b in old.blocks)
        tz = _by_statement(old, "TZ=UTC")
        actions.confirm(ctx, tz.id)  # a person's confirmation renews it
        again = compute_health(ctx.conn, ctx.paths.memory_root, unused_days=30)
    assert not _by_statement(again, "TZ=UTC").stale and _by_statement(again, "CHANGELOG").stale


def test_stale_when_a_named_path_is_gone_from_the_projects_working_tree(isolated_env, tmp_path: Path) -> None:
    project = tmp_path / "shop-api"
    project.mkdir()
    ctx = _approved_home(isolated_env, cwd=str(project))
    notes = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "CHANGELOG")
    assert notes.stale and "CHANGELOG.md" in str(notes.stale_reason)
    (project / "CHANGELOG.md").write_text("# Changes\n")
    report = compute_health(ctx.conn, ctx.paths.memory_root, project=project)
    assert not _by_statement(report, "CHANGELOG").stale and len(report.blocks) == 3
    assert compute_health(ctx.conn, ctx.paths.memory_root, project=tmp_path / "elsewhere").blocks == []


def test_an_update_after_one_new_session_reads_only_that_session(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    for day in range(3, 9):
        _session(isolated_env, ctx, [f"Fix issue {day} in checkout."], when=datetime(2026, 7, day, 9, tzinfo=UTC))
    first = compute_health(ctx.conn, ctx.paths.memory_root)
    assert first.scanned_blocks == 3 and not any(b.contradicted for b in first.blocks)
    _session(isolated_env, ctx, ["Deploys are on Thursdays now."], when=datetime(2026, 7, 10, 9, tzinfo=UTC))
    second = compute_health(ctx.conn, ctx.paths.memory_root)
    assert second.scanned_blocks == 0 and second.scanned_messages == 1
    assert _by_statement(second, "Tuesdays").contradicted[0].text == "Deploys are on Thursdays now."


def test_a_forgotten_session_leaves_no_finding(isolated_env) -> None:
    from memtui.services.forget import forget

    ctx = _approved_home(isolated_env)
    thread = _session(isolated_env, ctx, ["From now on we deploy on Thursdays, not Tuesdays."])
    assert compute_health(ctx.conn, ctx.paths.memory_root).contradicted == 1
    forget(ctx, thread)
    assert compute_health(ctx.conn, ctx.paths.memory_root).contradicted == 0


# --- the CLI on the demo ------------------------------------------------------------------------------------------


def test_health_json_on_the_demo_shows_every_signal_its_rollouts_produce(tmp_path: Path, capsys) -> None:
    assert main(["demo", "--dir", str(tmp_path / "d"), "--no-tui"]) == 0
    capsys.readouterr()
    assert main(["--home", str(tmp_path / "d" / "home"), "health", "--json"]) == 1  # one is contradicted
    report = json.loads(capsys.readouterr().out)
    signals = {s for b in report["blocks"] for s in b["signals"]}
    assert {"cited", "restated", "contradicted", "corrected"} <= signals
    worst = report["blocks"][0]
    assert worst["signals"] == ["contradicted"] and "Tuesdays" in worst["text"]
    assert worst["contradicted"][0]["text"] == "From now on we deploy on Thursdays, not Tuesdays."
    assert report["method"] == "offline rules"
    assert main(["--home", str(tmp_path / "d" / "home"), "health"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("CONTRADICTED") and "1 contradicted" in out


def test_health_on_a_home_without_approved_memory_exits_0(capsys) -> None:
    assert main(["health"]) == 0
    assert "no approved memory blocks yet" in capsys.readouterr().out
    assert main(["health", "--confirm", "abc"]) == 2


# --- actions and Phase 2 ------------------------------------------------------------------------------------------


def test_a_proposed_removal_comes_back_as_a_hunk_with_the_contradicting_item_as_evidence(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    thread = _session(isolated_env, ctx, ["Fix the flaky test.", "No, I told you release notes go in CHANGELOG.md."])
    notes = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "CHANGELOG")
    actions.propose(ctx, notes.id, Proposal.REMOVE)
    inputs = binding_inputs(ctx.conn, ctx.paths.memory_root)
    assert any(line.startswith("a person asks to remove MEMORY.md line") for line in inputs.lines)
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review"
    state = review.review_state(ctx)
    hunks = hunk_infos(ctx, state.run.diff, state.run)
    removal = next(
        h
        for h in hunks
        if h.file == "MEMORY.md" and any("CHANGELOG" in line for line in h.text.splitlines() if line.startswith("-"))
    )
    first = removal.evidence[0]
    assert (first["thread_id"], first["via"], first["items"]) == (thread, "health", [notes.corrected[0].item])
    assert "CHANGELOG" not in (ctx.paths.memory_root / "MEMORY.md").read_text()
    assert tombstones.count(ctx.conn) == 0  # nothing is banned before a person approves the removal
    review.approve(ctx, run.run_id)
    assert tombstones.count(ctx.conn) == 1  # approved: the removed line is banned by its hash
    # the line stays out of later runs (the tombstone went in with the approval)
    run_phase2(ctx, offline=True, force=True)
    assert "CHANGELOG" not in (ctx.paths.memory_root / "MEMORY.md").read_text()


def test_a_rejected_removal_bans_nothing(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    _session(isolated_env, ctx, ["Fix the flaky test.", "No, I told you release notes go in CHANGELOG.md."])
    notes = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "CHANGELOG")
    actions.propose(ctx, notes.id, Proposal.REMOVE)
    run = run_phase2(ctx, offline=True, force=True)
    assert run.outcome == "awaiting_review"
    review.reject(ctx, "keep it", run.run_id)
    assert tombstones.count(ctx.conn) == 0
    assert "CHANGELOG" in (ctx.paths.memory_root / "MEMORY.md").read_text()


def test_the_offline_consolidator_applies_a_contradiction_and_the_agent_is_told(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    thread = _session(isolated_env, ctx, ["Deploys are on Thursdays now."])  # no durable statement: never extracted
    inputs = binding_inputs(ctx.conn, ctx.paths.memory_root)
    said = [line for line in inputs.lines if line.startswith("the user now says")]
    assert said and f"[thread {thread} item" in said[0] and "Tuesdays" in said[0]
    prompt = render_consolidation_prompt(
        ctx.paths.memory_root, ctx.settings, PromptInputs(selected=[], health=inputs.lines)
    )
    assert "8. Memory health" in prompt and said[0] in prompt
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    memory = (ctx.paths.memory_root / "MEMORY.md").read_text()
    assert "Tuesdays" not in memory and "CHANGELOG" in memory


def test_a_restatement_becomes_a_binding_input(isolated_env) -> None:
    ctx = _approved_home(isolated_env)
    thread = _session(isolated_env, ctx, ["Always run the test suite with TZ=UTC before saying it passes."])
    lines = binding_inputs(ctx.conn, ctx.paths.memory_root).lines
    assert any(line.startswith("the user restated this on 2026-07-03") and thread in line for line in lines)


def test_a_newer_selected_memory_supersedes_an_older_preference_offline(isolated_env) -> None:
    write_codex_rollout(isolated_env["CODEX_HOME"], cwd=SHOP, user_messages=RULES, when=FIRST)
    write_codex_rollout(
        isolated_env["CODEX_HOME"],
        cwd=SHOP,
        user_messages=["From now on we deploy on Thursdays, not Tuesdays."],
        when=LATER,
    )
    ctx = open_context()
    run_ingest(ctx)
    run_phase1(ctx, offline=True, all_threads=True)
    run_phase2(ctx, offline=True)
    memory = (ctx.paths.memory_root / "MEMORY.md").read_text()
    assert "Thursdays" in memory and '"We always deploy on Tuesdays."' not in memory


def test_confirm_and_propose_from_the_cli(isolated_env, capsys) -> None:
    ctx = _approved_home(isolated_env)
    tz = _by_statement(compute_health(ctx.conn, ctx.paths.memory_root), "TZ=UTC")
    assert main(["health", "--confirm", tz.id[:8]]) == 0
    assert main(["health", "--propose-update", tz.id[:8]]) == 0
    capsys.readouterr()
    main(["health", "--json"])
    block = next(b for b in json.loads(capsys.readouterr().out)["blocks"] if b["id"] == tz.id)
    assert block["last_verified"] is not None and block["proposal"] == "update"


def test_remove_now_is_a_committed_person_edit_and_waits_for_a_pending_review(isolated_env, capsys) -> None:
    ctx = _approved_home(isolated_env)
    root = ctx.paths.memory_root
    notes = _by_statement(compute_health(ctx.conn, root), "CHANGELOG")
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "\n- my own note\n")
    assert main(["health", "--remove", notes.id]) == 1  # an unseen edit would be committed with it
    assert "MEMORY.md changed since the last commit" in capsys.readouterr().err
    subprocess.run(["git", "checkout", "--", "MEMORY.md"], cwd=root, check=True)
    assert main(["health", "--remove", notes.id]) == 0
    committed = subprocess.run(["git", "show", "HEAD:MEMORY.md"], cwd=root, capture_output=True, text=True).stdout
    assert "CHANGELOG" not in committed and "TZ=UTC" in committed
    assert tombstones.count(ctx.conn) == 1 and not (root / "tombstones.md").exists()  # a hash, never the words
    kinds = [
        r[0]
        for r in sqlite3.connect(isolated_env["MEMTUI_HOME"] / "state.sqlite").execute("SELECT kind FROM decisions")
    ]
    assert kinds[-1] == "manual_commit"
    _session(isolated_env, ctx, ["Always run the test suite with TZ=UTC before saying it passes."])
    run_phase1(ctx, offline=True, all_threads=True)
    assert run_phase2(ctx, offline=True, force=True).outcome == "awaiting_review"
    assert "CHANGELOG" not in (root / "MEMORY.md").read_text()  # the tombstone keeps it out
    tz = _by_statement(compute_health(ctx.conn, root), "TZ=UTC")
    assert main(["health", "--remove", tz.id]) == 1
    assert "awaits review" in capsys.readouterr().err


def test_the_agent_is_given_the_contradiction_as_a_binding_input(isolated_env, model_env) -> None:
    from tests.support.chat_server import reply_text, reply_tool_calls

    ctx = _approved_home(isolated_env)
    thread = _session(isolated_env, ctx, ["Deploys are on Thursdays now."])  # no new input for Phase 2 but this
    memory = (ctx.paths.memory_root / "MEMORY.md").read_text()
    fixed = "\n".join(line for line in memory.splitlines() if "Tuesdays" not in line) + "\n"
    model_env.script(
        reply_tool_calls(("write_file", {"path": "MEMORY.md", "content": fixed})), reply_text("Removed the old day.")
    )
    result = run_phase2(ctx, force=True)
    assert result.outcome == "awaiting_review" and not result.offline, result.reason
    prompt = model_env.requests[0]["messages"][-1]["content"]
    assert "8. Memory health" in prompt
    assert f"the user now says 'Deploys are on Thursdays now.' [thread {thread} item" in prompt
    line = next(x for x in prompt.splitlines() if x.startswith("   - the user now says"))
    assert "update or remove MEMORY.md line" in line and "Tuesdays" in line  # what to update or remove


def test_refine_asks_the_model_once_per_finding_and_says_so(isolated_env, model_env, capsys) -> None:
    from tests.support.chat_server import reply_text

    ctx = _approved_home(isolated_env)
    _session(
        isolated_env,
        ctx,
        [
            "From now on we deploy on Thursdays, not Tuesdays.",
            "Always run the test suite with TZ=UTC before saying it passes.",
        ],
    )
    before = compute_health(ctx.conn, ctx.paths.memory_root)
    assert before.contradicted == 1 and _by_statement(before, "TZ=UTC").restated
    verdicts = {"contradicted": "contradicted", "restated": "none"}  # the model disagrees with one of them

    def answer(body: dict) -> dict:
        rules_said = body["messages"][-1]["content"].split("\n", 1)[0].removeprefix("The rules said: ")
        return reply_text(json.dumps({"relation": verdicts[rules_said], "reason": "checked"}))

    model_env.handler = answer
    assert main(["health", "--refine", "--json"]) == 1
    err = capsys.readouterr()
    assert "refined 2 finding(s)" in err.err and "1 changed" in err.err
    report = json.loads(err.out)
    assert report["method"] == f"offline rules, refined by {ctx.settings.extract_model}"
    tz = next(b for b in report["blocks"] if "TZ=UTC" in b["text"])
    assert tz["restated"] == [] and "restated" not in tz["signals"]
    assert len(model_env.requests) == 2
    body = model_env.requests[0]
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["messages"][0]["content"].startswith("memtui-internal-call")
    main(["health", "--refine"])  # nothing new: no call
    assert len(model_env.requests) == 2
