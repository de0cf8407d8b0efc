"""Record an agent's citation as memory usage and say what was counted: what ``memtui cite record`` and the MCP
server's ``memory_cite`` tool both do."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from pydantic import BaseModel

from memtui.domain.citation import MemoryCitation
from memtui.services.citations.check import CheckReport, check_citation
from memtui.services.citations.usage import record_citation
from memtui.state import outputs


class CountedUsage(BaseModel):
    thread_id: str
    usage_count: int
    last_usage: int | None = None


class RecordOutcome(BaseModel):
    key: str
    counted: list[CountedUsage]
    not_counted: list[dict[str, object]]
    check: dict[str, object]


def record_answer_citation(
    conn: sqlite3.Connection, memory_root: Path, citation: MemoryCitation, key_prefix: str = "manual"
) -> tuple[RecordOutcome, CheckReport]:
    """Check the citation (before recording, so stale ranges are compared with earlier hashes), record it under a new
    key and return the usage counts of the cited threads that have a stage-1 memory."""
    report = check_citation(memory_root, citation, conn)
    key = f"{key_prefix}:{uuid.uuid4()}"
    record_citation(conn, citation, "manual", key, memory_root=memory_root)
    counted = []
    for i in report.ids:
        if i.has_memory:
            used = outputs.usage(conn, str(i.thread_id))
            if used is not None:
                counted.append(
                    CountedUsage(thread_id=str(i.thread_id), usage_count=used.usage_count, last_usage=used.last_usage)
                )
    not_counted = [i.to_json() for i in report.ids if not i.has_memory]
    return RecordOutcome(key=key, counted=counted, not_counted=not_counted, check=report.to_json()), report
