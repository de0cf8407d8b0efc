"""Which module of ``memtui/state`` owns each table: the only module that writes SQL against it.

Everything else calls the owner's functions, so a table's invariants (what forgetting removes, which rows a lease
guards, which triggers keep the search index in step) are kept in one file. ``tests/test_table_owners.py`` scans
``memtui/`` for SQL and fails on a statement outside its table's owner, and on a table here or in the live schema
that has no owner. A statement may read other tables in joins and subqueries only inside ``memtui/state``.
"""

from __future__ import annotations

OWNERS: dict[str, str] = {
    "threads": "memtui.state.threads",
    "ingest_files": "memtui.state.threads",
    "stage1_outputs": "memtui.state.outputs",
    "jobs": "memtui.state.jobs",
    "job_runs": "memtui.state.jobs",
    "phase2_runs": "memtui.state.runs",
    "citation_events": "memtui.state.citations",
    "citation_entries": "memtui.state.citations",
    "meta": "memtui.state.meta",
    "batch_submissions": "memtui.state.batches",
    "batch_requests": "memtui.state.batches",
    "search_docs": "memtui.state.search_index",
    "search_sources": "memtui.state.search_index",
    "search_docs_fts": "memtui.state.search_index",
    "search_docs_fts_data": "memtui.state.search_index",
    "search_docs_fts_idx": "memtui.state.search_index",
    "search_docs_fts_docsize": "memtui.state.search_index",
    "search_docs_fts_config": "memtui.state.search_index",
    "search_user_fts": "memtui.state.search_index",
    "search_user_fts_data": "memtui.state.search_index",
    "search_user_fts_idx": "memtui.state.search_index",
    "search_user_fts_config": "memtui.state.search_index",
    "decisions": "memtui.state.decisions",
    "history_snapshots": "memtui.state.decisions",
    "rejected_hunks": "memtui.state.rejected_hunks",
    "forgotten_threads": "memtui.state.forgotten",
    "tombstones": "memtui.state.tombstones",
    "person_lines": "memtui.state.person_lines",
    "health_blocks": "memtui.state.health",
    "health_findings": "memtui.state.health",
    "data_versions": "memtui.state.meta",
    "threads_filter": "memtui.state.thread_filter",
    "threads_filter_data": "memtui.state.thread_filter",
    "threads_filter_idx": "memtui.state.thread_filter",
    "threads_filter_config": "memtui.state.thread_filter",
}

# ``meta`` keys and the module that names (and so owns) each; a run's keys carry its id in place of ``{}``.
META_KEYS: dict[str, str] = {
    "phase2.post.{}": "memtui.services.phase2.tools",  # the post-write hashes of a run's journal
    "phase2.approving.{}": "memtui.services.review.marks",  # an approve's decisions, kept until its commit is recorded
    "search.purge": "memtui.state.search_index",  # deleted text waits to leave the FTS segments
    "health.scanned_doc": "memtui.state.health",  # the last message checked against every block
    "health.clean_inputs": "memtui.services.health.watermark",
    "phase2.refused_upgrades": "memtui.services.phase2.consolidate",  # hashes of lines a run was refused for
    "phase2.unchanged": "memtui.services.phase2.unchanged",  # the record of the last full no-change run  # inputs memory health found nothing to bind in
}
