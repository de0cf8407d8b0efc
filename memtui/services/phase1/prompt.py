"""The Phase 1 user message: token budget, conservative token estimate, middle truncation, template rendering.

Codex assumes 4 bytes per token everywhere, which under-counts JSON and code and makes stage-1 requests overflow
the context window (openai/codex#35093, #38860). Here the estimate counts byte classes: letters and
spaces (prose) at 4 bytes per token, punctuation, digits and control characters (JSON, code, paths) at
``bytes_per_token`` / 1.5 (2 by default), non-ASCII bytes at 2. A JSON rollout lands near 3 bytes per token,
prose near 4, escaped or minified text lower. No tokenizer, nothing downloaded, a few C-speed passes over bytes.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from functools import cache
from importlib import resources

import memtui.prompts  # the package data's package, loaded with this module rather than by a run's first prompt
from memtui.core.settings import Settings
from memtui.domain.render import TIER_OF, Tier, cut_middle, origin_of_line

DEFAULT_ROLLOUT_TOKEN_LIMIT = 150_000  # reference: fallback when the context window is unknown
# At or below this window the full stage-one instructions (~5,000 tokens) would crowd out the rollout: the compact
# prompt (same rules, fewer words) is sent instead.
COMPACT_PROMPT_MAX_WINDOW = 32_768
ESTIMATE_SLACK_TOKENS = 32
STAGE_ONE_SYSTEM = "stage_one_system.md"
STAGE_ONE_SYSTEM_COMPACT = "stage_one_system_compact.md"
PROSE_BYTES_PER_TOKEN = 4.0
NON_ASCII_BYTES_PER_TOKEN = 2.0

_PROSE = (string.ascii_letters + " ").encode()
_ASCII = bytes(range(128))


def rollout_token_budget(settings: Settings, context_window: int | None = -1, overhead_tokens: int = 0) -> int:
    """70 % of the effective window (95 %), and never more than what the system prompt and the rest of the user
    message (``overhead_tokens``) and the reserved reply leave of it; ``context_window`` overrides the setting,
    None/0 → 150,000."""
    ctx = settings.model_context_window if context_window == -1 else context_window
    if not ctx or ctx <= 0:
        return DEFAULT_ROLLOUT_TOKEN_LIMIT
    effective = ctx * settings.effective_context_window_percent // 100
    share = effective * settings.context_window_percent // 100
    # the pieces are estimated apart (each rounded up) and the cut adds its marker: a few tokens of slack
    room = effective - overhead_tokens - settings.reply_reserve_tokens - ESTIMATE_SLACK_TOKENS
    return max(1, min(share, room))


def stage_one_system_prompt(settings: Settings) -> str:
    """The stage-one instructions for the model's window: the compact prompt for small (local) windows."""
    small = settings.model_context_window <= COMPACT_PROMPT_MAX_WINDOW
    return load_prompt(STAGE_ONE_SYSTEM_COMPACT if small else STAGE_ONE_SYSTEM)


def estimate_tokens_bytes(data: bytes, bytes_per_token: float = 3.0) -> int:
    """Conservative token count of UTF-8 bytes (see the module docstring)."""
    if not data:
        return 0
    non_ascii = len(data.translate(None, _ASCII))
    ascii_len = len(data) - non_ascii
    dense = ascii_len - (len(data) - len(data.translate(None, _PROSE)))
    prose = ascii_len - dense
    dense_rate = max(1.0, bytes_per_token / 1.5)
    by_class = prose / PROSE_BYTES_PER_TOKEN + dense / dense_rate + non_ascii / NON_ASCII_BYTES_PER_TOKEN
    return math.ceil(by_class)


def estimate_tokens(text: str, bytes_per_token: float = 3.0) -> int:
    return estimate_tokens_bytes(text.encode("utf-8"), bytes_per_token)


@dataclass(frozen=True)
class Truncated:
    text: str
    estimated_tokens: int  # of the returned text
    truncated_tokens: int  # estimated tokens cut from the middle (0 = untouched)
    truncated_bytes: int


def truncation_marker(tokens: int, nbytes: int) -> str:
    return f"…[memtui: {tokens} tokens truncated from the middle (≈{nbytes} bytes)]…"


