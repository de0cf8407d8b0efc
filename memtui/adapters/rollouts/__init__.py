"""Rollout readers (Codex, Claude Code), the normalized thread model and the memory filter."""
