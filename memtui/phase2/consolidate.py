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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from memtui import clock
from memtui.context import Context
from memtui.health.consolidation import HealthInputs, binding_inputs, record_drops
from memtui.llm.backends.choose import CLI_PROVIDERS, resolved_provider
from memtui.memroot.files import DIFF_FILENAME, SYNC_MANIFEST, write_if_changed
from memtui.memroot.lock import PHASE2_WAIT_SECONDS, MemoryRootBusy, clear_stale_index_lock, memory_root_lock
from memtui.memroot.view import remove_leftover_views
from memtui.phase2 import baseline, forgotten, review
from memtui.phase2.cli_agent import Tree, changed_paths, scan
from memtui.phase2.offline import consolidate_offline
from memtui.phase2.prompt import PromptInputs, history_budget_bytes, render_consolidation_prompt
from memtui.phase2.prompt_inputs import (
    person_edits,
    record_tombstones,
    rejections_since_last_approval,
    rollout_renames,
)
from memtui.phase2.recovery import recover_locked, settle
from memtui.phase2.tools import POST_KEY, Journal, MemoryTools, restore, sha256
from memtui.phase2.workspace import remove_diff_file, render_diff_file, sync_workspace, validate_artifacts
from memtui.retention import housekeeping
from memtui.review.decide import do_not_relearn_lines, rejected_lines
from memtui.state import global_job, person_lines, tombstones
from memtui.state.selection import Stage1Output, all_stage1_outputs, get_phase2_input_selection
from memtui.trust.enforce import TrustViolation, enforce_run, run_evidence

Outcome = Literal["no_changes", "awaiting_review", "approved", "failed", "skipped", "busy"]
Cancel = threading.Event | Callable[[], bool] | None

_SKIP_REASONS = {
    global_job.ClaimOutcome.SKIPPED_RUNNING: "lock held: another Phase 2 run is in progress",
    global_job.ClaimOutcome.SKIPPED_COOLDOWN: "cooldown: the last consolidation succeeded recently (use --force)",
    global_job.ClaimOutcome.SKIPPED_RETRY_UNAVAILABLE: "retry backoff: the last run failed recently, so automatic "
    "runs wait; `memtui phase2 --retry` (or the Jobs screen's t) runs it now",
}
NOTHING_TO_CONSOLIDATE = (
    "nothing to consolidate: no memories yet and no MEMORY.md; `memtui ingest` then `memtui phase1` extract them"
)


class Phase2Result(BaseModel):
    outcome: Outcome
    reason: str | None = None
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

    def message(self) -> str:
        return "".join(f"{line}\n" for line in self.housekeeping) + self._outcome_message()

    def _outcome_message(self) -> str:
        if self.outcome == "skipped":
            return f"skipped: {self.reason}"
        if self.outcome == "busy":
            return str(self.reason)  # "busy: ... Retry shortly."
        if self.outcome == "failed":
            return f"failed: {self.reason}"
        if self.outcome == "no_changes":
            return f"no changes: {self.selected} memories selected, workspace matches the baseline"
        head = f"run #{self.run_id} ({'offline' if self.offline else f'{self.turns} agent turns'}): "
        files = f"{len(self.stat)} file(s) changed"
        if self.outcome == "approved":
            return head + f"approved, {files}, new baseline {str(self.commit)[:12]}"
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
            conn.execute("UPDATE phase2_runs SET pre_snapshot=? WHERE id=?", (json.dumps(journal.pre), run_id))
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            (POST_KEY.format(run_id), json.dumps(journal.post)),
        )

    return save


def _run_agent(
    ctx: Context,
    token: str,
    tools: MemoryTools | None,
    prompt: str,
    say: Callable[[str], None],
    cancel: Cancel,
    folder: Path | None = None,
) -> tuple[int, int, int]:
    """The agent run on the configured backend, with a heartbeat task; returns (turns, prompt, completion tokens).

    ``tools`` serve the HTTP tool loop; a CLI backend (codex / claude) edits ``folder`` (a copy of the memory root)
    with its own tools (``tools`` None).
    """
    from memtui.llm.backends.base import AgentRequest
    from memtui.llm.backends.choose import make_backend, model_if_set

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

    async def main() -> tuple[int, int, int]:
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
        return result.turns, result.prompt_tokens, result.completion_tokens

    return asyncio.run(main())


