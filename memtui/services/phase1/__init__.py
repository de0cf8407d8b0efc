"""Phase 1: per-rollout extraction with leased jobs."""
