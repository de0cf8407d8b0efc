"""SQLite state: threads, ingest bookkeeping, stage-1 outputs, jobs and review runs."""
