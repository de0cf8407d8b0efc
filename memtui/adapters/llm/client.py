"""The one place an OpenAI-compatible client is built from settings.

Retries are the job system's business (``retry_remaining`` / ``retry_at``), so the client itself never retries;
``structured.py`` allows a single quick retry on HTTP 429.
"""

from __future__ import annotations

import contextlib
import importlib

import openai

from memtui.core.settings import Settings

# What a client's construction and first request would otherwise import in the middle of a run (the SDK loads its
# chat resource, HTTP/1.1 stack, anyio's asyncio backend and SSL trust store on first use): loaded with this module,
# so no call pays for them. A name an SDK update drops is skipped; ``benchmarks/phase1.py`` counts what a run still
# imports.
FIRST_CALL_MODULES = (
    "openai.resources.chat.chat",
    "openai.resources.chat.completions.completions",
    "openai.types.chat",
    "openai.pagination",
    "httpcore2",
    "h11",
    "anyio._backends._asyncio",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "truststore",
    "jiter",
)
for _name in FIRST_CALL_MODULES:
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)


def make_async_client(settings: Settings, *, timeout: float | None = None) -> openai.AsyncOpenAI:
    """``AsyncOpenAI`` for ``settings.base_url`` (None = the OpenAI default) with the configured timeout."""
    return openai.AsyncOpenAI(
        api_key=settings.api_key or "not-needed",
        base_url=settings.base_url,
        timeout=timeout if timeout is not None else settings.request_timeout_seconds,
        max_retries=0,
    )


def make_client(settings: Settings, *, timeout: float | None = None) -> openai.OpenAI:
    """The blocking client, for the Batch API's few file and batch calls."""
    return openai.OpenAI(
        api_key=settings.api_key or "not-needed",
        base_url=settings.base_url,
        timeout=timeout if timeout is not None else settings.request_timeout_seconds,
        max_retries=2,
    )
