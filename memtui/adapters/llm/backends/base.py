"""One interface over every model backend: a strict structured call (Phase 1) and an agent run (Phase 2).

A backend only talks to a model. Policy stays with the callers: leases and the running cap (``phase1.run``),
redaction of what is sent and stored (``phase1.extractor`` / ``phase1.run``), validation of the reply (the pydantic
model with ``extra="forbid"``, here), confinement and review of what an agent wrote (``phase2``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, TypeVar

from pydantic import BaseModel

from memtui.adapters.llm.structured import StructuredCallError, StructuredResult

M = TypeVar("M", bound=BaseModel)


class FailureKind(StrEnum):
    """Why a backend call failed; the first three stop a run from claiming more work (nothing would succeed)."""

    NOT_INSTALLED = "not_installed"
    NOT_LOGGED_IN = "not_logged_in"
    RATE_LIMITED = "rate_limited"  # a rate or usage limit: back off
    INVALID_OUTPUT = "invalid_output"
    TIMEOUT = "timeout"
    ERROR = "error"


STOPS_RUN = frozenset({FailureKind.NOT_INSTALLED, FailureKind.NOT_LOGGED_IN, FailureKind.RATE_LIMITED})


class BackendError(StructuredCallError):
    """A classified failure; ``str(exc)`` is the reason recorded in ``job_runs.error``."""

    def __init__(
        self,
        kind: FailureKind,
        reason: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        super().__init__(f"{kind.value}: {reason}", prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        self.kind = kind

    @property
    def stops_run(self) -> bool:
        return self.kind in STOPS_RUN


@dataclass
class AgentRequest:
    """One consolidation run. ``tools`` serve the HTTP tool loop; CLI agents use their own sandboxed file tools."""

    root: Path
    prompt: str
    model: str | None
    max_turns: int
    timeout: float
    tools: object | None = None
    max_history_bytes: int | None = None  # the HTTP loop trims older tool results past this
    on_turn: Callable[[int, list[str]], None] | None = None
    should_stop: Callable[[], str | None] | None = None


@dataclass
class AgentOutcome:
    final_text: str = ""
    turns: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    extra: dict[str, object] = field(default_factory=dict)
    #: The label of the model the agent really used, from its own events or result (None: not known).
    model: str | None = None


def cli_model(cli: str, model: str | None) -> str:
    """How a run on an agent CLI names its model: ``codex:gpt-5.5``, or the CLI's default when it did not say."""
    return f"{cli}:{model}" if model else f"{cli} (its default model)"


class Backend(Protocol):
    name: str
    #: True when the backend's agent edits files with its own tools (memtui must check the tree afterwards).
    own_tools: bool

    def describe_model(self, model: str | None) -> str: ...

    async def structured(
        self, *, model: str | None, system: str, user: str, output_model: type[M], schema_name: str
    ) -> StructuredResult[M]: ...

    async def run_agent(self, request: AgentRequest) -> AgentOutcome: ...

    async def aclose(self) -> None: ...