def _health_inputs(ctx: Context, say: Callable[[str], None], base: str) -> HealthInputs:
    """Memory health's binding inputs; a failure to compute them is said and leaves the run without them."""
    try:
        health = binding_inputs(ctx.conn, ctx.paths.memory_root, ctx.settings.max_unused_days, base)
    except (sqlite3.Error, OSError, baseline.BaselineError) as exc:
        say(f"memory health not computed ({exc}); the run goes on without its inputs")
        return HealthInputs()
    if health.lines:
        say(f"memory health: {len(health.lines)} binding input(s), {len(health.drop)} line(s) to update or remove")
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
        return Phase2Result(outcome="skipped", reason=f"awaiting review: run #{waiting.id}", run_id=waiting.id)
    if _nothing_to_consolidate(ctx):
        return Phase2Result(outcome="skipped", reason=NOTHING_TO_CONSOLIDATE)
    try:
        with memory_root_lock(root, "Phase 2", wait=PHASE2_WAIT_SECONDS):
            clear_stale_index_lock(root, ctx.settings.index_lock_stale_seconds, purpose="Phase 2")
            done = housekeeping(ctx)  # retention and opt-outs first, as the seed does (the lock is re-entrant)
            for line in done.lines():
                say(line)
            result = _run_locked(
                ctx, offline=offline, force=force, retry=retry, auto_approve=auto_approve, say=say, cancel=cancel
            )
            return result.model_copy(
                update={"expired": done.expired, "opted_out": done.opted_out, "housekeeping": done.lines()}
            )
    except MemoryRootBusy as exc:
        say(str(exc))
        return Phase2Result(outcome="busy", reason=str(exc))


def _nothing_to_consolidate(ctx: Context) -> bool:
    """No memory file and no selected memory: a run would only commit empty files (checked before the lock)."""
    root, s = ctx.paths.memory_root, ctx.settings
    if any((root / name).exists() for name in ("MEMORY.md", "memory_summary.md")):
        return False
    return not get_phase2_input_selection(ctx.conn, s.max_raw_memories_for_consolidation, s.max_unused_days)


