"""The ``Extractor`` interface (rollout → stage-one output) and its model-backed implementation.

Both implementations redact what they read before using it; ``run.py`` owns everything around them (claim, output
redaction, finalize, the attempt record), so the offline extractor goes through the same path as the model.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from memtui.adapters.llm.backends.base import Backend, FailureKind
from memtui.adapters.llm.backends.choose import model_if_set
from memtui.adapters.llm.structured import InvalidReply, StructuredCallError
from memtui.adapters.redact import redact
from memtui.adapters.rollouts.model import Transcript
from memtui.adapters.sources import registry
from memtui.core.hidden import strip_hidden
from memtui.core.settings import Settings
from memtui.domain.render import render_items
from memtui.services.phase1.annotate import annotate, sources_of
from memtui.services.phase1.eligibility import Candidate
from memtui.services.phase1.output_check import stage_one_problems
from memtui.services.phase1.prompt import build_stage_one_input_message, stage_one_system_prompt
from memtui.services.phase1.quotes import enforce_user_quotes, user_words


class StageOneOutput(BaseModel):
    """The Phase 1 output contract, Codex's: unknown keys are an error; the slug may be null (or absent)."""

    model_config = ConfigDict(extra="forbid")

    rollout_summary: str
    rollout_slug: str | None = None
    raw_memory: str


@dataclass
class Extraction:
    """What one extraction produced, plus the measurements recorded in ``job_runs``."""

    output: StageOneOutput
    offline: bool
    model: str
    input_bytes: int = 0  # raw rollout file size
    sent_bytes: int = 0  # bytes of the user message sent to the model (0 offline)
    estimated_tokens: int = 0
    truncated_tokens: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int | None = None
    redactions: dict[str, int] = field(default_factory=dict)  # input-side redactions by kind
    user_said: str | None = None  # the user's own words (redacted, normalised), to check the output's quotes
    dropped_quotes: list[str] = field(default_factory=list)  # output lines quoting words the user never said
    items: Transcript | None = None  # the rollout's memory items, to derive each statement's trust class
    hidden_removed: int = 0  # invisible characters removed from the output (``trust.hidden``)
    dropped_untrusted: list[str] = field(default_factory=list)  # lines claiming the user's authority without it


class ExtractionFailed(RuntimeError):
    """A job failure with its reason and whatever was measured before it failed.

    ``stops_run``: the backend cannot serve anything now (not installed, not logged in, a usage limit), so the run
    stops claiming instead of failing every remaining job the same way.
    """

    def __init__(self, reason: str, partial: Extraction | None = None, *, stops_run: bool = False):
        super().__init__(reason)
        self.partial = partial
        self.stops_run = stops_run


class Extractor(Protocol):
    offline: bool
    model: str

    async def extract(self, job: Candidate) -> Extraction: ...


# A reply that is not the object asked for (bad JSON, junk inside the fields) is asked for again once, then the job
# fails with the reason: small models are erratic, but two junk replies in a row mean this model cannot do it.
INVALID_OUTPUT_ATTEMPTS = 2


def file_size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def remove_hidden(info: Extraction) -> None:
    """Remove invisible characters from the output (``trust.hidden``), counted. Before the quote check and the
    redaction: a secret or a quote split by a zero-width character is whole again when they look at it."""
    out = info.output
    fields = {name: strip_hidden(getattr(out, name) or "") for name in ("raw_memory", "rollout_summary")}
    removed = sum(f.removed for f in fields.values())
    if removed:
        info.hidden_removed += removed
        info.output = out.model_copy(update={name: f.text for name, f in fields.items()})


def keep_faithful_quotes(info: Extraction) -> None:
    """Drop output lines that quote the user with words no ``user`` item holds (``services/phase1/quotes.py``); hidden
    characters are removed first (``remove_hidden``)."""
    remove_hidden(info)
    if info.user_said is None:
        return
    out = info.output
    raw = enforce_user_quotes(out.raw_memory, info.user_said)
    summary = enforce_user_quotes(out.rollout_summary, info.user_said)
    if raw.dropped or summary.dropped:
        info.dropped_quotes = raw.dropped + summary.dropped
        info.output = out.model_copy(update={"raw_memory": raw.text, "rollout_summary": summary.text})


MEMORY_TURNED_OFF = (
    "memory turned off for this thread (its last session_meta, or Codex's state); nothing was read or sent"
)


def mark_trust(info: Extraction, out: StageOneOutput, items: Transcript | None = None) -> StageOneOutput:
    """``out`` (the redacted output: markers after a line would break a secret's multi-line context) with every
    statement marked with the trust class its cited items earn (``trust.annotate``)."""
    items = info.items if items is None else items
    info.items = None  # not needed past this point; a big rollout's items should not outlive the job
    sources, classes = sources_of(items or Transcript([]))  # no items: nothing cited, every statement is the agent's
    raw = annotate(out.raw_memory, sources, classes)
    summary = annotate(out.rollout_summary, sources, classes)
    info.hidden_removed += raw.hidden_removed + summary.hidden_removed
    info.dropped_untrusted += raw.dropped + summary.dropped
    return out.model_copy(update={"raw_memory": raw.text, "rollout_summary": summary.text})


