"""The long work the UI runs in thread workers: the domain functions the CLI calls, and what to tell a person.

Each task imports its domain module when it runs (not when the app starts), so the first paint does not pay
for openai, GitPython and the pipeline. A task returns a ``TaskOutcome``: the verb for the notification title
("finished", "skipped", "failed"...), one line in the shared vocabulary (``memtui.domain.labels``), and a severity.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from memtui.domain.labels import PHASE2_STATUS, SKIP_REASON, counts, label
from memtui.services.phase2.outcome import Outcome, SkipReason
from memtui.services.review.hunks import HunkDecisions
from memtui.tui.format import plural

if TYPE_CHECKING:
    from memtui.services.context import Context
    from memtui.services.ingest import IngestSummary
    from memtui.services.phase1.run import Phase1Summary
    from memtui.services.phase2.consolidate import Phase2Result

Severity = Literal["information", "warning", "error"]
# (done, total or None when unknown, what is happening now)
Progress = Callable[[float, "float | None", str], None]


@dataclass(frozen=True)
class TaskOutcome:
    verb: str  # the notification title is "<task title> <verb>"
    summary: str
    severity: Severity = "information"
    news: bool = True  # a quiet task (ingest on start) only tells when this is set


class TaskFn(Protocol):
    def __call__(self, ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome: ...


# ---- ingest ---------------------------------------------------------------------------------------


def describe_ingest(s: IngestSummary) -> TaskOutcome:
    parts = [f"{s.new:,} new", f"{s.updated:,} updated", f"{s.unchanged:,} unchanged"]
    if s.skipped:
        parts.append(f"{s.skipped:,} skipped ({counts(s.skipped_by_reason)})")
    if s.missing:
        parts.append(plural(s.missing, "file") + " gone")
    if s.citations_found:
        parts.append(plural(s.citations_found, "citation") + " counted")
    text = ", ".join(parts) + f" in {s.seconds:.1f}s"
    if s.cancelled:
        return TaskOutcome("cancelled", text, "warning")
    return TaskOutcome("finished", text, news=bool(s.new or s.updated or s.missing))


def ingest_task(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
    from memtui.services.ingest import run_ingest

    def step(done: int, total: int, path: str) -> None:
        progress(done, total, f"reading {Path(path).name}")

    return describe_ingest(run_ingest(ctx, progress=step, cancel=cancel))


# ---- Phase 1 --------------------------------------------------------------------------------------


def _housekeeping(expired: int, opted_out: int) -> str:
    """Retention and opt-outs done at the start of a run (counts only)."""
    parts = []
    if expired:
        parts.append(f"retention removed {plural(expired, 'unused output')}")
    if opted_out:
        parts.append(f"forgot {plural(opted_out, 'rollout')} whose memory was turned off")
    return f" ({'; '.join(parts)})" if parts else ""


def describe_phase1(s: Phase1Summary, thread_id: str | None = None) -> TaskOutcome:
    outcome = _describe_phase1(s, thread_id)
    text = outcome.summary + _housekeeping(s.expired, len(s.opted_out))
    if s.older is not None:  # the backfill offer, as the Rollouts screen makes it
        text += f"; {s.older.words()}: {BACKFILL_KEY} extracts them"
        return dataclasses.replace(outcome, summary=text, news=True)
    return dataclasses.replace(outcome, summary=text)


def _describe_phase1(s: Phase1Summary, thread_id: str | None = None) -> TaskOutcome:
    skipped = counts(s.skipped, SKIP_REASON)
    if not s.claimed:
        if thread_id:
            why = skipped or "it is not in the index"
            return TaskOutcome("skipped", f"{thread_id[:13]} was not extracted: {why}", "warning")
        why = f" (not eligible: {skipped})" if skipped else ""
        hints = "".join(f"; {screen_words(h)}" for h in s.hints)
        return TaskOutcome("nothing to do", f"no rollout is ready for extraction{why}{hints}", news=False)
    parts = [f"{s.succeeded:,} succeeded", f"{s.noop:,} no-op", f"{s.failed:,} failed"]
    if s.lost_lease:
        parts.append(f"{s.lost_lease:,} lost lease")
    text = ", ".join(parts)
    if s.failures:
        text += " (" + "; ".join(f"{n}x {reason}" for reason, n in s.failures.items()) + ")"
    if s.redactions:
        text += ", " + plural(sum(s.redactions.values()), "secret") + " redacted"
    text += f" in {s.seconds:.1f}s"
    if s.cancelled:
        return TaskOutcome("cancelled", text, "warning")
    if s.failed and not s.succeeded and not s.noop:
        return TaskOutcome("failed", text, "error")
    return TaskOutcome("finished", text, "warning" if s.failed else "information")


def phase1_task(thread_id: str | None = None, all_threads: bool = False) -> TaskFn:
    """Phase 1 as ``memtui phase1`` runs it: one thread, the eligible ones, or (``all_threads``, the backfill of
    ``memtui phase1 --all``) every session whatever its age."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase1.run import run_phase1

        def step(done: int, total: int, detail: str) -> None:
            progress(done, total, detail)

        summary = run_phase1(ctx, thread_id=thread_id, all_threads=all_threads, progress=step, cancel=cancel)
        return describe_phase1(summary, thread_id)

    return run


