"""Each memtui prompt's size beside Codex's template for the same job.

    .venv/bin/python benchmarks/prompts.py

memtui's figure is the template as memtui sends it: the Phase 1 system prompt verbatim, the Phase 1 input template
without a rollout, the consolidation prompt rendered for an empty INIT run with the default limits, and the read-path
template without a summary. Tokens are bytes / 4, the estimate the issue's figures use (Codex's own
APPROX_BYTES_PER_TOKEN), so the two columns compare like with like.

Codex's figures are the character counts of the public templates as stored in the openai/codex file index (and, for
the two Phase 1 templates, of a fork that carries upstream's ``codex-rs/memories/write`` layout, because the index
holds only the older ``core/templates`` versions of those files from openai/codex itself). The templates are
almost pure ASCII, so characters are bytes to within a few dozen.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CODEX = {  # prompt -> (characters, where the figure comes from)
    "stage_one_system.md": (
        30_585,
        "Electivus/electivus-codex@0d2da715 codex-rs/memories/write/templates/memories/stage_one_system.md",
    ),
    "stage_one_input.md": (
        427,
        "Electivus/electivus-codex@0d2da715 codex-rs/memories/write/templates/memories/stage_one_input.md",
    ),
    "consolidation.md": (
        51_466,
        "openai/codex@923df3e9 codex-rs/memories/write/templates/memories/consolidation.md",
    ),
    "read_path.md": (
        6_943,
        "RESMP-DEV/codex@94f15e72 codex-rs/ext/memories/templates/memories/read_path.md",
    ),
}


def memtui_prompts() -> dict[str, str]:
    """Each prompt as memtui sends it, without the run-specific payload (rollout, summary)."""
    from memtui.core.settings import Settings
    from memtui.services.phase1.prompt import load_prompt, render_template
    from memtui.services.phase2.prompt import PromptInputs, render_consolidation_prompt

    settings = Settings()
    root = Path(tempfile.mkdtemp(prefix="memtui-bench-prompts-")) / "memories"
    root.mkdir()
    return {
        "stage_one_system.md": load_prompt("stage_one_system.md"),
        "stage_one_input.md": render_template(
            load_prompt("stage_one_input.md"),
            {"rollout_path": "/r/rollout.jsonl", "rollout_cwd": "/work/proj", "rollout_contents": ""},
        ),
        "consolidation.md": render_consolidation_prompt(root, settings, PromptInputs(selected=[])),
        "read_path.md": load_prompt("read_path.md")
        .replace("{{ base_path }}", str(root))
        .replace("{{ memory_summary }}", ""),
    }


def main() -> int:
    os.environ.setdefault("MEMTUI_HOME", tempfile.mkdtemp(prefix="memtui-bench-home-"))
    rows = []
    for name, text in memtui_prompts().items():
        ours = len(text.encode("utf-8"))
        codex, source = CODEX[name]
        rows.append((name, ours, codex, source))
    print(f"{'prompt':<22} {'memtui bytes':>12} {'~tokens':>8} {'Codex chars':>12} {'~tokens':>8} {'ratio':>6}")
    for name, ours, codex, _ in rows:
        print(f"{name:<22} {ours:>12,} {ours // 4:>8,} {codex:>12,} {codex // 4:>8,} {ours / codex:>6.2f}")
    print("\nCodex figures from the public templates:")
    for name, _, _, source in rows:
        print(f"  {name}: {source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
