"""One object that the CLI and the TUI both build: settings, paths and a state connection.

The one rule for a home that does not exist lives here, in ``Context.conn``: it is created only by a context that
``creates_home`` (a first step: ``memtui ingest``, the terminal UI, the agents' hook worker), and then ``announce``
is told; any other context refuses with ``NoHome``, so a command that only reads never leaves an empty home behind.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtui.core.paths import Paths, resolve_paths
from memtui.core.settings import LoadedSettings, Settings, load_settings
from memtui.state.db import ReadOnlyHome, StateError, connect, denied, unwritable


class NoHome(StateError):
    """The context may not create a home and there is none: nothing to read, nothing created."""

    def __init__(self, home: Path) -> None:
        self.home = home
        super().__init__(
            f"no memtui home at {home}, and this command does not create one: `memtui ingest` creates it (and "
            "indexes your rollouts), or try `memtui demo`; --home PATH or MEMTUI_HOME choose another home."
        )


@dataclass
class Context:
    loaded: LoadedSettings
    paths: Paths
    creates_home: bool = True  # False: a missing home is NoHome, never created (see the module docstring)
    announce: Callable[[str], None] | None = None  # told, in a sentence, when this context creates the home
    _conn: sqlite3.Connection | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def conn(self) -> sqlite3.Connection:
        """The process's state connection, opened (and migrated) on first use."""
        if self._conn is None:
            self._conn = self.new_conn()
        return self._conn

    def new_conn(self) -> sqlite3.Connection:
        """A separate connection, for another thread (sqlite objects are thread-bound)."""
        self.open_home()
        return connect(self.paths.state_db)

    def open_home(self) -> None:
        """Make sure the home can be used: there (or created, and said, when this context may create it) and
        writable. NoHome or ReadOnlyHome (both StateError) say why not; nothing is created then."""
        home = self.paths.home
        if not home.is_dir():
            self.require_home()
            if self.announce is not None:
                self.announce(f"no memtui home at {home} yet: creating it (--home PATH or MEMTUI_HOME choose another)")
        blocked = unwritable(self.paths.state_db)
        if blocked is not None:
            raise ReadOnlyHome(self.paths.state_db, blocked)
        try:
            self.paths.ensure()
        except OSError as exc:  # the memory root cannot be created in a home that cannot be written
            if not denied(exc):
                raise
            raise ReadOnlyHome(self.paths.state_db, Path(exc.filename or home)) from exc

    def require_home(self) -> None:
        """NoHome when the home is missing and this context may not create it: for a command that reads the home's
        files but not its state database (export), so it refuses as every other command does."""
        if not self.creates_home and not self.paths.home.is_dir():
            raise NoHome(self.paths.home)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def open_context(
    overrides: dict[str, Any] | None = None,
    home: Path | None = None,
    *,
    creates_home: bool = True,
    announce: Callable[[str], None] | None = None,
) -> Context:
    loaded = load_settings(overrides, home=home)
    return Context(
        loaded=loaded,
        paths=resolve_paths(loaded.settings, home=home),
        creates_home=creates_home,
        announce=announce,
    )
