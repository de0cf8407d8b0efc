"""Codex's AGENTS.md byte cap, applied to the memtui block of an exported AGENTS.md.

Codex concatenates the AGENTS.md files from the repository root down to the working directory and keeps only
the first ``project_doc_max_bytes`` (32 KiB by default) of the result; the rest is silently dropped. A memtui block
appended to a long AGENTS.md would be the part that gets cut, or be cut in half. ``fit_agents_md`` keeps the block
whole inside the cap: it trims the middle of the memory summary when that is enough, and otherwise moves the block
to the top of the file (the person's text is kept byte for byte, only its position relative to the block changes).
Every such change comes with a warning. Claude Code has no such cap, so CLAUDE.md files are left alone.
``write_agents_md`` writes the fitted file, so the export depends on the cap and never the other way round.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memtui.core.private import write_private_bytes
from memtui.services.export import BEGIN_MARKER, END_MARKER, newline_of, splice_block

PROJECT_DOC_MAX_BYTES = 32 * 1024  # Codex's default project_doc_max_bytes
CAPPED_NAMES = frozenset({"agents.md", "agents.override.md"})
SUMMARY_BEGIN = "========= MEMORY_SUMMARY BEGINS ========="
SUMMARY_END = "========= MEMORY_SUMMARY ENDS ========="
MIN_SUMMARY_BYTES = 1024  # below this a trimmed summary is useless: move the block instead


@dataclass
class CapFit:
    text: str
    warnings: list[str] = field(default_factory=list)


def _size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogateescape"))


def _block_end(text: str) -> int:
    """Bytes up to the end of the memtui block's closing marker (0 when there is none)."""
    i = text.find(END_MARKER)
    return _size(text[: i + len(END_MARKER)]) if i >= 0 else 0


def trim_summary(block: str, cut_bytes: int) -> str | None:
    """The block with ``cut_bytes`` (plus the marker) removed from the middle of its memory summary; None when the
    summary is too short for that."""
    start, end = block.find(SUMMARY_BEGIN), block.find(SUMMARY_END)
    if start < 0 or end < start:
        return None
    head_end = start + len(SUMMARY_BEGIN) + 1
    summary = block[head_end:end].encode("utf-8")
    marker = "\n…[memtui: {} bytes of the summary cut to fit Codex's 32 KiB AGENTS.md limit]…\n"
    remove = cut_bytes + len(marker.format(cut_bytes).encode()) + 16
    keep = len(summary) - remove
    if keep < MIN_SUMMARY_BYTES:
        return None
    left = keep // 2
    while left > 0 and (summary[left] & 0xC0) == 0x80:
        left -= 1
    right = len(summary) - (keep - left)
    while right < len(summary) and (summary[right] & 0xC0) == 0x80:
        right += 1
    cut = right - left
    middle = marker.format(cut)
    text = summary[:left].decode("utf-8") + middle + summary[right:].decode("utf-8")
    return block[:head_end] + text + block[end:]


def fit_agents_md(name: str, existing: str, block: str | None, cap: int = PROJECT_DOC_MAX_BYTES) -> CapFit:
    """``existing`` with the memtui block spliced in so that the block is never the part Codex cuts."""
    nl = newline_of(existing)
    text = splice_block(existing, block)
    if block is None or name.lower() not in CAPPED_NAMES or _size(text) <= cap:
        return CapFit(text)
    total = _size(text)
    if _block_end(text) <= cap:
        return CapFit(
            text,
            [
                f"{name} is {total:,} bytes; Codex reads only the first {cap:,} (project_doc_max_bytes), so the "
                f"last {total - cap:,} bytes, after the memtui block, are not loaded"
            ],
        )
    trimmed = trim_summary(block, _block_end(text) - cap)
    if trimmed is not None:
        text = splice_block(existing, trimmed)
        if _block_end(text) <= cap:
            return CapFit(
                text,
                [
                    f"{name} would be {total:,} bytes and Codex reads only the first {cap:,} (project_doc_max_bytes): "
                    f"the memory summary in the memtui block was trimmed in the middle so the block stays whole"
                ],
            )
    # The person's own text before the block already fills the cap: put the block first instead.
    without = splice_block(existing, None)
    rest = without.replace(f"{BEGIN_MARKER}{nl}{END_MARKER}{nl}", "", 1)
    section = splice_block("", block).replace("\n", nl) if nl != "\n" else splice_block("", block)
    moved = section + (nl if rest and not rest.startswith(nl) else "") + rest
    over = _size(moved) - cap
    if _block_end(moved) > cap:  # even alone the block is larger than what is left of the budget
        return CapFit(
            moved,
            [
                f"the memtui block is {_block_end(moved):,} bytes but only {cap:,} of {name} are loaded "
                f"(project_doc_max_bytes, less the files Codex loads before it): Codex loads only its first "
                f"{cap:,} bytes (raise project_doc_max_bytes in ~/.codex/config.toml, or export less)"
            ],
        )
    return CapFit(
        moved,
        [
            f"{name} is {_size(moved):,} bytes and Codex reads only the first {cap:,} (project_doc_max_bytes): the "
            f"memtui block was moved to the top of the file so it is loaded whole; the last {max(over, 0):,} bytes "
            f"of your own text are not loaded (raise project_doc_max_bytes in ~/.codex/config.toml, or shorten it)"
        ],
    )


AgentsMdResult = Literal["created", "updated", "unchanged"]


def write_agents_md(
    path: Path, block: str | None, warn: Callable[[str], None] | None = None, cap: int | None = None
) -> AgentsMdResult:
    """Write or refresh the memtui section of an AGENTS.md / CLAUDE.md. An existing file is replaced atomically
    (mode kept; a symlink is followed, not replaced). Codex's 32 KiB AGENTS.md cap is respected (``fit_agents_md``);
    ``warn`` receives what that changed. ``cap``: the bytes of this file Codex loads, when the files it loads before
    it (``export_chain``) leave less than the whole budget."""

    def splice(existing: str) -> str:
        fit = fit_agents_md(path.name, existing, block, PROJECT_DOC_MAX_BYTES if cap is None else cap)
        for message in fit.warnings:
            (warn or (lambda _m: None))(message)
        return fit.text

    path = path.resolve() if path.is_symlink() else path
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if block is None:
            return "unchanged"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private_bytes(path, splice("").encode("utf-8"))  # a file memtui creates is 0600
        return "created"
    existing = raw.decode("utf-8", errors="surrogateescape")  # round-trips any bytes outside the block
    updated = splice(existing).encode("utf-8", errors="surrogateescape")
    if updated == raw:
        return "unchanged"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(updated)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return "updated"
