"""Phase 2: lock, select, sync, diff against the baseline, consolidate (agent or offline), then await review.

Order and failure tags follow the reference (§7). Differences: the result is not committed but recorded as a run
awaiting review (the lease is released meanwhile), and a failed or interrupted run's writes are undone from its
journal, so half-finished agent edits never pose as a person's authoritative edits in the next diff.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memtui.adapters.llm.backends.choose import CLI_PROVIDERS, resolved_provider
from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.files import DIFF_FILENAME, SYNC_MANIFEST, write_if_changed
from memtui.adapters.memroot.lock import (
    PHASE2_WAIT_SECONDS,
    MemoryRootBusy,
    clear_stale_index_lock,
    memory_root_lock,
)
from memtui.adapters.memroot.view import remove_leftover_views
from memtui.core import clock
from memtui.core.settings import Settings
from memtui.services.context import Context
from memtui.services.health.consolidation import HealthInputs, binding_inputs, record_drops
from memtui.services.phase1.eligibility import OlderSessions, older_sessions
from memtui.services.phase2 import forgotten, review, unchanged
from memtui.services.phase2.cli_agent import Tree, changed_paths, scan
from memtui.services.phase2.enforce import RunTrust, TrustViolation, enforce_run, run_evidence
from memtui.services.phase2.offline import consolidate_offline
from memtui.services.phase2.outcome import Outcome, SkipReason
from memtui.services.phase2.prompt import PromptInputs, history_budget_bytes, render_consolidation_prompt
from memtui.services.phase2.prompt_inputs import (
    person_edits,
    record_tombstones,
    rejections_since_last_approval,
    rollout_renames,
)
from memtui.services.phase2.recovery import recover_locked
from memtui.services.phase2.tools import Journal, MemoryTools, restore, save_journal, sha256
from memtui.services.phase2.workspace import (
    remove_diff_file,
    render_diff_file,
    sync_workspace,
    validate_artifacts,
)
from memtui.services.retention import housekeeping
from memtui.services.review.after import Decision, after_decision
from memtui.services.review.decide import do_not_relearn_lines, rejected_hunks, rejections, told
from memtui.services.review.settle import settle
from memtui.state import forgotten as forgotten_marks
from memtui.state import global_job, meta, outputs, person_lines, runs, tombstones
from memtui.state import health as health_store
from memtui.state.selection import Stage1Output, all_stage1_outputs, get_phase2_input_selection

Cancel = threading.Event | Callable[[], bool] | None


# The keys (hashes, no text) of lines a run was refused for presenting tool output as the user's: a later run leaves
# such a line out and says so, rather than failing on it again.
REFUSED_UPGRADES_KEY = "phase2.refused_upgrades"

_SKIP_REASONS = {
    global_job.ClaimOutcome.SKIPPED_RUNNING: SkipReason.LOCK_HELD,
    global_job.ClaimOutcome.SKIPPED_COOLDOWN: SkipReason.COOLDOWN,
    global_job.ClaimOutcome.SKIPPED_RETRY_UNAVAILABLE: SkipReason.RETRY_BACKOFF,
}


class Nothing(BaseModel):
    """Why there is nothing to consolidate, typed (a screen words it itself): memories all outside
    ``max_unused_days``, older sessions waiting for the backfill, or nothing extracted yet."""

    memories: int  # stored memories: none made or used within max_unused_days
    max_unused_days: int
    older: OlderSessions | None = None  # sessions older than the Phase 1 window, not read yet


class Phase2Result(BaseModel):
    outcome: Outcome
    reason: str | None = None  # in words: the skip's message, the failure, or why an auto-approve did not happen
    skip: SkipReason | None = None  # set when ``outcome`` is skipped
    run_id: int | None = None
    selected: int = 0
    changes: int = 0  # files changed since the baseline before consolidation
    stat: list[tuple[str, str]] = []  # after consolidation (awaiting review)
    turns: int = 0
    offline: bool = False
    commit: str | None = None
    expired: int = 0  # retention at the start of the run: stage-1 outputs unused for max_unused_days, removed
    opted_out: list[str] = []  # rollouts forgotten at the start: their memory was turned off after extraction
    housekeeping: list[str] = []  # the two above as summary lines (counts and ids, never words)
    hidden_removed: int = 0  # invisible characters the run tried to write, removed (``trust.hidden``)
    nothing: Nothing | None = None  # set when skipped as nothing to consolidate: why, and what would change it

    def message(self) -> str:
        return "".join(f"{line}\n" for line in self.housekeeping) + self._outcome_message()

    @classmethod
    def skipped(cls, skip: SkipReason, run_id: int | None = None) -> Phase2Result:
        return cls(outcome=Outcome.SKIPPED, skip=skip, reason=skip.message(run_id), run_id=run_id)

    @classmethod
    def nothing_to_consolidate(cls, nothing: Nothing) -> Phase2Result:
        """Skipped with nothing to consolidate, saying why and what would change it."""
        if nothing.memories:
            reason = (
                "nothing to consolidate: no MEMORY.md yet, and none of the "
                f"{nothing.memories} memories was made or used within max_unused_days "
                f"({nothing.max_unused_days} days); `memtui --set max_unused_days=N phase2` widens the window, or "
                "set it in config.toml"
            )
        elif nothing.older is not None:
            reason = (
                "nothing to consolidate: no memories yet and no MEMORY.md; `memtui phase1` extracts them (and "
                f"{nothing.older.words()}: `{nothing.older.command}` reads those too)"
            )
        else:
            reason = SkipReason.NOTHING_TO_CONSOLIDATE.message()
        skip = SkipReason.NOTHING_TO_CONSOLIDATE
        return cls(outcome=Outcome.SKIPPED, skip=skip, reason=reason, nothing=nothing)

    def _outcome_message(self) -> str:
        head = f"run #{self.run_id} ({'offline' if self.offline else f'{self.turns} agent turns'}): "
        files = f"{len(self.stat)} file(s) changed"
        match self.outcome:
            case Outcome.SKIPPED:
                return f"skipped: {self.reason}"
            case Outcome.BUSY:
                return str(self.reason)  # "busy: ... Retry shortly."
            case Outcome.FAILED:
                return f"failed: {self.reason}"
            case Outcome.NO_CHANGES:
                return (
                    f"no changes: {self.selected} memories selected (made or used within max_unused_days), workspace "
                    "matches the baseline; new sessions reach it through `memtui phase1`"
                )
            case Outcome.APPROVED:
                return head + f"approved, {files}, new baseline {str(self.commit)[:12]}"
            case Outcome.AWAITING_REVIEW:
                hidden = f"; removed {self.hidden_removed} hidden character(s) it wrote" if self.hidden_removed else ""
                return head + f"awaiting review, {files}{hidden}; see `memtui review show`, then approve or reject"


class Phase2Failure(RuntimeError):
    def __init__(self, tag: str, detail: str) -> None:
        super().__init__(f"{tag}: {detail}")
        self.tag = tag


def _cancelled(cancel: Cancel) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


def outside_journal(root: Path, before: Tree, journal: Journal) -> list[str]:
    """Files of the memory root that changed during the agent step and do not hold what the journal says the run
    wrote: every agent kind (HTTP tools, CLI, offline) must write through the journal, or reject, undo and crash
    recovery could not tell its writes from a person's. Empty when every change is journaled."""
    after = scan(root)
    return [
        rel
        for rel in changed_paths(before, after)
        if rel != DIFF_FILENAME  # Phase 2's own input, removed by Phase 2
        and (rel not in journal.post or journal.post[rel] != sha256(after.files.get(rel)))
    ]


