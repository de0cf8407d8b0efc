"""The domain: typed shapes and pure functions over them (no I/O, no SQL, no git, no textual)."""
