"""Which threads Phase 1 looks at (Codex's rules), and why each other thread is skipped.

One query classifies every thread (bounded by the reference's scan limit), newest first, so the run summary can
count skips by reason. The claim re-checks "up to date" inside its transaction; this is only the first pass.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memtui import clock
from memtui.settings import Settings
from memtui.state.jobs import STAGE1

THREAD_SCAN_LIMIT = 5_000
INTERACTIVE_CODEX_SOURCES = ("cli", "vscode")


@dataclass(frozen=True)
class Candidate:
    """A thread worth claiming: what the job needs to load and render its rollout."""

    thread_id: str
    source_kind: str
    path: str
    cwd: str | None
    updated_at: int


# Why a thread (alias t) can never be extracted, whatever the time: the user's opt-outs and the reference's
# source rules. NULL when none applies. The UI shows the same reasons.
NEVER_ELIGIBLE_SQL = """CASE
    WHEN EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = t.id) THEN 'forgotten'
    WHEN t.archived != 0 THEN 'archived'
    WHEN NOT ((t.source_kind = 'codex' AND t.session_source IN ({codex_sources}))
              OR (t.source_kind = 'claude' AND t.session_source = 'cli')) THEN 'not_interactive'
    WHEN t.memory_mode != 'enabled' OR t.history_mode != 'legacy' THEN 'memory_disabled'
    WHEN t.preview = '' THEN 'no_preview'
  END""".format(codex_sources=", ".join(f"'{s}'" for s in INTERACTIVE_CODEX_SOURCES))

_QUERY = (
    """
SELECT t.id, t.source_kind, t.path, t.cwd, t.updated_at,
  CASE
    WHEN ("""
    + NEVER_ELIGIBLE_SQL
    + """) IS NOT NULL THEN """
    + NEVER_ELIGIBLE_SQL
    + """
    WHEN :windows AND t.updated_at < :oldest THEN 'too_old'
    WHEN :windows AND t.updated_at > :newest THEN 'not_idle'
    WHEN :check_done AND (o.source_updated_at >= t.updated_at OR j.last_success_watermark >= t.updated_at)
      THEN 'up_to_date'
  END AS skip
FROM threads t
LEFT JOIN stage1_outputs o ON o.thread_id = t.id
LEFT JOIN jobs j ON j.kind = :kind AND j.job_key = t.id
{where}
ORDER BY t.updated_at DESC, t.id DESC
LIMIT :limit
"""
)


def select_candidates(
    conn: sqlite3.Connection,
    settings: Settings,
    *,
    thread_id: str | None = None,
    all_threads: bool = False,
    scan_limit: int = THREAD_SCAN_LIMIT,
) -> tuple[list[Candidate], dict[str, int]]:
    """Eligible threads (newest first) and the count of skipped threads by reason.

    ``all_threads`` ignores the age and idle windows; ``thread_id`` forces one thread: it also ignores them and the
    up-to-date check (a manual re-extraction), but never the user's opt-outs (archived, non-interactive, disabled).
    """
    now = clock.now_s()
    params = {
        "windows": int(not (all_threads or thread_id)),
        "oldest": now - settings.max_rollout_age_days * 86_400,
        "newest": now - settings.min_rollout_idle_hours * 3_600,
        "check_done": int(thread_id is None),
        "kind": STAGE1,
        "limit": scan_limit,
        "thread_id": thread_id,
    }
    sql = _QUERY.format(where="WHERE t.id = :thread_id" if thread_id else "")
    candidates: list[Candidate] = []
    skipped: dict[str, int] = {}
    for row in conn.execute(sql, params):
        if row["skip"]:
            skipped[row["skip"]] = skipped.get(row["skip"], 0) + 1
        else:
            candidates.append(Candidate(row["id"], row["source_kind"], row["path"], row["cwd"], row["updated_at"]))
    return candidates, skipped