def read_items(job: Candidate) -> Transcript:
    """The rollout's memory items, read at extraction time. A thread whose memory the user turned off since it was
    indexed (a Codex file grew by a ``session_meta`` saying so: the source's ``memory_off``) is refused here, the one
    path every extractor (model, offline, batch) reads through, so the opt-out holds even before the next ingest
    records it."""
    try:
        source = registry.source(job.source_kind)
        data, _ = source.load(Path(job.path))
    except Exception as exc:  # missing, unreadable or empty file: a recorded failure, not a crash
        raise ExtractionFailed(f"cannot read rollout {job.path}: {exc}") from exc
    if source.memory_off(Path(job.path), data, job.thread_id):
        raise ExtractionFailed(MEMORY_TURNED_OFF)
    try:
        return Transcript(source.items(Path(job.path), data))
    except Exception as exc:
        raise ExtractionFailed(f"cannot read rollout {job.path}: {exc}") from exc


def add_counts(into: dict[str, int], counts: dict[str, int]) -> dict[str, int]:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n
    return into


class ModelExtractor:
    """render numbered items → redact (whole string) → budget/truncate → render → one strict structured call,
    on a backend (``llm.backends``)."""

    offline = False

    def __init__(self, settings: Settings, backend: Backend, model: str | None = None):
        self.settings = settings
        self.backend = backend
        if backend.own_tools:  # an agent CLI: its own default model unless the user chose one
            self.request_model = model or model_if_set(settings, "extract_model")
        else:
            self.request_model = model or settings.extract_model
        self.model = backend.describe_model(self.request_model)
        self.system = stage_one_system_prompt(settings)

    async def aclose(self) -> None:
        await self.backend.aclose()

    def prepare(self, job: Candidate) -> tuple[str, Extraction]:
        """The user message to send (CPU work, run off the event loop) and the measurements so far."""
        return self.prepare_items(job, read_items(job))

    def prepare_items(self, job: Candidate, items: Transcript, rendered: str | None = None) -> tuple[str, Extraction]:
        """``prepare`` from the already read items (and their rendering: the batch path hashes it too)."""
        red = redact(render_items(items) if rendered is None else rendered)
        built = build_stage_one_input_message(job.path, job.cwd, red.text, self.settings, system=self.system)
        info = Extraction(
            output=StageOneOutput(rollout_summary="", raw_memory=""),
            offline=False,
            model=self.model,
            input_bytes=file_size(job.path),
            sent_bytes=len(built.message.encode("utf-8")),
            estimated_tokens=built.estimated_tokens,
            truncated_tokens=built.truncated_tokens,
            redactions=dict(red.counts),
            user_said=user_words(items),
            items=items,
        )
        return built.message, info

    async def extract(self, job: Candidate) -> Extraction:
        message, info = await asyncio.to_thread(self.prepare, job)
        ptok = ctok = None
        for attempt in range(1, INVALID_OUTPUT_ATTEMPTS + 1):
            try:
                result = await self.backend.structured(
                    model=self.request_model,
                    system=self.system,
                    user=message,
                    output_model=StageOneOutput,
                    schema_name="stage_one_output",
                )
            except StructuredCallError as exc:
                ptok, ctok = _add(ptok, exc.prompt_tokens), _add(ctok, exc.completion_tokens)
                info.prompt_tokens, info.completion_tokens = ptok, ctok
                invalid = isinstance(exc, InvalidReply) or getattr(exc, "kind", None) is FailureKind.INVALID_OUTPUT
                if invalid and attempt < INVALID_OUTPUT_ATTEMPTS:
                    continue
                reason = str(exc) if not invalid or str(exc).startswith("invalid_output") else f"invalid_output: {exc}"
                raise ExtractionFailed(reason, info, stops_run=getattr(exc, "stops_run", False)) from exc
            ptok, ctok = _add(ptok, result.prompt_tokens), _add(ctok, result.completion_tokens)
            info.prompt_tokens, info.completion_tokens = ptok, ctok
            info.latency_ms = result.latency_ms
            problems = stage_one_problems(result.output)
            if not problems:
                break
            if attempt == INVALID_OUTPUT_ATTEMPTS:
                raise ExtractionFailed("invalid_output: " + "; ".join(problems), info)
        info.output = result.output
        info.model = result.model  # the model the backend says answered (an agent CLI may pick its own)
        keep_faithful_quotes(info)
        return info


def _add(total: int | None, more: int | None) -> int | None:
    return more if total is None else total + (more or 0)
