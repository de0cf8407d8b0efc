"""One object that the CLI and the TUI both build: settings, paths and a state connection."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtui.core.paths import Paths, resolve_paths
from memtui.core.settings import LoadedSettings, Settings, load_settings
from memtui.state.db import connect


@dataclass
class Context:
    loaded: LoadedSettings
    paths: Paths
    _conn: sqlite3.Connection | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def conn(self) -> sqlite3.Connection:
        """The process's state connection, opened (and migrated) on first use."""
        if self._conn is None:
            self.paths.ensure()
            self._conn = connect(self.paths.state_db)
        return self._conn

    def new_conn(self) -> sqlite3.Connection:
        """A separate connection, for another thread (sqlite objects are thread-bound)."""
        self.paths.ensure()
        return connect(self.paths.state_db)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def open_context(overrides: dict[str, Any] | None = None, home: Path | None = None) -> Context:
    loaded = load_settings(overrides, home=home)
    return Context(loaded=loaded, paths=resolve_paths(loaded.settings, home=home))
