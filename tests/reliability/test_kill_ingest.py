"""Kill -9 during an ingest of more files than one write batch, then a rerun: every file indexed exactly once,
every citation counted exactly once, and the database intact."""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from memtui.services.ingest import BATCH, run_ingest
from tests.fixtures.rollouts import write_codex_rollout
from tests.reliability import figures
from tests.reliability.harness import IDLE, NOW, Home, frozen, integrity_ok, kill_when, spawn
from tests.reliability.scale import INGEST_KILL_TRIALS, SEED, chunk_sizes

CITED = "019e0a1b-2c3d-7e4f-8a9b-0c1d2e3f4a5b"
CITING = 40  # rollouts whose answer cites CITED
FILES = BATCH + 150  # more than one batch, so a kill can land between two committed batches
ANSWER = (
    "Ran it with TZ=UTC.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-2|note=[CI runs in UTC]\n"
    f"</citation_entries>\n<rollout_ids>\n{CITED}\n</rollout_ids>\n</oai-mem-citation>"
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One CODEX_HOME tree, copied into every trial (writing 650 rollouts per trial would dominate the test)."""
    codex = tmp_path_factory.mktemp("ingest-corpus") / "codex"
    write_codex_rollout(codex, thread_id=CITED, user_messages=["Why does CI fail?"], mtime=IDLE)
    for i in range(FILES - 1):
        answers = [ANSWER] if i < CITING else ["Done."]
        write_codex_rollout(codex, user_messages=[f"task {i}"], assistant_messages=answers, mtime=IDLE - i)
    return codex


def _stage1_row(home: Home) -> None:
    """The cited memory exists already, so each counted citation shows as usage."""
    with frozen(NOW):
        ctx = home.context()
        ctx.conn.execute(
            "INSERT INTO stage1_outputs(thread_id, source_updated_at, raw_memory, rollout_summary, generated_at)"
            " VALUES (?, ?, 'm', 's', ?)",
            (CITED, IDLE, NOW),
        )
        ctx.close()


def _invariants(home: Home) -> list[str]:
    problems = []
    db = home.memtui / "state.sqlite"
    if not integrity_ok(db):
        problems.append("integrity_check failed")
    conn = sqlite3.connect(db)
    try:
        files = conn.execute("SELECT COUNT(*), COUNT(DISTINCT path) FROM ingest_files").fetchone()
        threads = conn.execute("SELECT COUNT(*) FROM threads WHERE ingest_status='indexed'").fetchone()[0]
        events = conn.execute("SELECT COUNT(*) FROM citation_events").fetchone()[0]
        uses = conn.execute("SELECT usage_count FROM stage1_outputs WHERE thread_id=?", (CITED,)).fetchone()[0]
    finally:
        conn.close()
    if files != (FILES, FILES):
        problems.append(f"ingest_files rows {files}, expected {FILES} distinct")
    if threads != FILES:
        problems.append(f"{threads} indexed threads, expected {FILES}")
    if (events, uses) != (CITING, CITING):
        problems.append(f"{events} citation events and usage {uses}, expected {CITING} each")
    return problems


def _trial(base: Path, corpus: Path, seed: int) -> tuple[bool, list[str], str]:
    rng = random.Random(seed)
    home = Home(base).make()
    shutil.rmtree(home.codex)
    shutil.copytree(corpus, home.codex)
    _stage1_row(home)
    proc = spawn(home, ["ingest", "--json"], home.env())
    wal = home.memtui / "state.sqlite-wal"
    delay = rng.uniform(0.0, 0.12)
    started: list[float] = []

    def trigger() -> bool:  # a random moment after the ingest starts writing
        if not started and wal.exists() and wal.stat().st_size > 0:
            started.append(time.monotonic())
        return bool(started) and time.monotonic() - started[0] >= delay

    faulted = kill_when(proc, trigger)
    with frozen(NOW + 60):
        ctx = home.context()
        run_ingest(ctx)
        ctx.close()
    return faulted, _invariants(home), f"seed {seed}, killed {delay:.2f}s after the first write"


@pytest.mark.parametrize("chunk", range(2))
def test_kill_9_during_ingest_then_rerun_indexes_and_counts_everything_once(chunk, corpus, tmp_path):
    n = chunk_sizes(INGEST_KILL_TRIALS, 2)[chunk]
    failures, faulted, survived = [], 0, 0
    for i in range(n):
        hit, problems, detail = _trial(tmp_path / f"trial-{i}", corpus, SEED * 100_000 + chunk * 10_000 + i)
        faulted += hit
        survived += hit and not problems
        if problems:
            failures.append(f"{detail}: {problems}")
    figures.record("ingest kill -9", trials=n, faults=faulted, survived=survived)
    assert not failures, "\n".join(failures)