def truncate_middle(text: str, max_tokens: int, bytes_per_token: float = 3.0) -> Truncated:
    """Keep the head and tail of ``text`` within ``max_tokens`` (estimated), cutting on character boundaries.

    The kept byte count starts from the text's own measured density and shrinks until the estimate fits, so a
    dense head or tail cannot push the result over the budget.
    """
    data = text.encode("utf-8")
    total = estimate_tokens_bytes(data, bytes_per_token)
    if total <= max_tokens:
        return Truncated(text, total, 0, 0)
    density = len(data) / max(total, 1)  # bytes per token of this text
    keep = int(max_tokens * density)
    while True:
        head, tail = _split_keep(data, keep)
        cut = data[len(head) : len(data) - len(tail)]
        cut_tokens = estimate_tokens_bytes(cut, bytes_per_token)
        out = head.decode("utf-8") + truncation_marker(cut_tokens, len(cut)) + tail.decode("utf-8")
        est = estimate_tokens(out, bytes_per_token)
        if est <= max_tokens or keep <= 0:
            return Truncated(out, est, cut_tokens, len(cut))
        keep = max(0, keep - max(64, (est - max_tokens) * 4))


OMITTED = "[memtui: items omitted here to fit the budget]"


def fit_by_tier(text: str, max_tokens: int, bytes_per_token: float = 3.0) -> Truncated:
    """The rendered items within ``max_tokens``, chosen like Codex's Phase 1 (``rollout_input.rs``,
    ``serialize_tiered_input``): tier by tier (the person's words, final answers, other agents, commentary,
    context, tools), newest first within a tier, the last item that does not fit cut to what is left; then
    rendered in source order with one marker per run of left-out items. Text that is not numbered items (or that
    fits) falls back to the middle cut."""
    lines = text.split("\n")
    origins = [origin_of_line(line) for line in lines]
    total = estimate_tokens(text, bytes_per_token)
    if total <= max_tokens or any(o is None for o in origins):
        return truncate_middle(text, max_tokens, bytes_per_token)
    omitted = estimate_tokens(OMITTED, bytes_per_token) + 1
    remaining = max_tokens - omitted
    chosen: list[str | None] = [None] * len(lines)
    for tier in Tier:
        for index in range(len(lines) - 1, -1, -1):
            origin = origins[index]
            if origin is None or TIER_OF[origin] is not tier or remaining <= omitted + 32:
                continue
            line = lines[index]
            cost = estimate_tokens(line, bytes_per_token) + 1
            if cost > remaining - omitted:
                density = len(line.encode("utf-8")) / max(cost, 1)
                line = cut_middle(line, int((remaining - omitted - 32) * density))
                cost = estimate_tokens(line, bytes_per_token) + 1
            remaining -= cost + omitted
            chosen[index] = line
    out: list[str] = []
    for kept in chosen:
        if kept is not None:
            out.append(kept)
        elif not out or out[-1] != OMITTED:
            out.append(OMITTED)
    kept = "\n".join(out)
    kept_tokens = estimate_tokens(kept, bytes_per_token)
    cut = len(text.encode("utf-8")) - len(kept.encode("utf-8"))
    return Truncated(kept, kept_tokens, max(0, total - kept_tokens), max(0, cut))


def _split_keep(data: bytes, keep: int) -> tuple[bytes, bytes]:
    """Head of at most keep//2 bytes and tail of at most the rest, both on UTF-8 character boundaries."""
    left = keep // 2
    right = keep - left
    end = left
    while 0 < end < len(data) and data[end] & 0xC0 == 0x80:
        end -= 1
    start = len(data) - right
    while 0 < start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    start = max(start, end)
    return data[:end], data[start:]


@cache
def load_prompt(name: str) -> str:
    """A prompt shipped as package data under ``memtui/prompts``."""
    return resources.files(memtui.prompts).joinpath(name).read_text(encoding="utf-8")


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def render_template(template: str, values: dict[str, str]) -> str:
    """One pass over the template, so text inside a value (a rollout) is never itself expanded."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True)
class StageOneInput:
    message: str
    estimated_tokens: int  # of the rollout contents as sent
    truncated_tokens: int


def build_stage_one_input_message(
    rollout_path: str,
    rollout_cwd: str | None,
    rollout_contents: str,
    settings: Settings,
    context_window: int | None = -1,
    system: str = "",
) -> StageOneInput:
    """Budget the (already redacted) rendered items by tier (``fit_by_tier``), then render ``stage_one_input.md``.

    The budget counts everything else the request carries: ``system`` (the instructions sent with it), the rest of
    the user message, and the reply reserved in the window."""
    values = {"rollout_path": rollout_path, "rollout_cwd": rollout_cwd or "unknown", "rollout_contents": ""}
    template = load_prompt("stage_one_input.md")
    overhead = estimate_tokens(system + render_template(template, values), settings.bytes_per_token)
    budget = rollout_token_budget(settings, context_window, overhead)
    t = fit_by_tier(rollout_contents, budget, settings.bytes_per_token)
    message = render_template(template, {**values, "rollout_contents": t.text})
    return StageOneInput(message, t.estimated_tokens, t.truncated_tokens)
