"""SQLite state: one module per table, the only place with SQL against it (``owners.OWNERS`` maps them)."""