def _persist_journal(conn: Any, run_id: int) -> Callable[[Journal], None]:
    known: set[str] = set()

    def save(journal: Journal) -> None:
        if set(journal.pre) != known:
            known.update(journal.pre)
            runs.save_pre_snapshot(conn, run_id, journal.pre)
        save_journal(conn, run_id, journal.post)

    return save


def _run_agent(
    ctx: Context,
    token: str,
    tools: MemoryTools | None,
    prompt: str,
    say: Callable[[str], None],
    cancel: Cancel,
    folder: Path | None = None,
    run_id: int | None = None,
) -> tuple[int, int, int]:
    """The agent run on the configured backend, with a heartbeat task; returns (turns, prompt, completion tokens).

    ``tools`` serve the HTTP tool loop; a CLI backend (codex / claude) edits ``folder`` (a copy of the memory root)
    with its own tools (``tools`` None). The run's row gets the model the agent says it used.
    """
    from memtui.adapters.llm.backends.base import AgentOutcome, AgentRequest
    from memtui.adapters.llm.backends.choose import make_backend, model_if_set

    s = ctx.settings
    lost: list[str] = []

    def should_stop() -> str | None:
        if lost:
            return lost[0]
        return "cancelled" if _cancelled(cancel) else None

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(s.phase2_heartbeat_seconds)
            if not global_job.heartbeat_global_phase2_job(ctx.conn, token, s.job_lease_seconds):
                lost.append("lost the Phase 2 lock (lease taken over)")
                return

    async def main() -> AgentOutcome:
        backend = make_backend(s, ctx.paths)
        model = model_if_set(s, "consolidation_model") if backend.own_tools else s.consolidation_model
        beat = asyncio.create_task(heartbeat())
        try:
            result = await backend.run_agent(
                AgentRequest(
                    root=folder or ctx.paths.memory_root,
                    prompt=prompt,
                    model=model,
                    max_turns=s.agent_max_turns,
                    timeout=s.agent_timeout_seconds,
                    tools=tools,
                    max_history_bytes=history_budget_bytes(s),
                    on_turn=lambda n, names: say(f"agent turn {n}: {', '.join(names) if names else 'finished'}"),
                    should_stop=should_stop,
                )
            )
        finally:
            beat.cancel()
            await backend.aclose()
        return result

    result = asyncio.run(main())
    if run_id is not None and result.model:
        runs.set_model(ctx.conn, run_id, result.model)
    return result.turns, result.prompt_tokens, result.completion_tokens


