"""The AGENTS.md chain Codex loads, measured, so memtui's block fits in what the chain leaves of the budget.

Codex loads the global instructions (``$CODEX_HOME/AGENTS.md``), then every ``AGENTS.md`` from the repository root
down to the working directory, all within one ``project_doc_max_bytes`` budget (32 KiB unless config.toml says
otherwise); in each folder an ``AGENTS.override.md`` is read instead of the ``AGENTS.md`` beside it. So a memtui
block in one file has only what the files loaded before it leave, and a block in an ``AGENTS.md`` that has an
override beside it is never read. Claude Code reads its CLAUDE.md chain whole (no byte limit), so only Codex's
chain is measured.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from memtui.services.export.cap import PROJECT_DOC_MAX_BYTES

AGENTS = "AGENTS.md"
OVERRIDE = "AGENTS.override.md"


@dataclass(frozen=True)
class ChainFile:
    path: Path
    size: int


@dataclass
class ChainFit:
    """What the chain leaves for the target: ``cap`` bytes of the target file are loaded."""

    budget: int
    before: list[ChainFile]
    cap: int
    hidden_by: Path | None = None
    warnings: list[str] = field(default_factory=list)


def project_doc_max_bytes(codex_home: Path) -> int:
    try:
        data = tomllib.loads((codex_home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return PROJECT_DOC_MAX_BYTES
    value = data.get("project_doc_max_bytes")
    return value if isinstance(value, int) and value > 0 else PROJECT_DOC_MAX_BYTES


def _loaded_in(folder: Path) -> Path | None:
    """The instructions file Codex reads in ``folder``: the override when there is one."""
    for name in (OVERRIDE, AGENTS):
        if (folder / name).is_file():
            return folder / name
    return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def measure_chain(target: Path, codex_home: Path, work_tree: Path | None) -> ChainFit | None:
    """The budget left for ``target`` (an AGENTS.md) once the files Codex loads before it are counted; None for a
    file Codex does not load as instructions (CLAUDE.md and others)."""
    if target.name not in (AGENTS, OVERRIDE):
        return None
    budget = project_doc_max_bytes(codex_home)
    folder = target.absolute().parent
    before: list[ChainFile] = []
    global_dir = codex_home.absolute()
    is_global = folder.resolve() == global_dir.resolve()
    if not is_global and (g := _loaded_in(global_dir)) is not None:
        before.append(ChainFile(g, _size(g)))
    if not is_global and work_tree is not None:
        root = work_tree.absolute()
        chain = [d for d in [folder, *folder.parents] if d == root or d.is_relative_to(root)]
        for d in reversed(chain[1:]):  # the repository root first, the target's folder excluded
            if (f := _loaded_in(d)) is not None:
                before.append(ChainFile(f, _size(f)))
    used = sum(f.size for f in before)
    fit = ChainFit(budget=budget, before=before, cap=max(0, budget - used))
    if target.name == AGENTS and (folder / OVERRIDE).is_file():
        fit.hidden_by = folder / OVERRIDE
        fit.warnings.append(
            f"{folder / OVERRIDE} exists, and Codex reads it instead of {target.name}: the memtui block in "
            f"{target} would be hidden; export to the override file, or merge the two"
        )
    if before:
        listed = ", ".join(f"{f.path} ({f.size:,} B)" for f in before)
        fit.warnings.append(
            f"Codex loads {listed} before {target.name}: {used:,} of its {budget:,}-byte project_doc_max_bytes "
            f"budget, leaving {fit.cap:,} bytes for {target}"
        )
        if fit.cap == 0:
            fit.warnings.append(
                f"nothing of {target} is loaded: the files before it use the whole budget (raise "
                f"project_doc_max_bytes in {codex_home / 'config.toml'}, or shorten them)"
            )
    return fit