# ---- the screens' words ----------------------------------------------------------------------------

# The domain's messages name the CLI command that does the next step; in the UI the same step is a key or a screen.
BACKFILL_KEY = "b on the Rollouts screen (1)"  # memtui phase1 --all
CLI_TO_SCREEN = {
    "`memtui review show`, then approve (all or --except hunks) or reject": (
        "review it on screen 3, then approve (all, or space leaves hunks out) or reject"
    ),
    "`memtui review approve --include-changes`": "approving with those changes (a on screen 3)",
    "(`memtui review show`)": "(screen 3)",
    "`memtui review show`": "the Review screen (3)",
    "`memtui review commit`": "c on screen 3",
    "`memtui history`": "the History screen (6)",
    "`memtui status`": "the Rollouts screen (1)",
    "`memtui phase2 --retry` (or the Jobs screen's t)": "the Jobs screen's t (screen 2)",
    "(use --force)": "(palette: Phase 2, ignoring the cooldown)",
    "`memtui phase1 --all`": BACKFILL_KEY,
    "`memtui phase1 --thread ID`": "e on the Rollouts screen (1)",
}


def screen_words(text: str) -> str:
    """A domain message as the UI says it: the key or screen for each CLI command it names."""
    for cli, screen in CLI_TO_SCREEN.items():
        text = text.replace(cli, screen)
    return text


# ---- Phase 2 --------------------------------------------------------------------------------------

NO_MEMORIES = "no memories to consolidate yet: Phase 1 extracts them first (palette: Phase 1)"
COOLDOWN = (
    "the last consolidation succeeded within phase2_cooldown_hours; to run it anyway use Phase 2 (ignore cooldown) "
    "in the palette"
)


def describe_phase2(r: Phase2Result) -> TaskOutcome:
    outcome = _describe_phase2(r)
    return dataclasses.replace(outcome, summary=outcome.summary + _housekeeping(r.expired, len(r.opted_out)))


def _describe_phase2(r: Phase2Result) -> TaskOutcome:
    verb = label(r.outcome, PHASE2_STATUS)
    files = plural(len(r.stat), "file")
    how = "offline" if r.offline else plural(r.turns, "agent turn")
    match r.outcome:
        case Outcome.AWAITING_REVIEW:
            return TaskOutcome(verb, f"run #{r.run_id} ({how}) changed {files}: review it on screen 3")
        case Outcome.APPROVED:
            return TaskOutcome(verb, f"run #{r.run_id} changed {files}, new baseline {str(r.commit)[:10]}")
        case Outcome.NO_CHANGES:
            return TaskOutcome(verb, f"{plural(r.selected, 'memory', 'memories')} selected; the memory is up to date")
        case Outcome.SKIPPED:
            return TaskOutcome(verb, _skip_words(r), "warning")
        case Outcome.FAILED | Outcome.BUSY:
            return TaskOutcome(verb, r.reason or "", "error")


def _skip_words(r: Phase2Result) -> str:
    """Why a run was skipped, as the screens say it (the key or screen that does the next step)."""
    match r.skip:
        case SkipReason.COOLDOWN:
            return COOLDOWN
        case SkipReason.NOTHING_TO_CONSOLIDATE:
            return _nothing_words(r)
        case SkipReason.AWAITING_REVIEW:
            return f"run #{r.run_id} is awaiting review: approve or reject it first (screen 3)"
        case SkipReason.LOCK_HELD | SkipReason.RETRY_BACKOFF | None:
            return r.reason or ""