def _health_inputs(ctx: Context, say: Callable[[str], None], base: str) -> HealthInputs:
    """Memory health's binding inputs; a failure to compute them is said and leaves the run without them."""
    try:
        health = binding_inputs(ctx.conn, ctx.paths.memory_root, ctx.settings.max_unused_days, base)
    except (sqlite3.Error, OSError, baseline.BaselineError) as exc:
        say(f"memory health not computed ({exc}); the run goes on without its inputs")
        return HealthInputs()
    if health.lines:
        say(f"memory health: {len(health.lines)} binding input(s), {len(health.drop)} line(s) to update or remove")
    if health.update_needs_model and resolved_provider(ctx.settings) == "offline":
        say(
            f"memory health: {len(health.update_needs_model)} proposed update(s) need a model (the offline "
            "consolidator cannot reword); they stay proposed: run with --set provider=openai|codex|claude|local"
        )
    return health


def run_phase2(
    ctx: Context,
    *,
    offline: bool | None = None,
    force: bool = False,
    retry: bool = False,
    auto_approve: bool = False,
    progress: Callable[[str], None] | None = None,
    cancel: Cancel = None,
) -> Phase2Result:
    """One Phase 2 attempt. Never raises for pipeline failures: they come back as ``outcome='failed'``.

    The whole run holds the memory-root lock. When the root is busy (an approve, a save, a live git process) the
    outcome is ``busy``: nothing ran, no failure is recorded and no retry backoff starts.

    The failure backoff holds back automatic runs only: a run a person asks for (``retry``, or ``force``, which also
    skips the success cooldown) runs now. With no memory and no MEMORY.md there is nothing to consolidate.
    """
    say = progress or (lambda _msg: None)
    root = ctx.paths.memory_root
    for note in settle(ctx):  # a killed approve finished first: its run no longer awaits review
        say(note)
    if (waiting := review.pending_run(ctx.conn)) is not None:
        return Phase2Result.skipped(SkipReason.AWAITING_REVIEW, waiting.id)
    if _nothing_to_consolidate(ctx):
        return Phase2Result.nothing_to_consolidate(why_nothing(ctx))
    try:
        with memory_root_lock(root, "Phase 2", wait=PHASE2_WAIT_SECONDS):
            clear_stale_index_lock(root, ctx.settings.index_lock_stale_seconds, purpose="Phase 2")
            done = housekeeping(ctx)  # retention and opt-outs first, as the seed does (the lock is re-entrant)
            for line in done.lines():
                say(line)
            offline = resolved_provider(ctx.settings) == "offline" if offline is None else offline
            opts = RunOptions(offline=offline, force=force, retry=retry, auto_approve=auto_approve)
            result = _run_locked(ctx, opts, say, cancel)
            return result.model_copy(
                update={"expired": done.expired, "opted_out": done.opted_out, "housekeeping": done.lines()}
            )
    except MemoryRootBusy as exc:
        say(str(exc))
        return Phase2Result(outcome=Outcome.BUSY, reason=str(exc))


