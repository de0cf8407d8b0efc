"""Forward-only migrations. Each entry upgrades ``PRAGMA user_version`` by one.

Column semantics of ``stage1_outputs`` and ``jobs`` follow Codex's ``memories_1.sqlite``
(Codex's columns); times are unix seconds.
"""

MIGRATIONS: list[str] = [
    # 1: the foundation.
    """
    CREATE TABLE IF NOT EXISTS ingest_files (
        path TEXT PRIMARY KEY,
        source_kind TEXT NOT NULL,            -- codex | claude
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        thread_id TEXT,                       -- NULL when the file yielded no thread
        status TEXT NOT NULL,                 -- indexed | skipped
        reason TEXT,                          -- why it was skipped (or a warning)
        lines INTEGER NOT NULL DEFAULT 0,
        skipped_lines INTEGER NOT NULL DEFAULT 0,
        ingested_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS threads (
        id TEXT PRIMARY KEY,
        source_kind TEXT NOT NULL,            -- codex | claude
        path TEXT NOT NULL,
        cwd TEXT,
        originator TEXT,
        cli_version TEXT,
        session_source TEXT NOT NULL,         -- cli | vscode | exec | mcp | subagent | internal | custom | unknown
        source_detail TEXT,                   -- e.g. the custom source name
        parent_thread_id TEXT,
        memory_mode TEXT NOT NULL DEFAULT 'enabled',
        history_mode TEXT NOT NULL DEFAULT 'legacy',
        git_branch TEXT,
        git_commit TEXT,
        git_url TEXT,
        model TEXT,
        created_at INTEGER,
        updated_at INTEGER NOT NULL,          -- file mtime, seconds: the Phase 1 watermark unit
        preview TEXT NOT NULL DEFAULT '',     -- redacted first real user message
        title TEXT,
        items INTEGER NOT NULL DEFAULT 0,
        user_messages INTEGER NOT NULL DEFAULT 0,
        bytes INTEGER NOT NULL DEFAULT 0,
        archived INTEGER NOT NULL DEFAULT 0,
        skipped_lines INTEGER NOT NULL DEFAULT 0,
        ingest_status TEXT NOT NULL DEFAULT 'indexed',
        ingest_reason TEXT,
        ingested_at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS idx_threads_updated ON threads(updated_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS idx_threads_path ON threads(path);

    CREATE TABLE IF NOT EXISTS stage1_outputs (
        thread_id TEXT PRIMARY KEY,
        source_updated_at INTEGER NOT NULL,
        raw_memory TEXT NOT NULL,
        rollout_summary TEXT NOT NULL,
        rollout_slug TEXT,
        generated_at INTEGER NOT NULL,
        usage_count INTEGER,
        last_usage INTEGER,
        selected_for_phase2 INTEGER NOT NULL DEFAULT 0,
        selected_for_phase2_source_updated_at INTEGER,
        offline INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS idx_stage1_outputs_source_updated_at
        ON stage1_outputs(source_updated_at DESC, thread_id DESC);

    CREATE TABLE IF NOT EXISTS jobs (
        kind TEXT NOT NULL,
        job_key TEXT NOT NULL,
        status TEXT NOT NULL,                 -- pending | running | done | error
        worker_id TEXT,
        ownership_token TEXT,
        started_at INTEGER,
        finished_at INTEGER,
        lease_until INTEGER,
        retry_at INTEGER,
        retry_remaining INTEGER NOT NULL DEFAULT 3,
        last_error TEXT,
        input_watermark INTEGER,
        last_success_watermark INTEGER,
        PRIMARY KEY (kind, job_key)
    );
    CREATE INDEX IF NOT EXISTS idx_jobs_kind_status_retry_lease ON jobs(kind, status, retry_at, lease_until);

    -- One row per attempt: what a person needs to see why a rollout produced nothing.
    CREATE TABLE IF NOT EXISTS job_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        job_key TEXT NOT NULL,
        ownership_token TEXT,
        worker_id TEXT,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        outcome TEXT,                         -- succeeded | no_output | failed | lost_lease
        error TEXT,
        noop INTEGER NOT NULL DEFAULT 0,
        offline INTEGER NOT NULL DEFAULT 0,
        model TEXT,
        input_bytes INTEGER,
        sent_bytes INTEGER,
        truncated_tokens INTEGER,
        estimated_tokens INTEGER,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        latency_ms INTEGER,
        redactions TEXT                       -- JSON {kind: count}; never the secret itself
    );
    CREATE INDEX IF NOT EXISTS idx_job_runs_key ON job_runs(kind, job_key, id DESC);

    -- Phase 2 runs and their review decision.
    CREATE TABLE IF NOT EXISTS phase2_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        status TEXT NOT NULL,                 -- running | awaiting_review | approved | rejected | failed | no_changes
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        decided_at INTEGER,
        offline INTEGER NOT NULL DEFAULT 0,
        model TEXT,
        baseline_commit TEXT,
        new_commit TEXT,
        claimed_watermark INTEGER,
        new_watermark INTEGER,
        selected TEXT,                        -- JSON [[thread_id, source_updated_at], ...]
        input_diff TEXT,                      -- workspace diff the agent was given
        diff TEXT,                            -- whole workspace vs baseline after the agent
        stat TEXT,                            -- JSON [[status, path], ...]
        pre_snapshot TEXT,                    -- JSON {path: content|null} of files the agent may touch, for reject
        reason TEXT,
        turns INTEGER,
        prompt_tokens INTEGER,
        completion_tokens INTEGER
    );

    -- Citations seen in rollouts or recorded by hand; counted once each.
    CREATE TABLE IF NOT EXISTS citation_events (
        key TEXT PRIMARY KEY,                 -- stable fingerprint: origin + position + body hash
        origin TEXT NOT NULL,                 -- rollout | manual
        thread_id TEXT,                       -- the rollout the citation was found in, if any
        body TEXT NOT NULL,                   -- the citation block (entries + rollout ids), redacted
        rollout_ids TEXT NOT NULL,            -- JSON list of valid ids counted
        recorded_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS citation_entries (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        event_key TEXT NOT NULL REFERENCES citation_events(key) ON DELETE CASCADE,
        path TEXT NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        text_hash TEXT                        -- sha256 of the cited lines when recorded (stale check)
    );
    CREATE INDEX IF NOT EXISTS idx_citation_entries_path ON citation_entries(path, line_start);

    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
    """,
    # 2: counting user messages cost one more whole-file scan per rollout (0.2 s/GB of a cold ingest) for a
    # number nothing used; `items` and `skipped_lines` remain the per-thread counts.
    """
    ALTER TABLE threads DROP COLUMN user_messages;
    """,
    # Bulk extraction through the OpenAI Batch API, or a JSONL file for `vllm run-batch`. One submission
    # per input file (split at 50,000 requests / 200 MB); one request per claimed rollout, holding the job's token.
    """
    CREATE TABLE IF NOT EXISTS batch_submissions (
        id TEXT PRIMARY KEY,                  -- memtui's id; also the remote batch's metadata.memtui_submission
        kind TEXT NOT NULL,                   -- openai | file
        status TEXT NOT NULL,                 -- preparing | prepared | uploaded | submitted | exported | collected | cancelled | abandoned
        remote_status TEXT,                   -- the Batch API's status when last polled
        model TEXT NOT NULL,
        worker_id TEXT NOT NULL,              -- the jobs' worker_id: finds this submission's leases
        input_path TEXT,                      -- the JSONL memtui wrote
        input_file_id TEXT,
        batch_id TEXT,
        output_file_id TEXT,
        error_file_id TEXT,
        requests INTEGER NOT NULL DEFAULT 0,
        bytes INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        finished_at INTEGER,
        detail TEXT
    );
    CREATE TABLE IF NOT EXISTS batch_requests (
        submission_id TEXT NOT NULL REFERENCES batch_submissions(id),
        custom_id TEXT NOT NULL,              -- thread id + ':' + hash of the filtered input
        thread_id TEXT NOT NULL,
        input_hash TEXT NOT NULL,
        ownership_token TEXT NOT NULL,
        source_updated_at INTEGER NOT NULL,
        run_id INTEGER,                       -- the job_runs attempt row
        status TEXT NOT NULL,                 -- pending | succeeded | no_output | failed | stale | released | lost_lease
        error TEXT,
        measurements TEXT,                    -- JSON: bytes, estimated tokens, input-side redaction counts
        PRIMARY KEY (submission_id, custom_id)
    );
    CREATE INDEX IF NOT EXISTS idx_batch_requests_status ON batch_requests(submission_id, status);
    CREATE INDEX IF NOT EXISTS idx_batch_requests_custom ON batch_requests(custom_id);
    """,
    # The full-text search documents (memory.search builds the FTS5 index over them with sqlite-utils).
    # Stage-1 summaries and raw memories follow stage1_outputs through triggers; a deleted thread or output takes
    # its documents with it and asks the next refresh to purge the index (FTS5 keeps deleted terms until merged).
    """
    CREATE TABLE IF NOT EXISTS search_docs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,                   -- memory | summary | raw_memory | message
        source TEXT NOT NULL,                 -- memory: path in the memory root; else the thread id
        loc INTEGER NOT NULL DEFAULT 0,       -- memory: first line of the chunk; message: item N (1-based); else 0
        role TEXT,                            -- message: user | assistant
        project TEXT NOT NULL DEFAULT '',     -- the cwd the text belongs to ('' = not tied to one project)
        text TEXT NOT NULL,                   -- redacted before it is stored
        -- indexed beside the text so a project filter is an FTS phrase query, not a scan ('' = tied to no project)
        scope TEXT GENERATED ALWAYS AS (CASE WHEN project = '' THEN 'memtuiglobal' ELSE project END) VIRTUAL
    );
    CREATE INDEX IF NOT EXISTS idx_search_docs_source ON search_docs(source, kind);
    CREATE TABLE IF NOT EXISTS search_sources (
        key TEXT PRIMARY KEY,                 -- "file:<path in the memory root>" or "thread:<id>"
        stamp TEXT NOT NULL                   -- what was indexed: size/mtime of the file, bytes/updated_at of the thread
    );
    CREATE TRIGGER IF NOT EXISTS search_stage1_ai AFTER INSERT ON stage1_outputs BEGIN
        -- an INSERT OR REPLACE deletes the old row without firing the delete trigger: drop its documents here
        INSERT OR REPLACE INTO meta (key, value) SELECT 'search.purge', '1' WHERE EXISTS (
            SELECT 1 FROM search_docs WHERE source = new.thread_id AND kind IN ('summary', 'raw_memory'));
        DELETE FROM search_docs WHERE source = new.thread_id AND kind IN ('summary', 'raw_memory');
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'summary', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.rollout_summary
        WHERE TRIM(new.rollout_summary) != '';
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'raw_memory', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.raw_memory
        WHERE TRIM(new.raw_memory) != '';
    END;
    CREATE TRIGGER IF NOT EXISTS search_stage1_au AFTER UPDATE OF raw_memory, rollout_summary ON stage1_outputs
    WHEN old.raw_memory IS NOT new.raw_memory OR old.rollout_summary IS NOT new.rollout_summary BEGIN
        DELETE FROM search_docs WHERE source = old.thread_id AND kind IN ('summary', 'raw_memory');
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'summary', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.rollout_summary
        WHERE TRIM(new.rollout_summary) != '';
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'raw_memory', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.raw_memory
        WHERE TRIM(new.raw_memory) != '';
        INSERT OR REPLACE INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    CREATE TRIGGER IF NOT EXISTS search_stage1_ad AFTER DELETE ON stage1_outputs BEGIN
        DELETE FROM search_docs WHERE source = old.thread_id AND kind IN ('summary', 'raw_memory');
        INSERT OR REPLACE INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    CREATE TRIGGER IF NOT EXISTS search_threads_ad AFTER DELETE ON threads BEGIN
        DELETE FROM search_docs WHERE source = old.id AND kind = 'message';
        DELETE FROM search_sources WHERE key = 'thread:' || old.id;
        INSERT OR REPLACE INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    INSERT INTO search_docs (kind, source, project, text)
    SELECT 'summary', o.thread_id, COALESCE(t.cwd, ''), o.rollout_summary
    FROM stage1_outputs o LEFT JOIN threads t ON t.id = o.thread_id WHERE TRIM(o.rollout_summary) != '';
    INSERT INTO search_docs (kind, source, project, text)
    SELECT 'raw_memory', o.thread_id, COALESCE(t.cwd, ''), o.raw_memory
    FROM stage1_outputs o LEFT JOIN threads t ON t.id = o.thread_id WHERE TRIM(o.raw_memory) != '';
    """,
    # A run records the exact tree it produced (approve commits that tree and nothing else) with a blob
    # id per file, and keeps only counts once decided: stored diffs and pre-run snapshots of decided runs are dropped.
    """
    ALTER TABLE phase2_runs ADD COLUMN reviewed_tree TEXT;      -- git tree id of the workspace the review shows
    ALTER TABLE phase2_runs ADD COLUMN reviewed_files TEXT;     -- JSON {path: blob id} of that tree (until decided)
    ALTER TABLE phase2_runs ADD COLUMN lines_added INTEGER;
    ALTER TABLE phase2_runs ADD COLUMN lines_removed INTEGER;
    ALTER TABLE phase2_runs ADD COLUMN included_changes TEXT;   -- JSON [[status, path]] approved with the run
    ALTER TABLE phase2_runs ADD COLUMN written_files TEXT;      -- JSON [path] the run itself wrote (kept when decided)
    UPDATE phase2_runs SET written_files = (SELECT json_group_array(key) FROM json_each(pre_snapshot))
        WHERE pre_snapshot IS NOT NULL AND json_valid(pre_snapshot);
    UPDATE phase2_runs SET diff = NULL, input_diff = NULL, pre_snapshot = NULL
        WHERE status NOT IN ('running', 'awaiting_review');
    """,
    # The paper trail: decisions (audit records), snapshots of approved versions, rejected hunks that
    # teach the next run, forgotten rollouts; a run's kind tells a consolidation from a restore awaiting review.
    """
    CREATE TABLE IF NOT EXISTS decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL,                   -- approve | partial_approve | reject | manual_commit | restore | forget | unforget | lift
        run_id INTEGER,                       -- the Phase 2 run decided, if any
        thread_id TEXT,                       -- the rollout forgotten (forget / unforget)
        files_in TEXT NOT NULL DEFAULT '[]',  -- JSON [path]: changes that went into the baseline
        files_out TEXT NOT NULL DEFAULT '[]', -- JSON [path]: changes left out (rejected or undone)
        hunks_in TEXT NOT NULL DEFAULT '[]',  -- JSON [{id, file, hash, amended}]
        hunks_out TEXT NOT NULL DEFAULT '[]', -- JSON [{id, file, hash}]
        reason TEXT,
        tree TEXT,                            -- the baseline tree id after the decision
        commit_id TEXT
    );
    CREATE TABLE IF NOT EXISTS history_snapshots (
        decision_id INTEGER PRIMARY KEY REFERENCES decisions(id) ON DELETE CASCADE,
        tree TEXT,
        created_at INTEGER NOT NULL,
        files INTEGER NOT NULL,
        raw_bytes INTEGER NOT NULL,
        data BLOB NOT NULL                    -- zstd of JSON {path: text} of the consolidated memory files
    );
    CREATE TABLE IF NOT EXISTS rejected_hunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id INTEGER,
        hunk_id TEXT NOT NULL,
        file TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        text TEXT NOT NULL,                   -- the hunk as the reviewer saw it
        added TEXT NOT NULL DEFAULT '[]',     -- JSON [line]: the lines the run wanted to add
        reason TEXT,
        thread_ids TEXT NOT NULL DEFAULT '[]',-- JSON [thread_id]: the hunk's evidence (forget scrubs by it)
        decided_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS forgotten_threads (
        thread_id TEXT PRIMARY KEY,
        forgotten_at INTEGER NOT NULL,
        reason TEXT,
        contributed TEXT,                     -- JSON lineage, kept only until a Phase 2 run removing it is approved
        run_id INTEGER,                       -- the Phase 2 run that carries the removal (awaiting review)
        done_at INTEGER                       -- when that run was approved: nothing derived is left
    );
    ALTER TABLE phase2_runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'consolidation';  -- consolidation | restore
    ALTER TABLE phase2_runs ADD COLUMN restore_of INTEGER;                          -- the version a restore brings back
    """,
    # The search-purge flag set inside the stage-1 triggers: an UPSERT that takes its DO UPDATE path makes SQLite run
    # the trigger's "INSERT OR REPLACE" as a plain INSERT (the outer statement's conflict mode wins), which failed with
    # "UNIQUE constraint failed: meta.key" once the flag was set. Delete-then-insert never conflicts.
    """
    DROP TRIGGER IF EXISTS search_stage1_ai;
    DROP TRIGGER IF EXISTS search_stage1_au;
    DROP TRIGGER IF EXISTS search_stage1_ad;
    DROP TRIGGER IF EXISTS search_threads_ad;
    CREATE TRIGGER search_stage1_ai AFTER INSERT ON stage1_outputs BEGIN
        DELETE FROM meta WHERE key = 'search.purge' AND EXISTS (
            SELECT 1 FROM search_docs WHERE source = new.thread_id AND kind IN ('summary', 'raw_memory'));
        INSERT INTO meta (key, value) SELECT 'search.purge', '1' WHERE EXISTS (
            SELECT 1 FROM search_docs WHERE source = new.thread_id AND kind IN ('summary', 'raw_memory'));
        DELETE FROM search_docs WHERE source = new.thread_id AND kind IN ('summary', 'raw_memory');
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'summary', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.rollout_summary
        WHERE TRIM(new.rollout_summary) != '';
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'raw_memory', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.raw_memory
        WHERE TRIM(new.raw_memory) != '';
    END;
    CREATE TRIGGER search_stage1_au AFTER UPDATE OF raw_memory, rollout_summary ON stage1_outputs
    WHEN old.raw_memory IS NOT new.raw_memory OR old.rollout_summary IS NOT new.rollout_summary BEGIN
        DELETE FROM search_docs WHERE source = old.thread_id AND kind IN ('summary', 'raw_memory');
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'summary', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.rollout_summary
        WHERE TRIM(new.rollout_summary) != '';
        INSERT INTO search_docs (kind, source, project, text)
        SELECT 'raw_memory', new.thread_id, COALESCE((SELECT cwd FROM threads WHERE id = new.thread_id), ''),
               new.raw_memory
        WHERE TRIM(new.raw_memory) != '';
        DELETE FROM meta WHERE key = 'search.purge';
        INSERT INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    CREATE TRIGGER search_stage1_ad AFTER DELETE ON stage1_outputs BEGIN
        DELETE FROM search_docs WHERE source = old.thread_id AND kind IN ('summary', 'raw_memory');
        DELETE FROM meta WHERE key = 'search.purge';
        INSERT INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    CREATE TRIGGER search_threads_ad AFTER DELETE ON threads BEGIN
        DELETE FROM search_docs WHERE source = old.id AND kind = 'message';
        DELETE FROM search_sources WHERE key = 'thread:' || old.id;
        DELETE FROM meta WHERE key = 'search.purge';
        INSERT INTO meta (key, value) VALUES ('search.purge', '1');
    END;
    """,
    # A person's deletions block re-learning by hash, never by the deleted words (tombstones.md held them, in git
    # too); the lines a person wrote are known by hash so forget never removes them. The rows of tombstones.md move
    # here at the next Phase 2 run (memtui/state/tombstones.py).
    """
    CREATE TABLE IF NOT EXISTS tombstones (
        hash TEXT PRIMARY KEY,                -- sha256 of the normalised line; never the words
        file TEXT NOT NULL,                   -- MEMORY.md | memory_summary.md | skills/...
        thread_ids TEXT NOT NULL DEFAULT '[]',-- JSON [thread_id]: rollouts whose output held the line
        created_at INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS person_lines (
        hash TEXT PRIMARY KEY,                -- sha256 of a normalised line a person wrote or amended
        file TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    """,
    # memory health (memtui/state/health.py owns these): per approved memory block, when it entered the memory,
    # a person's confirmation and proposal; per block and later session, what the user's words did to it. Only ids
    # and item numbers: the words themselves are read from the search index when shown.
    """
    CREATE TABLE IF NOT EXISTS health_blocks (
        block_id TEXT PRIMARY KEY,            -- sha256 prefix of the normalised memory line
        since INTEGER NOT NULL,               -- when it entered the approved memory
        verified_at INTEGER,                  -- a person's explicit confirmation (never a read or a citation)
        proposal TEXT,                        -- update | remove: a person's request to the next Phase 2 run
        proposed_at INTEGER,
        scanned INTEGER NOT NULL DEFAULT 0    -- 1 once every earlier session was checked against it
    );
    CREATE TABLE IF NOT EXISTS health_findings (
        block_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        item INTEGER NOT NULL,                -- item N of memory_items (1-based)
        relation TEXT NOT NULL,               -- restated | contradicted | corrected
        at INTEGER NOT NULL,                  -- when the session started
        refined TEXT,                         -- a model's verdict when one refined it: the relation, or 'none'
        refined_by TEXT,                      -- that model
        PRIMARY KEY (block_id, thread_id, item, relation)
    );
    CREATE INDEX IF NOT EXISTS idx_health_findings_thread ON health_findings(thread_id);
    """,
    # The lines a run removed because memory health asked (a contradiction, a person's proposed removal), as hashes
    # of the normalised lines: approving that removal bans them like a person's deletion; rejecting it bans nothing.
    """
    ALTER TABLE phase2_runs ADD COLUMN health_drops TEXT;  -- JSON [sha256 of a normalised line]
    """,
    # Trust: what enforcing trust classes did to a run (hidden characters removed per file and line, classes and
    # flags counted), for its summary and its review. Counts and line numbers only: no rollout text.
    """
    ALTER TABLE phase2_runs ADD COLUMN trust_report TEXT;
    """,
    # One counter that moves on every write to a table a Phase 2 run's selection or health reads (stage-1 outputs,
    # threads, forgotten rollouts): a no-change run that finds it where the last full run left it can skip the
    # selection's text fetch (memtui/services/phase2/unchanged.py). The selection flags are left out: only a run's own
    # success record sets them, to the selection it read.
    """
    CREATE TABLE IF NOT EXISTS data_versions (
        name TEXT PRIMARY KEY,
        version INTEGER NOT NULL DEFAULT 0
    );
    INSERT OR IGNORE INTO data_versions (name, version) VALUES ('phase2_inputs', 0);
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_stage1_ai AFTER INSERT ON stage1_outputs BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_stage1_au AFTER UPDATE OF
        thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug, generated_at, usage_count, last_usage
        ON stage1_outputs BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_stage1_ad AFTER DELETE ON stage1_outputs BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_threads_ai AFTER INSERT ON threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_threads_au AFTER UPDATE ON threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_threads_ad AFTER DELETE ON threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_forgotten_ai AFTER INSERT ON forgotten_threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_forgotten_au AFTER UPDATE ON forgotten_threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    CREATE TRIGGER IF NOT EXISTS phase2_inputs_forgotten_ad AFTER DELETE ON forgotten_threads BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'phase2_inputs';
    END;
    """,
    # The Rollouts filter's substring index (memtui/state/thread_filter.py): an FTS5 trigram table over the columns
    # a filter term matches, each lowered by SQLite's ASCII-only lower() and matched case-sensitively, so a phrase
    # query finds exactly the rows LIKE '%term%' finds. Each value ends in a space (whitespace ends a term, so no
    # term holds one): every two-character substring then starts a trigram. Contentless: the words stay in
    # threads, the index holds trigrams; a delete names the old values, so the triggers repeat the insert's values.
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS threads_filter USING fts5(
        preview, cwd, id, source_kind, session_source, title,
        content='', columnsize=0, tokenize='trigram case_sensitive 1'
    );
    CREATE TRIGGER IF NOT EXISTS threads_filter_ai AFTER INSERT ON threads BEGIN
        INSERT INTO threads_filter (rowid, preview, cwd, id, source_kind, session_source, title)
        VALUES (new.rowid, lower(new.preview) || ' ', lower(COALESCE(new.cwd, '')) || ' ', lower(new.id) || ' ',
                lower(new.source_kind) || ' ', lower(new.session_source) || ' ',
                lower(COALESCE(new.title, '')) || ' ');
    END;
    CREATE TRIGGER IF NOT EXISTS threads_filter_ad AFTER DELETE ON threads BEGIN
        INSERT INTO threads_filter (threads_filter, rowid, preview, cwd, id, source_kind, session_source, title)
        VALUES ('delete', old.rowid, lower(old.preview) || ' ', lower(COALESCE(old.cwd, '')) || ' ',
                lower(old.id) || ' ', lower(old.source_kind) || ' ', lower(old.session_source) || ' ',
                lower(COALESCE(old.title, '')) || ' ');
    END;
    CREATE TRIGGER IF NOT EXISTS threads_filter_au AFTER UPDATE OF preview, cwd, id, source_kind, session_source, title
    ON threads WHEN old.preview IS NOT new.preview OR old.cwd IS NOT new.cwd OR old.id IS NOT new.id
        OR old.source_kind IS NOT new.source_kind OR old.session_source IS NOT new.session_source
        OR old.title IS NOT new.title BEGIN
        INSERT INTO threads_filter (threads_filter, rowid, preview, cwd, id, source_kind, session_source, title)
        VALUES ('delete', old.rowid, lower(old.preview) || ' ', lower(COALESCE(old.cwd, '')) || ' ',
                lower(old.id) || ' ', lower(old.source_kind) || ' ', lower(old.session_source) || ' ',
                lower(COALESCE(old.title, '')) || ' ');
        INSERT INTO threads_filter (rowid, preview, cwd, id, source_kind, session_source, title)
        VALUES (new.rowid, lower(new.preview) || ' ', lower(COALESCE(new.cwd, '')) || ' ', lower(new.id) || ' ',
                lower(new.source_kind) || ' ', lower(new.session_source) || ' ',
                lower(COALESCE(new.title, '')) || ' ');
    END;
    INSERT INTO threads_filter (rowid, preview, cwd, id, source_kind, session_source, title)
    SELECT rowid, lower(preview) || ' ', lower(COALESCE(cwd, '')) || ' ', lower(id) || ' ', lower(source_kind) || ' ',
           lower(session_source) || ' ', lower(COALESCE(title, '')) || ' '
    FROM threads;
    INSERT INTO threads_filter (threads_filter) VALUES ('optimize');
    """,
    # What the TUI header counts at every launch and refresh (threads by source, archived ones) from an index the
    # counts cover, not a walk of every thread row: 80 ms at 100k threads became 12.
    """
    CREATE INDEX IF NOT EXISTS idx_threads_source ON threads(source_kind, session_source, archived);
    """,
    # Costs that follow the work, not the home (issue 35.5). What a no-change Phase 2 run asks before its shortcut
    # answers comes from indexes and counters, not a walk of every row: the retention candidates from a partial index
    # in their own order, the opted-out threads from one over the few whose memory is off, and "did a message get
    # indexed or dropped" from a counter the triggers move. Memory health's candidate query reads an FTS5 index of the
    # user messages alone (contentless: the words stay in search_docs), so a word the summaries hold costs nothing.
    """
    CREATE INDEX IF NOT EXISTS idx_stage1_outputs_expiry
        ON stage1_outputs(COALESCE(last_usage, source_updated_at), source_updated_at, thread_id)
        WHERE selected_for_phase2 = 0;
    CREATE INDEX IF NOT EXISTS idx_threads_memory_off ON threads(id) WHERE memory_mode != 'enabled';
    INSERT OR IGNORE INTO data_versions (name, version) VALUES ('messages', 0);
    CREATE TRIGGER IF NOT EXISTS messages_version_ai AFTER INSERT ON search_docs WHEN new.kind = 'message' BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'messages';
    END;
    CREATE TRIGGER IF NOT EXISTS messages_version_ad AFTER DELETE ON search_docs WHEN old.kind = 'message' BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'messages';
    END;
    CREATE TRIGGER IF NOT EXISTS messages_version_au AFTER UPDATE ON search_docs
    WHEN old.kind = 'message' OR new.kind = 'message' BEGIN
        UPDATE data_versions SET version = version + 1 WHERE name = 'messages';
    END;
    CREATE VIRTUAL TABLE IF NOT EXISTS search_user_fts USING fts5(
        text, content='', columnsize=0, tokenize='porter'
    );
    CREATE TRIGGER IF NOT EXISTS search_user_fts_ai AFTER INSERT ON search_docs
    WHEN new.kind = 'message' AND new.role = 'user' BEGIN
        INSERT INTO search_user_fts (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER IF NOT EXISTS search_user_fts_ad AFTER DELETE ON search_docs
    WHEN old.kind = 'message' AND old.role = 'user' BEGIN
        INSERT INTO search_user_fts (search_user_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    CREATE TRIGGER IF NOT EXISTS search_user_fts_au AFTER UPDATE ON search_docs
    WHEN (old.kind = 'message' AND old.role = 'user') OR (new.kind = 'message' AND new.role = 'user') BEGIN
        INSERT INTO search_user_fts (search_user_fts, rowid, text)
        SELECT 'delete', old.id, old.text WHERE old.kind = 'message' AND old.role = 'user';
        INSERT INTO search_user_fts (rowid, text)
        SELECT new.id, new.text WHERE new.kind = 'message' AND new.role = 'user';
    END;
    INSERT INTO search_user_fts (rowid, text) SELECT id, text FROM search_docs WHERE kind = 'message' AND role = 'user';
    INSERT INTO search_user_fts (search_user_fts) VALUES ('optimize');
    """,
    # Retention and Phase 2's selection window count from when a memory was made or last used
    # (``outputs.FRESHNESS_SQL``), not from its session's date (issue 33.1): the retention candidates' index follows,
    # spelled exactly as that expression so the prune still reads only the rows it removes.
    """
    DROP INDEX IF EXISTS idx_stage1_outputs_expiry;
    CREATE INDEX IF NOT EXISTS idx_stage1_outputs_freshness
        ON stage1_outputs(MAX(generated_at, COALESCE(last_usage, 0)), source_updated_at, thread_id)
        WHERE selected_for_phase2 = 0;
    """,
    # Partial approval that cannot backfire (issue 33.2). A run keeps what remembered rejections did to it (rejection
    # ids, files, hashes: no text) so its review can say which change a rejection caused. A left-out hunk of a
    # generated input (raw_memories.md, a rollout summary) is no longer remembered: the rows an older memtui kept
    # for them kept their lines out of MEMORY.md and memory_summary.md, which is what made a run delete them.
    """
    ALTER TABLE phase2_runs ADD COLUMN rejections_acted TEXT;  -- JSON [{id, file, left_out: [hash], kept, told}]
    DELETE FROM rejected_hunks WHERE file = 'raw_memories.md' OR file LIKE 'rollout\\_summaries/%' ESCAPE '\\';
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
