"""The read path: hand the memory to agents, as Codex reads it.

``render_prompt`` builds the block an agent needs (instructions from ``prompts/read_path.md`` plus the approved
``memory_summary.md`` cut to 2,500 tokens; see ``memtui.adapters.memroot.approved``); ``write_agents_md`` keeps that block current inside an AGENTS.md or
CLAUDE.md between memtui markers without touching a byte outside them; ``loader_warnings`` says when the
files are larger than what the agents' loaders read.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

from memtui.adapters.memroot.approved import approved
from memtui.adapters.memroot.files import MEMORY_SUMMARY
from memtui.services.agent_view import AgentView, NotInView, published

SUMMARY_TOKEN_LIMIT = 2_500  # Codex injects this much of memory_summary.md
CLAUDE_MEMORY_MAX_LINES = 200  # Claude Code loads the first 200 lines ...
CLAUDE_MEMORY_MAX_BYTES = 25_000  # ... or 25 KB of its MEMORY.md (the smaller KB reading, to warn early)
BEGIN_MARKER = "<!-- memtui:memory:begin -->"
END_MARKER = "<!-- memtui:memory:end -->"
DEFAULT_BYTES_PER_TOKEN = 3.0


def truncate_middle(text: str, max_tokens: int, bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN) -> tuple[str, int]:
    """Keep the head and the tail, replace the middle by ``…N tokens truncated…`` (Codex's truncation, with a
    conservative bytes-per-token). Cuts fall on character boundaries. Returns ``(text, tokens_cut)``."""
    data = text.encode("utf-8", errors="surrogatepass")
    max_bytes = summary_budget_bytes(bytes_per_token, max_tokens)
    if len(data) <= max_bytes:
        return text, 0
    left = max_bytes // 2
    right = max_bytes - left
    while left > 0 and (data[left] & 0xC0) == 0x80:  # the char straddling the cut goes
        left -= 1
    start = len(data) - right
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    cut = math.ceil((len(data) - max_bytes) / bytes_per_token)
    head = data[:left].decode("utf-8", errors="surrogatepass")
    tail = data[start:].decode("utf-8", errors="surrogatepass")
    return f"{head}…{cut} tokens truncated…{tail}", cut


def summary_budget_bytes(
    bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN, max_tokens: int = SUMMARY_TOKEN_LIMIT
) -> int:
    """The bytes of memory_summary.md an agent is given before the middle is cut (what ``truncate_middle`` keeps);
    the consolidation prompt states this same figure."""
    return int(max_tokens * bytes_per_token)


def read_path_template() -> str:
    return resources.files("memtui.prompts").joinpath("read_path.md").read_text(encoding="utf-8")


def summary_for_prompt(
    memory_root: Path,
    bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN,
    max_tokens: int = SUMMARY_TOKEN_LIMIT,
    *,
    include_untrusted: bool = False,
) -> str | None:
    """The approved memory_summary.md as agents may load it (``trust.export``), trimmed and middle-truncated; None
    when it is missing or blank."""
    view = AgentView(memory_root, include_untrusted=include_untrusted)
    try:
        text = view.text(MEMORY_SUMMARY, placeholders=False).strip()
    except NotInView:
        return None
    if not text:
        return None
    return truncate_middle(text, max_tokens, bytes_per_token)[0]


def render_prompt(
    memory_root: Path, bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN, *, include_untrusted: bool = False
) -> str | None:
    """The read-path block for an agent, or None when there is no summary (then the agent gets nothing)."""
    summary = summary_for_prompt(memory_root, bytes_per_token, include_untrusted=include_untrusted)
    if summary is None:
        return None
    link = published(memory_root.expanduser())  # agents open files here: the approved copy, never the working tree
    base = str(link.parent.resolve() / link.name)
    # Substitute the summary last so text inside it is never taken for a placeholder.
    rendered = read_path_template().replace("{{ base_path }}", base)
    head, sep, tail = rendered.partition("{{ memory_summary }}")
    return head + summary + tail if sep else rendered + "\n" + summary + "\n"


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


class MarkerError(ValueError):
    """The file's memtui markers do not make one complete block; nothing was written. The message names the line."""