def _nothing_to_consolidate(ctx: Context) -> bool:
    """No memory file and no selected memory: a run would only commit empty files (checked before the lock)."""
    root, s = ctx.paths.memory_root, ctx.settings
    if any((root / name).exists() for name in ("MEMORY.md", "memory_summary.md")):
        return False
    return not get_phase2_input_selection(ctx.conn, s.max_raw_memories_for_consolidation, s.max_unused_days)


def why_nothing(ctx: Context) -> Nothing:
    """What a run with nothing to consolidate found: stored memories (outside the window), or older sessions."""
    s, conn = ctx.settings, ctx.conn
    stored = outputs.count(conn)
    older = None if stored else older_sessions(conn, s)
    return Nothing(memories=stored, max_unused_days=s.max_unused_days, older=older)


@dataclass(frozen=True)
class RunOptions:
    """What the person (or the scheduler) asked of this run."""

    offline: bool
    force: bool
    retry: bool
    auto_approve: bool


@dataclass(frozen=True)
class Claimed:
    """The global Phase 2 job, claimed: its lease token and the input watermark the run starts from."""

    token: str
    input_watermark: int


@dataclass
class Attempt:
    """What the run has done so far, so a failing step can be undone: the failure tag of the step in progress, the
    run's row and journal once recorded, and the counts the failed result still reports."""

    claimed: Claimed
    offline: bool
    tag: str = "failed_prepare_workspace"
    run_id: int | None = None
    journal: Journal | None = None
    selected: list[Stage1Output] = field(default_factory=list)
    turns: int = 0
    read_at: int = 0  # when the run read its selection: the run's started_at (retention counts from it)


@dataclass(frozen=True)
class Synced:
    """The workspace after the sync step: the baseline, the selection, what changed since the baseline, and
    whether there is any work (a change, an invalid artifact, or memory health asking for one)."""

    base: str
    selected: list[Stage1Output]
    pairs: list[tuple[str, int]]
    new_watermark: int
    changes: list[tuple[str, str]]
    diff: str
    health: HealthInputs
    has_work: bool


@dataclass(frozen=True)
class Started:
    """The run recorded as ``running``, with the journal every write of the agent step goes through."""

    run_id: int
    journal: Journal


@dataclass(frozen=True)
class AgentRan:
    """The agent step's accounting, and the memory root as it was before the agent touched it."""

    turns: int
    prompt_tokens: int
    completion_tokens: int
    before: Tree


def _run_locked(ctx: Context, opts: RunOptions, say: Callable[[str], None], cancel: Cancel) -> Phase2Result:
    """The run's lifecycle, under the memory-root lock: each step's failure undoes the run (``fail``)."""
    claimed = claim(ctx, opts, say)
    if isinstance(claimed, Phase2Result):
        return claimed
    attempt = Attempt(claimed, opts.offline)
    try:
        if (same := unchanged.check(ctx.conn, ctx.paths.memory_root, ctx.settings, opts.offline)) is not None:
            return finish_same(ctx, attempt, same, say)
        synced = sync(ctx, attempt, say)
        if not synced.has_work:
            return finish_unchanged(ctx, attempt, synced, say)
        started = start(ctx, attempt, synced, say)
        ran = agent(ctx, attempt, synced, started, say, cancel)
        trust = validate(ctx, attempt, synced, started, ran, say)
        result = await_review(ctx, attempt, synced, started, ran, trust)
    except BaseException as exc:
        return fail(ctx, attempt, exc, say)
    return auto_approve(ctx, result, say) if opts.auto_approve else result


def persons_requests(conn: sqlite3.Connection) -> list[str]:
    """What a person asked a consolidation for and still waits on: a forget whose removal no run carries yet, a
    health proposal. Such a run is never held back by a timer."""
    asked = []
    if forgotten_marks.awaiting_run(conn):
        asked.append("a forget")
    if health_store.proposals(conn):
        asked.append("a health proposal")
    return asked


