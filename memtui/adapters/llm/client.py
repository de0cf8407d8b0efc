"""The one place an OpenAI-compatible client is built from settings.

Retries are the job system's business (``retry_remaining`` / ``retry_at``), so the client itself never retries;
``structured.py`` allows a single quick retry on HTTP 429.
"""

from __future__ import annotations

import openai

from memtui.core.settings import Settings


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
