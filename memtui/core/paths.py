"""Where things live: the MEMTUI_HOME layout and the agents' rollout folders."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memtui.core.private import make_private_dir
from memtui.core.settings import Settings, absolute, memtui_home


@dataclass(frozen=True)
class Paths:
    home: Path
    codex_home: Path
    claude_dir: Path

    @property
    def memory_root(self) -> Path:
        return self.home / "memories"

    @property
    def state_db(self) -> Path:
        return self.home / "state.sqlite"

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def codex_sessions(self) -> Path:
        return self.codex_home / "sessions"

    @property
    def codex_archived(self) -> Path:
        return self.codex_home / "archived_sessions"

    @property
    def claude_projects(self) -> Path:
        return self.claude_dir / "projects"

    def ensure(self) -> Paths:
        """Create the home and the memory root, private (0700) when memtui creates them."""
        make_private_dir(self.home)
        make_private_dir(self.memory_root)
        return self


def resolve_paths(settings: Settings | None = None, home: Path | None = None) -> Paths:
    """MEMTUI_HOME, CODEX_HOME and CLAUDE_CONFIG_DIR, each with its conventional default, each absolute."""
    codex = (settings.codex_home if settings else None) or os.environ.get("CODEX_HOME") or Path.home() / ".codex"
    claude = (
        (settings.claude_dir if settings else None) or os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude"
    )
    return Paths(
        home=absolute(home) if home else memtui_home(),
        codex_home=absolute(codex),
        claude_dir=absolute(claude),
    )