def claim(ctx: Context, opts: RunOptions, say: Callable[[str], None]) -> Claimed | Phase2Result:
    """Recover what a killed process left, then claim the global Phase 2 job (cooldown and backoff apply unless a
    person asked): ``Claimed``, or the skipped result saying why not."""
    s, conn = ctx.settings, ctx.conn
    for note in recover_locked(ctx):
        say(f"recovered: {note}")
    if (waiting := review.pending_run(conn)) is not None:
        return Phase2Result.skipped(SkipReason.AWAITING_REVIEW, waiting.id)
    asked = persons_requests(conn)  # the cooldown and the backoff are for automatic runs, never a person's request
    if asked and not opts.force:
        say(f"runs now, without the cooldown: {' and '.join(asked)} waits for it")
    cooldown = 0 if opts.force or asked else s.phase2_cooldown_hours * 3600
    got = global_job.try_claim_global_phase2_job(
        conn, review.worker_id(), s.job_lease_seconds, cooldown, skip_backoff=opts.force or opts.retry or bool(asked)
    )
    if not got.claimed or got.token is None:
        return Phase2Result.skipped(_SKIP_REASONS[got.outcome])
    if (waiting := review.pending_run(conn)) is not None:  # decided between our check and the claim
        global_job.release_global_phase2_job(conn, got.token)
        return Phase2Result.skipped(SkipReason.AWAITING_REVIEW, waiting.id)
    return Claimed(got.token, got.input_watermark)


def sync(ctx: Context, attempt: Attempt, say: Callable[[str], None]) -> Synced:
    """Baseline, selection and synced inputs; a person's edits and deletions since the baseline are recorded."""
    s, conn, root = ctx.settings, ctx.conn, ctx.paths.memory_root
    root.mkdir(parents=True, exist_ok=True)
    remove_diff_file(root)
    base = baseline.ensure_baseline(root)
    remove_leftover_views(root)

    attempt.tag = "failed_load_stage1_outputs"
    attempt.read_at = clock.now_s()  # before the read: a memory made at this second or earlier is in it
    inputs = unchanged.read_inputs(conn, s, attempt.offline)  # before the selection: a later write defeats the record
    selected = get_phase2_input_selection(conn, s.max_raw_memories_for_consolidation, s.max_unused_days)
    attempt.selected = selected
    selection_cutoff = unchanged.cutoff(s)
    pairs = [(m.thread_id, m.source_updated_at) for m in selected]
    new_watermark = max([attempt.claimed.input_watermark, *(m.source_updated_at for m in selected)])
    say(f"selection: {len(selected)} memories")

    attempt.tag = "failed_sync_workspace_inputs"
    unchanged.start(conn, root)
    synced = sync_workspace(root, selected, ctx.paths.home / SYNC_MANIFEST)
    say(
        f"sync: {synced['summaries_written']} summaries written, {synced['summaries_deleted']} deleted, "
        f"raw_memories.md {'rewritten' if synced['raw_rewritten'] else 'unchanged'}"
    )

    attempt.tag = "failed_workspace_status"
    if moved := tombstones.migrate_file(conn, root):  # an older memtui's tombstones.md: hashes from now on
        say(f"tombstones: {moved} line(s) moved from tombstones.md into the state database as hashes")
    changes, diff = baseline.stat_and_diff(root)
    edited = [p for s_, p in person_edits(changes) if s_ in ("A", "M")]
    person_lines.record_added(conn, diff, edited)  # a person's lines: forget never removes them
    record_tombstones(conn, root, changes, diff)  # a person's deletions outlive the diff that shows them
    invalid = validate_artifacts(root)
    health = _health_inputs(ctx, say, base)
    has_work = bool(changes) or invalid is not None or health.asks_for_change(attempt.offline)
    if not has_work:  # what this run read, so the next one that finds it all the same can answer at once
        unchanged.remember(conn, root, inputs, base=base, selected=selected, selection_cutoff=selection_cutoff)
    return Synced(base, selected, pairs, new_watermark, changes, diff, health, has_work)


def finish_unchanged(ctx: Context, attempt: Attempt, synced: Synced, say: Callable[[str], None]) -> Phase2Result:
    """Nothing to consolidate: the job succeeds at the new watermark and a small ``no_changes`` row is kept."""
    if not global_job.mark_global_phase2_job_succeeded(
        ctx.conn, attempt.claimed.token, synced.new_watermark, synced.pairs
    ):
        raise Phase2Failure("failed_confirm_ownership", "lost the Phase 2 lock")
    return _no_changes(ctx, attempt, synced.base, synced.new_watermark, len(synced.selected), say, attempt.read_at)


