"""The OpenAI Batch API through the ``openai`` client: upload, create, find after a crash, poll, download, cancel.

Every remote id is stored as soon as it exists. A crash between "create" and storing the batch id cannot cause a
second submission: the batch carries ``metadata.memtui_submission`` and a resumed run looks for it before creating.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memtui.core import clock
from memtui.services.batch.model import COMPLETION_WINDOW, METADATA_KEY, URL
from memtui.state import batches

LIST_PAGES = 20  # how far back (x100 batches) a resumed run looks for a batch it may have created


def _set(conn: sqlite3.Connection, sub_id: str, **cols: Any) -> None:
    cols["updated_at"] = clock.now_s()
    batches.update(conn, sub_id, **cols)


def find_remote(client: Any, sub_id: str) -> Any | None:
    page = client.batches.list(limit=100)
    for _ in range(LIST_PAGES):
        for batch in page.data:
            if (batch.metadata or {}).get(METADATA_KEY) == sub_id:
                return batch
        if not page.has_next_page():
            return None
        page = page.get_next_page()
    return None


def submit(conn: sqlite3.Connection, client: Any, sub: batches.Submission) -> str:
    """Upload (if not yet) and create the batch (unless one for this submission exists); returns the batch id."""
    file_id = sub.input_file_id
    if file_id is None:
        if sub.input_path is None:
            raise ValueError(f"batch submission {sub.id} has no input file to upload")
        with open(sub.input_path, "rb") as fh:
            uploaded = client.files.create(file=(Path(sub.input_path).name, fh), purpose="batch")
        file_id = uploaded.id
        _set(conn, sub.id, input_file_id=file_id, status="uploaded")
    existing = find_remote(client, sub.id) if sub.status == "uploaded" else None
    batch = existing or client.batches.create(
        input_file_id=file_id,
        endpoint=URL,
        completion_window=COMPLETION_WINDOW,
        metadata={METADATA_KEY: sub.id},
    )
    _set(conn, sub.id, batch_id=batch.id, status="submitted", remote_status=batch.status)
    return batch.id


def poll(conn: sqlite3.Connection, client: Any, sub: batches.Submission) -> Any:
    batch = client.batches.retrieve(sub.batch_id)
    _set(
        conn,
        sub.id,
        remote_status=batch.status,
        output_file_id=batch.output_file_id,
        error_file_id=batch.error_file_id,
    )
    return batch


def download(client: Any, file_id: str | None) -> bytes:
    if not file_id:
        return b""
    return client.files.content(file_id).content


def cancel(conn: sqlite3.Connection, client: Any, sub: batches.Submission) -> str:
    batch = client.batches.cancel(sub.batch_id)
    _set(conn, sub.id, remote_status=batch.status, detail="cancel requested")
    return batch.status


def batch_errors(batch: Any) -> str | None:
    """The messages of ``batch.errors`` (a batch that failed validation: ``{data: [{code, message, line}]}``)."""
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or []
    said = []
    for e in data:
        line = getattr(e, "line", None)
        where = f"line {line}: " if line is not None else ""
        said.append(f"{where}{getattr(e, 'code', None) or 'error'}: {getattr(e, 'message', None) or 'no detail'}")
    return "; ".join(said) or None


def note(conn: sqlite3.Connection, sub_id: str, detail: str) -> None:
    _set(conn, sub_id, detail=detail[:2000])
