"""Stand-ins the tests and benchmarks share: a loopback Chat Completions and Batch server, and fake agent CLIs
(no pipeline code depends on them, so the wheel does not ship them)."""
