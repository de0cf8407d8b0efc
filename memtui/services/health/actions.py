"""What a person does with a memory block on the Health screen or with ``memtui health``: the same functions.

- confirm: renews its last verified time (the only thing that does);
- propose an update or a removal: a binding input to the next Phase 2 run, which comes back as a reviewed hunk;
- remove now: a person's edit of MEMORY.md (the line goes, and its hash into the tombstones so consolidation does not
  bring it back), committed through the gate's manual commit, pinned to the tree the edit produced.
"""

from __future__ import annotations

from dataclasses import dataclass

from memtui.adapters.memroot import baseline
from memtui.adapters.memroot.edit import load_file, save_file
from memtui.adapters.memroot.files import MEMORY_MD
from memtui.adapters.memroot.lock import memory_root_lock
from memtui.services.context import Context
from memtui.services.health.blocks import parse_blocks
from memtui.services.phase2 import review
from memtui.services.phase2.prompt_inputs import person_edits, record_tombstones
from memtui.state import health as store
from memtui.state.health import Proposal


class HealthActionError(RuntimeError):
    """The action cannot be done now; the message says why and what to do."""


@dataclass(frozen=True)
class Removed:
    block_id: str
    line: str
    commit: str


def confirm(ctx: Context, block_id: str) -> int:
    try:
        return store.confirm(ctx.conn, block_id)
    except KeyError:
        raise HealthActionError(f"no memory block {block_id}; run `memtui health` first") from None


def propose(ctx: Context, block_id: str, proposal: Proposal) -> str:
    """Record the proposal for the next Phase 2 run (which runs at once, without the cooldown: a person asked);
    returns what that run will do with it, as the person should be told."""
    try:
        store.propose(ctx.conn, block_id, proposal)
    except KeyError:
        raise HealthActionError(f"no memory block {block_id}; run `memtui health` first") from None
    return proposal_outcome(ctx, proposal)


def proposal_outcome(ctx: Context, proposal: Proposal) -> str:
    """What the next run does with a proposal: a hunk to review, or (an update with the offline provider, which
    cannot reword) nothing until a model runs it."""
    from memtui.adapters.llm.backends.choose import resolved_provider

    if proposal == Proposal.UPDATE and resolved_provider(ctx.settings) == "offline":
        return (
            "an update needs a model: the offline consolidator cannot reword a line, so it stays proposed until a "
            "run with a model (--set provider=openai|codex|claude|local); `--propose-removal` the offline run can do"
        )
    return "the next `memtui phase2` runs now (no cooldown: you asked) and brings it back as a hunk to review"


def remove_now(ctx: Context, block_id: str) -> Removed:
    """Delete the block's line from MEMORY.md and commit that as a person's edit. Refused while a run awaits review
    or while other uncommitted edits of the memory files exist (the commit would take them too, unseen)."""
    root = ctx.paths.memory_root
    if (run := review.pending_run(ctx.conn)) is not None:
        raise HealthActionError(f"Phase 2 run #{run.id} awaits review; approve or reject it first")
    if edits := person_edits(review.workspace_diff(ctx)[0]):
        names = ", ".join(p for _, p in edits)
        raise HealthActionError(f"{names} changed since the last commit; commit or undo that first (`memtui review`)")
    loaded = load_file(root, MEMORY_MD)
    lines = loaded.text.splitlines(keepends=True)
    index = next((i for i, b in enumerate(parse_blocks(loaded.text)) if b.id == block_id), None)
    if index is None:
        raise HealthActionError(f"no memory block {block_id} in {MEMORY_MD}; run `memtui health` again")
    block = parse_blocks(loaded.text)[index]
    del lines[block.line - 1]
    save_file(root, MEMORY_MD, "".join(lines), loaded.sha256)
    with memory_root_lock(root, "record the removal"):
        changes, diff = baseline.stat_and_diff(root)
        record_tombstones(ctx.conn, root, changes, diff)  # a person's deletion outlives the commit that shows it
        tree = baseline.write_worktree_tree(root)
        baseline.run_git(root, "read-tree", "HEAD")  # the index back at the baseline: the commit stages itself
    commit = review.commit_manual_edit(ctx, f"memory health: removed {block.text[:200]}", expected_tree=tree)
    return Removed(block_id, block.text, commit)