def _run_locked(
    ctx: Context,
    *,
    offline: bool | None,
    force: bool,
    retry: bool,
    auto_approve: bool,
    say: Callable[[str], None],
    cancel: Cancel,
) -> Phase2Result:
    s, conn, root = ctx.settings, ctx.conn, ctx.paths.memory_root
    offline = resolved_provider(s) == "offline" if offline is None else offline
    for note in recover_locked(ctx):
        say(f"recovered: {note}")
    if (waiting := review.pending_run(conn)) is not None:
        return Phase2Result(outcome="skipped", reason=f"awaiting review: run #{waiting.id}", run_id=waiting.id)
    cooldown = 0 if force else s.phase2_cooldown_hours * 3600
    claim = global_job.try_claim_global_phase2_job(
        conn, review.worker_id(), s.job_lease_seconds, cooldown, skip_backoff=force or retry
    )
    if not claim.claimed or claim.token is None:
        return Phase2Result(outcome="skipped", reason=_SKIP_REASONS[claim.outcome])
    token = claim.token
    if (waiting := review.pending_run(conn)) is not None:  # decided between our check and the claim
        global_job.release_global_phase2_job(conn, token)
        return Phase2Result(outcome="skipped", reason=f"awaiting review: run #{waiting.id}", run_id=waiting.id)

    run_id: int | None = None
    journal: Journal | None = None
    selected: list[Stage1Output] = []
    tag = "failed_prepare_workspace"
    turns = 0
    try:
        root.mkdir(parents=True, exist_ok=True)
        remove_diff_file(root)
        base = baseline.ensure_baseline(root)
        remove_leftover_views(root)

        tag = "failed_load_stage1_outputs"
        selected = get_phase2_input_selection(conn, s.max_raw_memories_for_consolidation, s.max_unused_days)
        pairs = [(m.thread_id, m.source_updated_at) for m in selected]
        new_watermark = max([claim.input_watermark, *(m.source_updated_at for m in selected)])
        say(f"selection: {len(selected)} memories")

        tag = "failed_sync_workspace_inputs"
        synced = sync_workspace(root, selected, ctx.paths.home / SYNC_MANIFEST)
        say(
            f"sync: {synced['summaries_written']} summaries written, {synced['summaries_deleted']} deleted, "
            f"raw_memories.md {'rewritten' if synced['raw_rewritten'] else 'unchanged'}"
        )

        tag = "failed_workspace_status"
        if moved := tombstones.migrate_file(conn, root):  # an older memtui's tombstones.md: hashes from now on
            say(f"tombstones: {moved} line(s) moved from tombstones.md into the state database as hashes")
        changes, diff = baseline.stat_and_diff(root)
        edited = [p for s_, p in person_edits(changes) if s_ in ("A", "M")]
        person_lines.record_added(conn, diff, edited)  # a person's lines: forget never removes them
        record_tombstones(conn, root, changes, diff)  # a person's deletions outlive the diff that shows them
        invalid = validate_artifacts(root)
        health = _health_inputs(ctx, say, base)
        if not changes and invalid is None and not health.asks_for_change(offline):
            if not global_job.mark_global_phase2_job_succeeded(conn, token, new_watermark, pairs):
                raise Phase2Failure("failed_confirm_ownership", "lost the Phase 2 lock")
            now = clock.now_s()
            cur = conn.execute(
                # selected stays NULL: the flags in stage1_outputs hold it, and thousands of no-change rows must stay small
                "INSERT INTO phase2_runs (status, started_at, finished_at, offline, baseline_commit, claimed_watermark,"
                " new_watermark, selected) VALUES ('no_changes', ?, ?, ?, ?, ?, ?, ?)",
                (now, now, int(offline), base, claim.input_watermark, new_watermark, None),
            )
            forgotten.finish_without_changes(conn)
            say("no changes since the baseline")
            return Phase2Result(outcome="no_changes", run_id=cur.lastrowid, selected=len(selected), offline=offline)
        say(f"workspace: {len(changes)} file(s) changed since the baseline")

        tag = "failed_workspace_diff_file"
        input_diff = render_diff_file(changes, diff)
        write_if_changed(root / DIFF_FILENAME, input_diff)
        cur = conn.execute(
            "INSERT INTO phase2_runs (status, started_at, offline, model, baseline_commit, claimed_watermark,"
            " new_watermark, selected, input_diff, pre_snapshot) VALUES ('running', ?, ?, ?, ?, ?, ?, ?, ?, '{}')",
            (
                clock.now_s(),
                int(offline),
                None if offline else s.consolidation_model,
                base,
                claim.input_watermark,
                new_watermark,
                json.dumps(pairs),
                input_diff,
            ),
        )
        run_id = int(cur.lastrowid or 0)
        forgotten.claim_for_run(conn, run_id)
        record_drops(conn, run_id, health.drop)  # approving their removal bans them (ban_approved_removals)
        journal = Journal(root, on_change=_persist_journal(conn, run_id))

        tag = "failed_agent"
        ptok = ctok = 0
        before_agent = scan(root)
        if offline:
            drops = {key: b.text for key, b in health.drop.items()}
            written = consolidate_offline(
                root,
                selected,
                journal,
                rejected=rejected_lines(conn),
                tombstones=tombstones.hashes(conn),
                known=all_stage1_outputs(conn),
                health_drops=drops,
            )
            say(f"offline consolidation: wrote {', '.join(written) or 'nothing'}")
            if health.update_needs_model:
                say(f"memory health: {len(health.update_needs_model)} proposed update(s) wait for a model run")
        else:
            inputs = PromptInputs(
                selected=selected,
                person_edits=person_edits(changes),
                renames=rollout_renames(root, changes),
                tombstones=tombstones.count(conn),
                rejections=rejections_since_last_approval(conn),
                do_not_relearn=do_not_relearn_lines(conn),
                forgotten=forgotten.prompt_lines(conn),
                health=health.lines,
            )
            if resolved_provider(s) in CLI_PROVIDERS:  # codex / claude edit a copy with their own tools
                from memtui.phase2.cli_agent import run_cli_agent

                run = lambda text, folder: _run_agent(ctx, token, None, text, say, cancel, folder)  # noqa: E731
                prompt_for = lambda folder: render_consolidation_prompt(folder, s, inputs)  # noqa: E731
                turns, ptok, ctok = run_cli_agent(ctx, journal, prompt_for, say, run)
            else:
                prompt = render_consolidation_prompt(root, s, inputs)
                tools = MemoryTools(root, journal, s.agent_max_write_bytes)
                say(f"agent: {s.consolidation_model}, at most {s.agent_max_turns} turns")
                turns, ptok, ctok = _run_agent(ctx, token, tools, prompt, say, cancel)
        if scrubbed := forgotten.scrub_workspace(conn, root, journal.write):
            say(f"forgotten rollouts: removed the lines derived from them in {', '.join(scrubbed)}")
        if banned := tombstones.enforce(conn, root, journal.write):
            say(f"tombstones: removed {banned} line(s) a person had deleted")
        remove_diff_file(root)

        tag = "failed_trust_upgrade"
        try:
            trust = enforce_run(root, journal.pre, journal.post, run_evidence(selected), journal.write)
        except TrustViolation as exc:
            raise Phase2Failure(tag, f"refused: {exc}") from exc
        if trust.hidden_removed:
            say(f"hidden text: removed {trust.hidden_removed} invisible character(s) the run wrote")

        tag = "failed_invalid_artifacts"
        if (invalid := validate_artifacts(root)) is not None:
            raise Phase2Failure(tag, invalid)
        if unjournaled := outside_journal(root, before_agent, journal):
            raise Phase2Failure(
                "failed_agent",
                f"{', '.join(unjournaled[:8])} changed during the run but not through its journal (a person's edit, or "
                "an agent writing around its tools): left as they are, and the run's own changes undone",
            )

        tag = "failed_workspace_status"
        stat, full_diff = baseline.stat_and_diff(root)
        tree = baseline.run_git(root, "write-tree").strip()  # exactly what the review shows; approve commits this
        added, removed = review.count_lines(full_diff)
        if not global_job.heartbeat_global_phase2_job(conn, token, s.job_lease_seconds):
            raise Phase2Failure("failed_confirm_ownership", "lost the Phase 2 lock")
        conn.execute(
            "UPDATE phase2_runs SET status='awaiting_review', finished_at=?, diff=?, stat=?, pre_snapshot=?, turns=?,"
            " prompt_tokens=?, completion_tokens=?, reviewed_tree=?, reviewed_files=?, lines_added=?,"
            " lines_removed=?, trust_report=? WHERE id=?",
            (
                clock.now_s(),
                full_diff,
                json.dumps(stat),
                json.dumps(journal.pre),
                turns,
                ptok,
                ctok,
                tree,
                json.dumps(baseline.tree_files(root, tree)),
                added,
                removed,
                json.dumps(trust.as_json()),
                run_id,
            ),
        )
        global_job.release_global_phase2_job(conn, token)
        result = Phase2Result(
            outcome="awaiting_review",
            run_id=run_id,
            selected=len(selected),
            changes=len(changes),
            stat=stat,
            turns=turns,
            offline=offline,
            hidden_removed=trust.hidden_removed,
        )
    except BaseException as exc:
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
        global_job.fail_global_phase2_job(conn, token, tag, s.job_retry_delay_seconds)
        if run_id is not None:
            # An incomplete undo (disk full...) keeps the run 'running' with its journal: the next run's recovery
            # finishes the undo, so the run's writes never pose as a person's edits in the next diff.
            conn.execute(
                "UPDATE phase2_runs SET status=?, finished_at=?, reason=?, turns=? WHERE id=?",
                ("failed" if undone else "running", clock.now_s(), reason, turns, run_id),
            )
            if undone:
                review.forget_run_content(conn, run_id)
            forgotten.release_after_rejection(conn, run_id)
        if not isinstance(exc, Exception):
            raise
        say(f"failed: {reason}")
        return Phase2Result(
            outcome="failed", reason=reason, run_id=run_id, selected=len(selected), turns=turns, offline=offline
        )
    if auto_approve:  # outside the try: the run is complete and recorded; approval failing must not undo it
        try:
            approved = review.approve(ctx, run_id)
        except (review.ReviewError, baseline.BaselineError, OSError, MemoryRootBusy) as exc:
            say(f"auto-approve failed: {exc}; the run still awaits review")
            return result.model_copy(update={"reason": f"auto-approve failed: {exc}"})
        result = result.model_copy(update={"outcome": "approved", "commit": approved.commit})
    return result
