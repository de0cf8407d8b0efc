"""The Phase 1 batch tables: ``batch_submissions`` (one per input file memtui wrote) and ``batch_requests`` (one
per claimed rollout in it, holding the job's token). Every step is recorded before the next starts, so a killed
run is resumed from these rows. The only module with SQL against them."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from typing import Any

FINISHED = ("collected", "cancelled", "abandoned")


@dataclass(frozen=True, slots=True)
class Submission:
    id: str
    kind: str  # openai | file
    status: str
    remote_status: str | None
    model: str
    worker_id: str
    input_path: str | None
    input_file_id: str | None
    batch_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    requests: int
    bytes: int
    created_at: int
    updated_at: int
    finished_at: int | None
    detail: str | None


@dataclass(frozen=True, slots=True)
class Request:
    submission_id: str
    custom_id: str
    thread_id: str
    input_hash: str
    ownership_token: str
    source_updated_at: int
    run_id: int | None
    status: str
    error: str | None
    measurements: str | None  # JSON


_SUB = ", ".join(f.name for f in fields(Submission))
_REQ = ", ".join(f.name for f in fields(Request))


def _subs(conn: sqlite3.Connection, where: str, args: tuple[Any, ...] = ()) -> list[Submission]:
    return [Submission(*r) for r in conn.execute(f"SELECT {_SUB} FROM batch_submissions {where}", args).fetchall()]


def submission(conn: sqlite3.Connection, sub_id: str) -> Submission | None:
    found = _subs(conn, "WHERE id = ?", (sub_id,))
    return found[0] if found else None


def open_openai(conn: sqlite3.Connection) -> list[Submission]:
    """Remote submissions not yet collected, oldest first."""
    return _subs(
        conn, "WHERE kind = 'openai' AND status IN ('prepared', 'uploaded', 'submitted') ORDER BY created_at, id"
    )


def cancellable(conn: sqlite3.Connection) -> list[Submission]:
    return _subs(conn, "WHERE status IN ('prepared', 'uploaded', 'submitted', 'exported')")


def preparing(conn: sqlite3.Connection) -> list[Submission]:
    return _subs(conn, "WHERE status = 'preparing'")


def exported_file_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT id FROM batch_submissions WHERE kind = 'file' AND status = 'exported'")]


def unfinished_and_recent(conn: sqlite3.Connection, recent: int = 20) -> list[Submission]:
    """Every submission not finished, and the ``recent`` last finished, oldest first."""
    rows = conn.execute(
        f"SELECT {_SUB} FROM batch_submissions WHERE status NOT IN ('collected', 'cancelled', 'abandoned')"
        f" UNION ALL SELECT {_SUB} FROM (SELECT * FROM batch_submissions WHERE status IN ('collected', 'cancelled',"
        " 'abandoned') ORDER BY updated_at DESC LIMIT ?) ORDER BY created_at, id",
        (recent,),
    ).fetchall()
    return [Submission(*r) for r in rows]


def pending_count(conn: sqlite3.Connection, sub_id: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM batch_requests WHERE submission_id = ? AND status = 'pending'", (sub_id,)
        ).fetchone()[0]
    )


def start(conn: sqlite3.Connection, sub_id: str, kind: str, model: str, worker: str, path: str, now: int) -> None:
    conn.execute(
        "INSERT INTO batch_submissions (id, kind, status, model, worker_id, input_path, created_at, updated_at)"
        " VALUES (?, ?, 'preparing', ?, ?, ?, ?, ?)",
        (sub_id, kind, model, worker, path, now, now),
    )


def add_request(
    conn: sqlite3.Connection,
    sub_id: str,
    custom_id: str,
    thread_id: str,
    digest: str,
    token: str,
    source_updated_at: int,
    run_id: int,
    measurements: bytes,
) -> None:
    conn.execute(
        "INSERT INTO batch_requests (submission_id, custom_id, thread_id, input_hash, ownership_token,"
        " source_updated_at, run_id, status, measurements) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
        (sub_id, custom_id, thread_id, digest, token, source_updated_at, run_id, measurements),
    )


_SETTABLE = {"status", "remote_status", "input_file_id", "batch_id", "output_file_id", "error_file_id", "detail"}
_SETTABLE |= {"requests", "bytes", "updated_at", "finished_at"}


def update(conn: sqlite3.Connection, sub_id: str, **cols: Any) -> None:
    unknown = set(cols) - _SETTABLE
    if unknown:
        raise ValueError(f"unknown batch_submissions columns: {sorted(unknown)}")
    conn.execute(
        f"UPDATE batch_submissions SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?", [*cols.values(), sub_id]
    )


def collected(conn: sqlite3.Connection, sub_id: str, now: int) -> None:
    """Every request of the submission is final: collected (a cancelled one stays cancelled)."""
    conn.execute(
        "UPDATE batch_submissions SET status = CASE WHEN status = 'cancelled' THEN status ELSE 'collected' END,"
        " finished_at = ?, updated_at = ? WHERE id = ?",
        (now, now, sub_id),
    )


def pending_requests(conn: sqlite3.Connection, sub_id: str) -> list[Request]:
    rows = conn.execute(
        f"SELECT {_REQ} FROM batch_requests WHERE submission_id = ? AND status = 'pending' ORDER BY custom_id",
        (sub_id,),
    ).fetchall()
    return [Request(*r) for r in rows]


def finish_request(conn: sqlite3.Connection, sub_id: str, custom_id: str, status: str, error: str | None) -> None:
    conn.execute(
        "UPDATE batch_requests SET status = ?, error = ? WHERE submission_id = ? AND custom_id = ?",
        (status, error, sub_id, custom_id),
    )


def openai_input_paths(conn: sqlite3.Connection, *, finished: bool = False) -> list[str]:
    """The request files memtui wrote for remote submissions (of finished ones only, with ``finished``)."""
    sql = "SELECT input_path FROM batch_submissions WHERE kind='openai' AND input_path IS NOT NULL"
    if finished:
        sql += f" AND status IN ({', '.join(repr(s) for s in FINISHED)})"
    return [r[0] for r in conn.execute(sql).fetchall() if r[0]]


def forget_request_errors(conn: sqlite3.Connection, thread_id: str) -> int:
    """A forgotten rollout's request rows keep ids only (an error can quote it)."""
    return conn.execute(
        "UPDATE batch_requests SET error=NULL WHERE thread_id=? AND error IS NOT NULL", (thread_id,)
    ).rowcount
