"""The structured-output ladder: which ``response_format`` a model server takes, probed once per base URL.

OpenAI, vLLM, Ollama and LM Studio take ``json_schema`` (strict); llama.cpp's server and llama-cpp-python refuse it
and take ``{type: json_object, schema}``; some servers take neither, and then the schema goes in the prompt. The
first request to a base URL walks down the ladder until the server accepts the request (whatever the reply's
quality: that is validation's business), and the accepted rung is remembered in ``engine_modes.json`` under the
memtui home, so later runs go straight to it. Every rung's reply is validated by the same pydantic model.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from memtui.adapters.llm.chat_call import call_structured
from memtui.adapters.llm.structured import (
    FormatRefused,
    InvalidReply,
    M,
    OutputMode,
    StructuredCallError,
    StructuredResult,
)

LADDER = (OutputMode.JSON_SCHEMA, OutputMode.JSON_OBJECT, OutputMode.PROMPT)
MODES_FILE = "engine_modes.json"
DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the key under which the OpenAI default is remembered


class ModeMemory:
    """base URL -> accepted ``OutputMode``, in a small JSON file (written atomically; unreadable = unknown)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def get(self, base_url: str) -> OutputMode | None:
        with self._lock:
            value = self._load().get(base_url)
        try:
            return OutputMode(value) if value else None
        except ValueError:
            return None

    def remember(self, base_url: str, mode: OutputMode) -> None:
        with self._lock:
            data = self._load()
            if data.get(base_url) == mode.value:
                return
            data[base_url] = mode.value
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)

    def forget(self, base_url: str) -> None:
        with self._lock:
            data = self._load()
            if data.pop(base_url, None) is not None:
                self.path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def mode_memory(home: Path) -> ModeMemory:
    return ModeMemory(home / MODES_FILE)


async def call_on_ladder(
    client: Any,
    memory: ModeMemory,
    base_url: str | None,
    *,
    model: str,
    system: str,
    user: str,
    output_model: type[M],
    schema_name: str,
    max_tokens: int | None = None,
) -> StructuredResult[M]:
    """One structured call in the mode the server is known to take, or the probe down the ladder when unknown."""
    key = (base_url or DEFAULT_BASE_URL).rstrip("/")
    known = memory.get(key)
    rungs = (known,) if known is not None else LADDER
    refusals: list[str] = []
    for mode in rungs:
        try:
            result = await call_structured(
                client,
                model=model,
                system=system,
                user=user,
                output_model=output_model,
                schema_name=schema_name,
                mode=mode,
                max_tokens=max_tokens,
            )
        except FormatRefused as exc:
            if known is not None:
                raise
            refusals.append(f"{mode.value}: {exc}")
            continue
        except InvalidReply:
            memory.remember(key, mode)  # the request was accepted: the format works, the reply did not
            raise
        memory.remember(key, mode)
        return result
    raise StructuredCallError("the model server refused every structured-output form; " + " | ".join(refusals))