def finish_same(ctx: Context, attempt: Attempt, same: unchanged.Record, say: Callable[[str], None]) -> Phase2Result:
    """Everything the last no-change run read is as it was (``unchanged``): the same outcome, recorded the same way,
    without reading the selection's text, syncing or starting git."""
    say(f"selection: {same.selected} memories, as the last run read them")
    new_watermark = max(attempt.claimed.input_watermark, same.max_source_updated_at)
    if not global_job.mark_global_phase2_job_succeeded(ctx.conn, attempt.claimed.token, new_watermark, None):
        raise Phase2Failure("failed_confirm_ownership", "lost the Phase 2 lock")
    say(unchanged.SAID)
    return _no_changes(ctx, attempt, same.base, new_watermark, same.selected, say)


def _no_changes(
    ctx: Context,
    attempt: Attempt,
    base: str,
    new_watermark: int,
    selected: int,
    say: Callable[[str], None],
    read_at: int | None = None,
) -> Phase2Result:
    """Record a run that found the workspace equal to the baseline (after its success was recorded); ``read_at``:
    when it read its selection (None: it read nothing new, the record of the last one held)."""
    claimed = attempt.claimed.input_watermark
    now = clock.now_s()
    run_id = runs.insert_no_changes(
        ctx.conn, now, attempt.offline, base, claimed, new_watermark, started_at=now if read_at is None else read_at
    )
    after_decision(ctx, Decision("no_changes", run_id=run_id))
    say("no changes since the baseline")
    return Phase2Result(outcome=Outcome.NO_CHANGES, run_id=run_id, selected=selected, offline=attempt.offline)


def asked_model(s: Settings) -> str:
    """The run's model label before the agent says which it used: an agent CLI runs its own default unless the user
    chose one (``model_if_set``), so that is what the label says, not memtui's default."""
    from memtui.adapters.llm.backends.base import cli_model
    from memtui.adapters.llm.backends.choose import model_if_set

    provider = resolved_provider(s)
    if provider in CLI_PROVIDERS:
        return cli_model(provider, model_if_set(s, "consolidation_model"))
    return s.consolidation_model


def start(ctx: Context, attempt: Attempt, synced: Synced, say: Callable[[str], None]) -> Started:
    """The diff file for the agent, the run's row (``running``) and the journal persisted with it: from here on a
    crash is undone by the next run's recovery."""
    s, conn, root = ctx.settings, ctx.conn, ctx.paths.memory_root
    say(f"workspace: {len(synced.changes)} file(s) changed since the baseline")
    attempt.tag = "failed_workspace_diff_file"
    input_diff = render_diff_file(synced.changes, synced.diff)
    write_if_changed(root / DIFF_FILENAME, input_diff)
    run_id = runs.insert_running(
        conn,
        started_at=attempt.read_at,
        offline=attempt.offline,
        model=None if attempt.offline else asked_model(s),
        base=synced.base,
        claimed=attempt.claimed.input_watermark,
        new_watermark=synced.new_watermark,
        selected=synced.pairs,
        input_diff=input_diff,
    )
    attempt.run_id = run_id
    forgotten.claim_for_run(conn, run_id)
    record_drops(conn, run_id, synced.health.drop)  # approving their removal bans them (ban_approved_removals)
    journal = Journal(root, on_change=_persist_journal(conn, run_id))
    attempt.journal = journal
    return Started(run_id, journal)


