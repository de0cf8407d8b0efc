"""A model's second look at the offline findings, when a model is configured (``memtui health --refine``).

Each finding not yet refined is sent once, as the memory line and the user's sentence (both already redacted, and
redacted again here), with a strict JSON schema; the verdict is stored beside the finding (``refined``,
``refined_by``). A verdict of ``none`` hides the finding, another relation replaces the rules' one; the report's
method then says which model refined it. Only the OpenAI-compatible provider is used: a refinement is many small
calls, not an agent run.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memtui.adapters.redact import redact_text
from memtui.core.settings import Settings
from memtui.services.health.blocks import parse_blocks
from memtui.services.health.signals import user_words_at
from memtui.state import health as store
from memtui.state.health import FindingRow

MAX_PER_RUN = 200


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    relation: Literal["restated", "contradicted", "corrected", "none"]
    reason: str


@dataclass
class RefineResult:
    refined: int = 0
    changed: int = 0
    failed: int = 0
    error: str | None = None
    model: str = ""


def _prompt() -> str:
    return resources.files("memtui.prompts").joinpath("health_refine.md").read_text(encoding="utf-8")


def refine_findings(conn: sqlite3.Connection, memory_text: str, settings: Settings) -> RefineResult:
    """Ask the configured model about every finding it has not seen yet (at most ``MAX_PER_RUN`` per call)."""
    from memtui.adapters.llm.chat_call import call_structured
    from memtui.adapters.llm.client import make_async_client
    from memtui.adapters.llm.structured import StructuredCallError

    model = settings.extract_model
    lines = {b.id: b.text for b in parse_blocks(memory_text)}
    todo = [f for f in store.unrefined(conn, MAX_PER_RUN) if f.block_id in lines]
    result = RefineResult(model=model)
    system = _prompt()

    async def run() -> list[tuple[FindingRow, str, str]]:
        client = make_async_client(settings)
        out: list[tuple[FindingRow, str, str]] = []
        try:
            for f in todo:
                words, _ = user_words_at(conn, f.thread_id, f.item)
                user = (
                    f"The rules said: {f.relation.value}\nMemory line: {redact_text(lines[f.block_id])}\n"
                    f"The user's later words: {redact_text(words)}"
                )
                try:
                    verdict = await call_structured(
                        client, model=model, system=system, user=user, output_model=Verdict,
                        schema_name="health_verdict",
                    )  # fmt: skip
                except StructuredCallError as exc:
                    result.failed += 1
                    result.error = str(exc)
                    break  # the server is down or refusing: the rest waits for the next refinement
                out.append((f, verdict.output.relation, model))
        finally:
            await client.close()
        return out

    verdicts = asyncio.run(run())
    store.set_refined(conn, verdicts)
    result.refined = len(verdicts)
    result.changed = sum(1 for f, v, _ in verdicts if v != f.relation.value)
    return result
