"""Bulk Phase 1 on an existing engine: the OpenAI Batch API, or a JSONL file for ``vllm run-batch``.

The same claims, redaction, request body, validation and storage as the synchronous path; only the transport
differs. Every step is recorded in ``batch_submissions`` / ``batch_requests`` before the next one starts, so a
process that exits at any point resumes from the stored ids, never submits a rollout twice, and never stores a
result whose filtered input changed since it was sent.

    prepare.py  claim (long lease) -> filter -> redact -> budget -> one JSONL line per rollout, split per file limits
    remote.py   upload (POST /v1/files, purpose=batch), create (POST /v1/batches, 24h), poll, download, cancel
    apply.py    validate and store each result exactly like the synchronous path; release what never ran
    ops.py      what the CLI calls: submit, status, collect, cancel, export, import
"""
