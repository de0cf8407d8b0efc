"""Phase 2: locked consolidation under a git baseline, with human review."""

# Every move of the baseline (approve, commit, restore, forget's run) goes through this package: the published folder
# agents ``rg`` follows it at once, as the agent-facing view renders it.
from memtui.services import agent_view as _agent_view  # noqa: F401
