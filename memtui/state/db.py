"""Connection handling: WAL, busy timeout, migrations, explicit write transactions.

Writers that need the reference's exact semantics use ``immediate(conn)``: a ``BEGIN IMMEDIATE``
transaction, so a claim or finalize is serialised across processes. The connection runs in
autocommit mode so sqlite-utils' own ``with conn:`` blocks never commit somebody else's transaction.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memtui.core.private import create_private_file, make_private_dir
from memtui.state.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 30_000


class StateError(RuntimeError):
    """The state database cannot be used; the message says why and what to do."""


class ReadOnlyHome(StateError):
    """The home or its state database cannot be written (permissions, a read-only mount): not a damaged database,
    and nothing a reset would mend."""

    def __init__(self, db: Path, blocked: Path) -> None:
        self.blocked = blocked
        home = db.parent
        if _on_read_only_mount(blocked):
            why, fix = "is on a read-only file system", "remount it read-write"
        else:
            why, fix = "is not writable by you", f"`chmod -R u+w {home}` (as its owner)"
        where = f"{home} {why}" if blocked == home else f"{home} is read-only: {blocked} {why}"
        super().__init__(
            f"the memtui home {where}. memtui writes its state database "
            f"({db.name}) on every command, so it cannot work in this home. Nothing was changed and the database "
            f"is not damaged. Make the home writable again ({fix}), or point --home / MEMTUI_HOME at a home you "
            "can write."
        )


def _on_read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def unwritable(db: Path) -> Path | None:
    """The first of the database's folder, file, -wal and -shm that exists and this process cannot write, if any.

    ``os.access`` asks the kernel with the real ids: mode bits, ACLs and read-only mounts all count (root passes
    mode bits but not a read-only mount)."""
    folder = db.parent
    if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return folder
    for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if _refused(p):
            return p
    return None


def _refused(p: Path) -> bool:
    """Whether an existing ``p`` cannot be written. ``access`` says no for a file that is not there, and SQLite
    creates and removes -wal and -shm as connections open and close (other threads', at the same moment): only an
    answer given while the file exists counts. Never a test open: closing any descriptor of the database would
    release this process's SQLite locks on it."""
    if os.access(p, os.W_OK):
        return False
    return p.exists() and not os.access(p, os.W_OK) and p.exists()


def denied(exc: OSError) -> bool:
    """A write refused by permissions or a read-only mount (not a full disk, not a missing file)."""
    return exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)


def connect(path: Path) -> sqlite3.Connection:
    blocked = unwritable(path)
    if blocked is not None:
        raise ReadOnlyHome(path, blocked)
    try:
        make_private_dir(path.parent)
        create_private_file(path)  # SQLite gives the -wal and -shm files the database file's mode
    except OSError as exc:
        if not denied(exc):
            raise
        raise ReadOnlyHome(path, Path(exc.filename or path.parent)) from exc
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    try:  # the connect timeout is SQLite's busy timeout
        _use_wal(conn)
        conn.execute("PRAGMA secure_delete = ON")  # deleted memory content is zeroed, not left in free pages
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # deleted rows (forgotten text, FTS index pages) are zeroed
        migrate(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        blocked = unwritable(path)  # made read-only between the check and the open
        if blocked is not None:
            raise ReadOnlyHome(path, blocked) from exc
        if _is_busy(exc):
            raise StateError(
                f"{path} stayed locked by another process for {BUSY_TIMEOUT_MS // 1000} s ({exc}). "
                "Nothing was changed; try again when the other memtui command has finished."
            ) from exc
        raise StateError(
            f"{path} is not a usable memtui database ({exc}). Nothing was changed. "
            f"Run `memtui doctor --reset-state` to move it aside and rebuild the index from the rollouts, "
            f"or restore it from a backup."
        ) from exc
    return conn


def _is_busy(exc: sqlite3.DatabaseError) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch a new database to WAL (the mode persists in the file, so later opens only read it).

    Two processes creating the database at once can both try the switch; SQLite may then answer "database is
    locked" at once instead of waiting for the busy timeout, so retry for up to that timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def checkpoint_wal(conn: sqlite3.Connection, attempts: int = 20) -> bool:
    """Copy the WAL into the database and truncate it, so deleted content leaves no copy in ``-wal``.

    A reader in the middle of a transaction can hold old frames; retry briefly. True when the WAL is empty.
    """
    for _ in range(attempts):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return True
        time.sleep(0.05)
    return False


def migrate(conn: sqlite3.Connection) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StateError(f"state database schema v{version} is newer than this memtui (v{SCHEMA_VERSION})")
    while version < SCHEMA_VERSION:
        with immediate(conn):
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if current != version:  # another process migrated meanwhile
                version = current
                continue
            for statement in _split(MIGRATIONS[version]):
                conn.execute(statement)
            version += 1
            conn.execute(f"PRAGMA user_version = {version}")
    return version


def _split(script: str) -> list[str]:
    """Split a migration into statements (executescript would COMMIT our transaction)."""
    out, buf = [], []
    for line in script.splitlines():
        code = line.split("--", 1)[0]
        buf.append(code)
        if code.rstrip().endswith(";") and sqlite3.complete_statement(
            "\n".join(buf)
        ):  # a trigger's inner ";" is not the end
            stmt = "\n".join(buf).strip()
            if stmt.strip(";").strip():
                out.append(stmt)
            buf = []
    rest = "\n".join(buf).strip()
    if rest:
        out.append(rest)
    return out


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on error). Not re-entrant."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def like_pattern(term: str) -> str:
    """A LIKE pattern matching ``term`` literally anywhere (``%`` and ``_`` escaped; use with ESCAPE '\\')."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