def agent(
    ctx: Context,
    attempt: Attempt,
    synced: Synced,
    started: Started,
    say: Callable[[str], None],
    cancel: Cancel,
) -> AgentRan:
    """Consolidate: the offline merge, a CLI agent on a copy, or the HTTP tool loop; every write goes through the
    journal. Then what a person or forget removed is taken out of what the agent wrote."""
    s, conn, root = ctx.settings, ctx.conn, ctx.paths.memory_root
    journal, health, selected = started.journal, synced.health, synced.selected
    attempt.tag = "failed_agent"
    turns = ptok = ctok = 0
    before = scan(root)
    if attempt.offline:
        drops = {key: b.text for key, b in health.drop.items()}
        rejected = rejections(conn)
        written = consolidate_offline(
            root,
            selected,
            journal,
            rejected=rejected,
            tombstones=tombstones.hashes(conn),
            known=all_stage1_outputs(conn),
            health_drops=drops,
        )
        say(f"offline consolidation: wrote {', '.join(written) or 'nothing'}")
        if rejected.acted:
            runs.set_rejections_acted(conn, started.run_id, rejected.as_json())
            lines = sum(len(a.left_out) + a.kept for a in rejected.acted.values())
            say(
                f"remembered rejections: {len(rejected.acted)} shaped {lines} line(s) of this run "
                "(`memtui review show` names them; `memtui review rejections` lists them)"
            )
        if health.update_needs_model:
            say(f"memory health: {len(health.update_needs_model)} proposed update(s) wait for a model run")
    else:
        told_of = rejected_hunks(conn)
        if told_of:
            runs.set_rejections_acted(conn, started.run_id, told(told_of))
        inputs = PromptInputs(
            selected=selected,
            person_edits=person_edits(synced.changes),
            renames=rollout_renames(root, synced.changes),
            tombstones=tombstones.count(conn),
            rejections=rejections_since_last_approval(conn),
            do_not_relearn=do_not_relearn_lines(conn, told_of),
            forgotten=forgotten.prompt_lines(conn),
            health=health.lines,
        )
        token = attempt.claimed.token
        if resolved_provider(s) in CLI_PROVIDERS:  # codex / claude edit a copy with their own tools
            from memtui.services.phase2.cli_agent import run_cli_agent

            run = lambda text, folder: _run_agent(ctx, token, None, text, say, cancel, folder, run_id=started.run_id)  # noqa: E731
            prompt_for = lambda folder: render_consolidation_prompt(folder, s, inputs)  # noqa: E731
            turns, ptok, ctok = run_cli_agent(ctx, journal, prompt_for, say, run)
        else:
            prompt = render_consolidation_prompt(root, s, inputs)
            tools = MemoryTools(root, journal, s.agent_max_write_bytes)
            say(f"agent: {s.consolidation_model}, at most {s.agent_max_turns} turns")
            turns, ptok, ctok = _run_agent(ctx, token, tools, prompt, say, cancel, run_id=started.run_id)
        attempt.turns = turns
    if scrubbed := forgotten.scrub_workspace(conn, root, journal.write):
        say(f"forgotten rollouts: removed the lines derived from them in {', '.join(scrubbed)}")
    if banned := tombstones.enforce(conn, root, journal.write):
        say(f"tombstones: removed {banned} line(s) a person had deleted")
    remove_diff_file(root)
    return AgentRan(turns, ptok, ctok, before)


def validate(
    ctx: Context, attempt: Attempt, synced: Synced, started: Started, ran: AgentRan, say: Callable[[str], None]
) -> RunTrust:
    """Trust enforced on what the run wrote, artifacts valid, and no change made around the journal."""
    root, journal = ctx.paths.memory_root, started.journal
    attempt.tag = "failed_trust_upgrade"
    refused = frozenset(json.loads(meta.get(ctx.conn, REFUSED_UPGRADES_KEY) or "[]"))
    try:
        trust = enforce_run(root, journal.pre, journal.post, run_evidence(synced.selected), journal.write, refused)
    except TrustViolation as exc:
        meta.put(ctx.conn, REFUSED_UPGRADES_KEY, json.dumps(sorted(refused | exc.keys)))
        raise Phase2Failure(attempt.tag, f"refused: {exc}") from exc
    if trust.hidden_removed:
        say(f"hidden text: removed {trust.hidden_removed} invisible character(s) the run wrote")
    if trust.dropped:
        say(
            f"left out {len(trust.dropped)} line(s) an earlier run was refused for (presented as the user's): "
            + "; ".join(d[:120] for d in trust.dropped[:3])
        )

    attempt.tag = "failed_invalid_artifacts"
    if (invalid := validate_artifacts(root)) is not None:
        raise Phase2Failure(attempt.tag, invalid)
    if unjournaled := outside_journal(root, ran.before, journal):
        raise Phase2Failure(
            "failed_agent",
            f"{', '.join(unjournaled[:8])} changed during the run but not through its journal (a person's edit, or "
            "an agent writing around its tools): left as they are, and the run's own changes undone",
        )
    return trust