def _check_markers(existing: str) -> None:
    """Exactly one begin marker followed by one end marker, or neither. Anything else (an end marker a person
    deleted, a copied block) would make the next export replace their own text, so it is an error naming the line."""
    found = [
        (number, kind)
        for number, line in enumerate(existing.splitlines(), 1)
        for kind, marker in (("begin", BEGIN_MARKER), ("end", END_MARKER))
        if marker in line
    ]
    if not found or [kind for _, kind in found] == ["begin", "end"]:
        return
    counts = {kind: sum(k == kind for _, k in found) for kind in ("begin", "end")}
    if counts["begin"] == 1 and counts["end"] == 0:
        line = found[0][0]
        why = f"line {line} has memtui's begin marker ({BEGIN_MARKER}) but no end marker ({END_MARKER}) follows"
    elif counts["begin"] == 0:
        why = f"line {found[0][0]} has memtui's end marker ({END_MARKER}) with no begin marker before it"
    else:
        lines = ", ".join(f"{kind} on line {number}" for number, kind in found)
        why = f"memtui's markers do not make one block ({lines})"
    raise MarkerError(
        f"{why}; nothing was written, so no text of yours is replaced. Put the missing marker back where memtui's "
        "section ends (or remove memtui's markers and its section), then export again"
    )


def splice_block(existing: str, block: str | None) -> str:
    """``existing`` with the memtui block replaced (or appended); everything outside the markers is unchanged.

    ``block=None`` empties an existing section (markers kept) and adds none. The block uses the file's own line
    endings. Markers that do not make one complete block raise ``MarkerError`` (naming the line).
    """
    _check_markers(existing)
    nl = newline_of(existing)
    body = "" if block is None else nl.join(block.strip("\n").replace("\r\n", "\n").split("\n")) + nl
    begin = existing.find(BEGIN_MARKER)
    end = existing.find(END_MARKER, begin + len(BEGIN_MARKER)) if begin >= 0 else -1
    if begin >= 0 and end >= 0:
        return existing[: begin + len(BEGIN_MARKER)] + nl + body + existing[end:]
    if block is None:
        return existing
    section = f"{BEGIN_MARKER}{nl}{body}{END_MARKER}{nl}"
    if not existing:
        return section
    sep = "" if existing.endswith(nl + nl) else (nl if existing.endswith(("\n", "\r")) else nl + nl)
    return existing + sep + section


def loader_warnings(memory_root: Path, bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN) -> list[str]:
    """What the agents' loaders will not see of the approved memory: Codex injects 2,500 tokens of
    memory_summary.md, Claude Code loads the first 200 lines / 25 KB of a MEMORY.md."""
    memory = approved(memory_root)
    return size_warnings(memory.read_bytes("memory_summary.md"), memory.read_bytes("MEMORY.md"), bytes_per_token)


def size_warnings(
    summary: bytes | None, data: bytes | None, bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN
) -> list[str]:
    """``loader_warnings`` for given bytes of memory_summary.md and MEMORY.md (the editor warns about its own)."""
    out: list[str] = []
    if summary is not None:
        size = len(summary.strip())
        tokens = math.ceil(size / bytes_per_token)
        if tokens > SUMMARY_TOKEN_LIMIT:
            out.append(
                f"memory_summary.md is about {tokens:,} tokens ({size:,} bytes); agents are given only "
                f"{SUMMARY_TOKEN_LIMIT:,} tokens of it, the middle is cut"
            )
    if data is not None:
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        if lines > CLAUDE_MEMORY_MAX_LINES or len(data) > CLAUDE_MEMORY_MAX_BYTES:
            out.append(
                f"MEMORY.md has {lines:,} lines / {len(data):,} bytes; Claude Code loads only the first "
                f"{CLAUDE_MEMORY_MAX_LINES} lines or {CLAUDE_MEMORY_MAX_BYTES // 1000} KB of a MEMORY.md "
                f"(agents that search it with rg are unaffected)"
            )
    return out