def _nothing_words(r: Phase2Result) -> str:
    """Nothing to consolidate, and what would change it, as the screens say it."""
    nothing = r.nothing
    if nothing is not None and nothing.memories:
        return (
            f"none of the {plural(nothing.memories, 'memory', 'memories')} was made or used within max_unused_days "
            f"({nothing.max_unused_days} days); max_unused_days in config.toml widens the window"
        )
    if nothing is not None and nothing.older is not None:
        return f"{NO_MEMORIES}; and {nothing.older.words()}: {BACKFILL_KEY} reads those too"
    return NO_MEMORIES


def phase2_task(force: bool = False) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase2.consolidate import run_phase2

        steps = [0]

        def step(message: str) -> None:
            steps[0] += 1
            progress(0, None, f"step {steps[0]}: {message}")

        # a person asked for this run: the failure backoff (for automatic runs) does not hold it back
        return describe_phase2(run_phase2(ctx, force=force, retry=True, progress=step, cancel=cancel))

    return run


# ---- decisions and manual edits -------------------------------------------------------------------


def approve_task(
    run_id: int | None,
    include_changes: bool = False,
    expected_tree: str | None = None,
    *,
    decisions: HunkDecisions | None = None,
    reason: str | None = None,
) -> TaskFn:
    """Approve exactly the reviewed tree (with the person's hunk decisions), or it plus the changes the person was
    shown (``include_changes``)."""
    chosen = decisions or HunkDecisions()

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase2.review import approve

        progress(0, None, f"committing run #{run_id} as the new baseline")
        result = approve(
            ctx,
            run_id=run_id,
            include_changes=include_changes,
            expected_tree=expected_tree,
            except_ids=list(chosen.except_ids),
            amendments=dict(chosen.amendments),
            reason=reason,
            trusted_ids=list(chosen.trusted_ids),
        )
        text = f"run #{result.run_id} approved, new baseline {str(result.commit)[:10]}"
        if getattr(result, "hunks_out", 0):
            text += f"; {plural(result.hunks_in, 'hunk')} in, {result.hunks_out:,} left out"
        return TaskOutcome("finished", text)

    return run


def reject_task(reason: str, run_id: int | None) -> TaskFn:
    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase2.review import reject

        progress(0, None, f"undoing run #{run_id}")
        result = reject(ctx, reason, run_id=run_id)
        text = f"run #{result.run_id} rejected, {plural(len(result.restored), 'file')} restored"
        if result.kept:
            text += f"; your edits to {', '.join(result.kept)} kept"
        return TaskOutcome("finished", text)

    return run


def commit_task(message: str, tree: str | None = None) -> TaskFn:
    """The manual commit, pinned to the tree the person was shown (refused if the root changed since)."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase2.review import commit_manual_edit

        progress(0, None, "committing the memory root")
        commit = commit_manual_edit(ctx, message, expected_tree=tree)
        return TaskOutcome("finished", f"new baseline {str(commit)[:10]}")

    return run


# ---- history and forgetting ---------------------------------------------------------------------


def restore_task(version: int) -> TaskFn:
    """Bring back an earlier version of the memory as a run awaiting review (never a commit)."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.phase2.restore import restore_version

        progress(0, None, f"restoring version {version}")
        return TaskOutcome("finished", restore_version(ctx, version).message())

    return run


def lift_task(rejection_id: int) -> TaskFn:
    """Lift a remembered rejection: later runs may propose its lines again (recorded in the history)."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.review.decide import LiftError, lift

        try:
            row = lift(ctx.conn, rejection_id)
        except LiftError as exc:
            return TaskOutcome("not done", str(exc), "warning")
        return TaskOutcome(
            "finished",
            f"rejection #{row.id} ({row.file}, {row.when()}) lifted: later runs may propose its "
            f"{plural(len(row.added), 'line')} again",
        )

    return run


def forget_task(thread_id: str, reason: str | None, done: Callable[[], object] | None = None) -> TaskFn:
    """Forget a rollout and everything derived from it (the next Phase 2 removes it from the memory). A forget that
    cannot happen now (a run came to await review meanwhile) says why in words, and what to do; ``done`` runs only
    when the rollout was forgotten."""

    def run(ctx: Context, progress: Progress, cancel: threading.Event) -> TaskOutcome:
        from memtui.services.forget import ForgetError, forget

        progress(0, None, f"forgetting {thread_id[:13]}")
        try:
            result = forget(ctx, thread_id, reason)
        except ForgetError as exc:
            kept = " Your reason is kept: press F again then." if reason else ""
            return TaskOutcome("not done", f"{exc}.{kept}", "warning")
        if done is not None:
            done()
        return TaskOutcome("finished", result.message())

    return run