def await_review(
    ctx: Context, attempt: Attempt, synced: Synced, started: Started, ran: AgentRan, trust: RunTrust
) -> Phase2Result:
    """Record exactly the tree a person will review (approve commits it) and release the lease meanwhile."""
    s, conn, root = ctx.settings, ctx.conn, ctx.paths.memory_root
    attempt.tag = "failed_workspace_status"
    stat, full_diff = baseline.stat_and_diff(root)
    tree = baseline.run_git(root, "write-tree").strip()  # exactly what the review shows; approve commits this
    added, removed = review.count_lines(full_diff)
    if not global_job.heartbeat_global_phase2_job(conn, attempt.claimed.token, s.job_lease_seconds):
        raise Phase2Failure("failed_confirm_ownership", "lost the Phase 2 lock")
    produced = runs.Produced(
        clock.now_s(),
        full_diff,
        stat,
        started.journal.pre,
        ran.turns,
        ran.prompt_tokens,
        ran.completion_tokens,
        tree,
        baseline.tree_files(root, tree),
        added,
        removed,
        trust.as_json(),
    )
    runs.finish_awaiting_review(conn, started.run_id, produced)
    global_job.release_global_phase2_job(conn, attempt.claimed.token)
    return Phase2Result(
        outcome=Outcome.AWAITING_REVIEW,
        run_id=started.run_id,
        selected=len(synced.selected),
        changes=len(synced.changes),
        stat=stat,
        turns=ran.turns,
        offline=attempt.offline,
        hidden_removed=trust.hidden_removed,
    )


def fail(ctx: Context, attempt: Attempt, exc: BaseException, say: Callable[[str], None]) -> Phase2Result:
    """Undo the run's writes from its journal (keeping a file a person changed since), fail the job with the
    step's tag (backoff), and mark the run failed; anything but an ``Exception`` is re-raised after the undo."""
    conn, root, journal, run_id = ctx.conn, ctx.paths.memory_root, attempt.journal, attempt.run_id
    tag = attempt.tag
    reason = str(exc) if isinstance(exc, Phase2Failure) else f"{tag}: {exc.__class__.__name__}: {exc}"
    if isinstance(exc, Phase2Failure):
        tag = exc.tag
    undone = True
    if journal is not None and journal.pre:
        try:
            # With the post-run hashes, as reject does: a file changed since the run wrote it is a person's edit.
            restored = restore(root, journal.pre, journal.post)
        except OSError as restore_exc:  # keep the original failure; say the undo was partial
            undone = False
            reason += f" (undo incomplete: {restore_exc}; the next Phase 2 run finishes it)"
        else:
            if kept := sorted(set(journal.pre) - set(restored)):
                reason += f" (kept {', '.join(kept)}: edited after the run started)"
    global_job.fail_global_phase2_job(conn, attempt.claimed.token, tag, ctx.settings.job_retry_delay_seconds)
    if run_id is not None:
        # An incomplete undo (disk full...) keeps the run 'running' with its journal: the next run's recovery
        # finishes the undo, so the run's writes never pose as a person's edits in the next diff.
        runs.finish_failed(conn, run_id, "failed" if undone else "running", clock.now_s(), reason, attempt.turns)
        after_decision(ctx, Decision("run_failed", run_id=run_id, undone=undone))
    if not isinstance(exc, Exception):
        raise exc
    say(f"failed: {reason}")
    return Phase2Result(
        outcome=Outcome.FAILED,
        reason=reason,
        run_id=run_id,
        selected=len(attempt.selected),
        turns=attempt.turns,
        offline=attempt.offline,
    )


def auto_approve(ctx: Context, result: Phase2Result, say: Callable[[str], None]) -> Phase2Result:
    """Approve the recorded run at once. Outside the run's failure handling: the run is complete and recorded, so
    an approval failing leaves it awaiting review rather than undoing it."""
    try:
        approved = review.approve(ctx, result.run_id)
    except (review.ReviewError, baseline.BaselineError, OSError, MemoryRootBusy) as exc:
        say(f"auto-approve failed: {exc}; the run still awaits review")
        return result.model_copy(update={"reason": f"auto-approve failed: {exc}"})
    return result.model_copy(update={"outcome": Outcome.APPROVED, "commit": approved.commit})
