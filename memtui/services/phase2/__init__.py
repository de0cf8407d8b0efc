"""Phase 2: locked consolidation under a git baseline, with human review."""
