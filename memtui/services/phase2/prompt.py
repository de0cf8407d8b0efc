"""The consolidation prompt: ``prompts/consolidation.md`` filled with this run's limits and binding constraints.

Everything the agent must obey is computed here and stated in the prompt (renames, a person's edits, tombstones,
forget requests, rejections since the last approval, the turn and write budgets, the summary budget that export
really keeps), so the rules do not depend on the model noticing them in the diff.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memtui.adapters.memroot.files import DIFF_FILENAME, MEMORY_MD
from memtui.core import clock
from memtui.core.settings import Settings
from memtui.services.export import summary_budget_bytes
from memtui.services.phase2.prompt_inputs import Rejection, Rename, forget_lines
from memtui.services.phase2.tools import MAX_READ_LINES
from memtui.state.selection import Stage1Output

HISTORY_SHARE = 0.5  # of the consolidation model's effective window, for the tool loop's history
MAX_FORGET_LINES = 50

INIT_NOTE = (
    "INIT: there is no MEMORY.md yet. Build MEMORY.md and memory_summary.md from all inputs; both files must exist "
    "when you finish, even if the inputs are thin. Read only the Status section of the diff, then raw_memories.md "
    "part by part."
)
INCREMENTAL_NOTE = (
    "INCREMENTAL UPDATE: MEMORY.md exists. Apply the workspace diff to it: honour the binding constraints, forget "
    "what deleted inputs alone supported, follow renames, merge new inputs. Making no change is allowed when "
    "nothing durable changed."
)


@dataclass
class PromptInputs:
    selected: list[Stage1Output]
    person_edits: list[tuple[str, str]] = field(default_factory=list)
    renames: list[Rename] = field(default_factory=list)
    tombstones: int = 0  # lines a person deleted, banned by hash (the agent never sees the words)
    rejections: list[Rejection] = field(default_factory=list)
    do_not_relearn: list[str] = field(default_factory=list)  # hunks a person left out, with reasons
    forgotten: list[str] = field(default_factory=list)  # forgotten rollouts and the lines they gave
    health: list[str] = field(default_factory=list)  # memory health: restated, contradicted, a person's proposals


def load_template() -> str:
    return resources.files("memtui.prompts").joinpath("consolidation.md").read_text(encoding="utf-8")


def is_init(root: Path) -> bool:
    memory = root / MEMORY_MD
    return not memory.is_file() or not memory.read_text(encoding="utf-8", errors="replace").strip()


def history_budget_bytes(settings: Settings) -> int:
    """Bytes of tool-loop history kept per request: half the effective window at the dense (JSON, code) rate."""
    effective = settings.context_window_tokens * settings.effective_context_window_percent / 100
    return int(effective * HISTORY_SHARE * max(1.0, settings.bytes_per_token / 1.5))


def _bullets(lines: list[str], none: str) -> str:
    return "\n".join(f"   - {line}" for line in lines) if lines else f"   - {none}"


def _forget_requests(selected: list[Stage1Output]) -> list[str]:
    out = []
    for m in sorted(selected, key=lambda m: m.source_updated_at):
        out += [
            f"thread {m.thread_id} (updated_at {clock.iso(m.source_updated_at)}): forget: {f}"
            for f in forget_lines(m.raw_memory)
        ]
    return out[:MAX_FORGET_LINES]


def render_consolidation_prompt(root: Path, settings: Settings, inputs: PromptInputs) -> str:
    init = is_init(root)
    edits = [f"{status} {path}" for status, path in inputs.person_edits]
    renames = [f"{r.old} -> {r.new} (thread {r.thread_id})" for r in inputs.renames]
    rejections = []
    for r in inputs.rejections:
        files = ", ".join(r.files) or "no memory file"
        reason = r.reason or "(no reason given: the whole change was unwanted)"
        rejections.append(f"run #{r.run_id}, touched {files}: {reason}")
    if inputs.tombstones:
        tomb = (
            f"{inputs.tombstones} memory line(s) a person deleted are banned. You are not shown them: write nothing "
            "back that a person removed from these files, and memtui removes any banned line after your run."
        )
    else:
        tomb = "none yet (lines a person deletes are banned; memtui removes any of them after your run)."
    return string.Template(load_template()).safe_substitute(
        memory_root=str(root),
        diff_file=DIFF_FILENAME,
        mode="INIT" if init else "INCREMENTAL",
        mode_note=INIT_NOTE if init else INCREMENTAL_NOTE,
        selected_count=str(len(inputs.selected)),
        max_turns=str(settings.agent_max_turns),
        max_write_bytes=f"{settings.agent_max_write_bytes:,}",
        read_max_lines=str(MAX_READ_LINES),
        summary_max_bytes=f"{summary_budget_bytes(settings.bytes_per_token):,}",
        person_edits=_bullets(edits, "none"),
        renames=_bullets(renames, "none"),
        tombstones=tomb,
        forget_requests=_bullets(_forget_requests(inputs.selected), "none"),
        rejections=_bullets(rejections, "none"),
        do_not_relearn=_bullets(inputs.do_not_relearn, "none"),
        forgotten=_bullets(inputs.forgotten, "none"),
        health=_bullets(inputs.health, "none"),
    )
