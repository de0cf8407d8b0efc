"""Codex CLI as a backend, on the user's own login (``codex exec``).

What this relies on (documented behaviour, cited):
- ``codex exec`` runs non-interactively; ``-`` (or no prompt) reads the prompt from stdin; ``--ephemeral`` persists
  no session rollout; ``--output-schema FILE`` constrains the final message to a JSON Schema; ``-o`` /
  ``--output-last-message FILE`` writes the final message to a file; ``--json`` prints JSONL events; ``--sandbox``
  ``read-only`` | ``workspace-write``; ``-C`` / ``--cd`` sets the working root; ``--skip-git-repo-check`` runs outside
  a git repository; ``-m`` picks the model. Sources: developers.openai.com/codex/noninteractive ("Non-interactive
  mode") and the ``codex exec`` option reference (mintlify.com/openai/codex/cli/exec).
- ``--json`` events: ``thread.started``, ``turn.started``, ``item.started|updated|completed`` (items such as
  ``agent_message``, ``command_execution``, ``file_change``), ``turn.completed`` with
  ``usage {input_tokens, cached_input_tokens, output_tokens}``, ``turn.failed`` with ``error.message``, and
  ``error``. Source: the exec event types mirrored by docs.rs/codex-codes (io::events) and docs.rs/apiari-codex-sdk.
- ``codex login status`` exits 0 when credentials are loaded and 1 with "Not logged in" otherwise; the status line
  may go to stderr. Sources: openai/codex PR #1716 ("Add login status command"), othavi0/omarchy-agent-bar#64,
  brightwave-inc/tidebreak#2747, Papillon6814/lita#43 (a failed run ends with ``turn.failed``).
- A usage limit reads "You've hit your usage limit. ... try again in ..." (openai/codex#3124, #3899) or
  "Quota exceeded" (openai/codex#8987).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from memtui.adapters.llm.backends.base import AgentOutcome, AgentRequest, BackendError, FailureKind, M
from memtui.adapters.llm.backends.capabilities import codex_quiet_args, detect
from memtui.adapters.llm.backends.cli_common import classify, json_lines, probe, run_cli, short
from memtui.adapters.llm.structured import StructuredResult, strict_json_schema, validate_reply
from memtui.adapters.selfcalls import with_marker, work_dir
from memtui.core.paths import Paths
from memtui.core.settings import Settings

COMMAND = "codex"


def login_status(command: str = COMMAND) -> tuple[bool | None, str]:
    """(logged in?, what the CLI said); None when the CLI cannot be run."""
    done = probe([command, "login", "status"])
    if done is None:
        return None, f"`{command} login status` could not run"
    said = short((done.stdout.strip() + " " + done.stderr.strip()).strip()) or f"exit {done.returncode}"
    return done.returncode == 0, said


def structured_argv(
    schema: Path, out: Path, cwd: Path, model: str | None, command: str = COMMAND, quiet: list[str] | None = None
) -> list[str]:
    argv = [command, "exec", *(quiet or []), "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral"]
    argv.append("--json")
    argv += ["--color", "never", "-C", str(cwd), "--output-schema", str(schema), "-o", str(out)]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


def agent_argv(
    root: Path, out: Path, model: str | None, command: str = COMMAND, quiet: list[str] | None = None
) -> list[str]:
    argv = [command, "exec", *(quiet or []), "--sandbox", "workspace-write", "-C", str(root), "--skip-git-repo-check"]
    argv.append("--ephemeral")
    argv += ["--json", "--color", "never", "-o", str(out)]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


def _events_summary(stdout: bytes) -> tuple[int | None, int | None, str | None, list[str], str]:
    """(input tokens, output tokens, failure message, item kinds, last agent message) from ``--json`` events."""
    ptok = ctok = None
    failure = None
    last_error = None
    completed = False
    kinds: list[str] = []
    last_message = ""
    for ev in json_lines(stdout):
        kind = ev.get("type")
        if kind in ("turn.completed", "turn.failed") and isinstance(ev.get("usage"), dict):
            ptok = (ptok or 0) + int(ev["usage"].get("input_tokens") or 0)
            ctok = (ctok or 0) + int(ev["usage"].get("output_tokens") or 0)
        completed = completed or kind == "turn.completed"
        if kind == "turn.failed":
            error = ev.get("error")
            err = error if isinstance(error, dict) else ev
            failure = str(err.get("message") or "codex reported a failed turn")
        elif kind == "error":  # may be a transient notice (a reconnect) in a turn that still completes
            last_error = str(ev.get("message") or "codex reported an error")
        if kind == "item.completed" and isinstance(ev.get("item"), dict):
            item = ev["item"]
            item_type = str(item.get("type") or item.get("item_type") or "item")
            kinds.append(item_type)
            if item_type == "agent_message" and isinstance(item.get("text"), str):
                last_message = item["text"]
    if failure is None and last_error is not None and not completed:
        failure = last_error
    return ptok, ctok, failure, kinds, last_message


class CodexCliBackend:
    name = "codex"
    own_tools = True

    def __init__(self, settings: Settings, paths: Paths, command: str = COMMAND) -> None:
        self.settings, self.paths, self.command = settings, paths, command
        self._login_checked = False
        self._login_lock = asyncio.Lock()
        self.quiet: list[str] = []  # from the installed codex's own help, once (``capabilities``)

    def describe_model(self, model: str | None) -> str:
        return f"codex:{model}" if model else "codex (its default model)"

    async def _ensure_login(self) -> None:
        async with self._login_lock:
            if self._login_checked:
                return
            ok, said = await asyncio.to_thread(login_status, self.command)
            if ok is None:
                raise BackendError(FailureKind.NOT_INSTALLED, f"`{self.command}` is not on PATH or cannot run")
            if not ok:
                raise BackendError(FailureKind.NOT_LOGGED_IN, f"{said}; run `codex login`")
            caps = await asyncio.to_thread(detect, self.command, ("exec", "--help"))
            self.quiet = codex_quiet_args(caps)
            self._login_checked = True

    def _fail(self, rc: int, message: str, stderr: bytes, ptok: int | None, ctok: int | None) -> BackendError:
        text = message or stderr.decode("utf-8", "replace")
        kind = classify(f"{message}\n{stderr.decode('utf-8', 'replace')}")
        return BackendError(kind, short(f"codex exec exit {rc}: {text}"), prompt_tokens=ptok, completion_tokens=ctok)

    async def structured(
        self, *, model: str | None, system: str, user: str, output_model: type[M], schema_name: str
    ) -> StructuredResult[M]:
        await self._ensure_login()
        cwd = work_dir(self.paths)
        with tempfile.TemporaryDirectory(prefix="codex-", dir=cwd) as tmp:
            schema = Path(tmp) / f"{schema_name}.schema.json"
            schema.write_text(json.dumps(strict_json_schema(output_model)), encoding="utf-8")
            out = Path(tmp) / "last_message.json"
            done = await run_cli(
                structured_argv(schema, out, cwd, model, self.command, self.quiet),
                stdin=with_marker(f"{system}\n\n{user}").encode("utf-8"),
                cwd=cwd,
                timeout=self.settings.cli_timeout_seconds,
            )
            ptok, ctok, failure, _, last_message = _events_summary(done.stdout)
            if done.returncode != 0 or failure:
                raise self._fail(done.returncode, failure or "", done.stderr, ptok, ctok)
            text = out.read_text(encoding="utf-8") if out.is_file() else last_message
        if not text.strip():
            raise BackendError(FailureKind.INVALID_OUTPUT, "codex exec produced no final message", prompt_tokens=ptok)

        def fail(reason: str) -> BackendError:
            return BackendError(FailureKind.INVALID_OUTPUT, reason, prompt_tokens=ptok, completion_tokens=ctok)

        output = validate_reply(text, output_model, fail)
        return StructuredResult(output, ptok, ctok, int(done.seconds * 1000), self.describe_model(model))

    async def run_agent(self, request: AgentRequest) -> AgentOutcome:
        await self._ensure_login()
        scratch = work_dir(self.paths)
        with tempfile.TemporaryDirectory(prefix="codex-agent-", dir=scratch) as tmp:
            out = Path(tmp) / "last_message.md"
            done = await run_cli(
                agent_argv(request.root, out, request.model, self.command, self.quiet),
                stdin=with_marker(request.prompt).encode("utf-8"),
                cwd=request.root,
                timeout=request.timeout,
                should_stop=request.should_stop,
            )
            ptok, ctok, failure, kinds, last_message = _events_summary(done.stdout)
            if done.returncode != 0 or failure:
                raise self._fail(done.returncode, failure or "", done.stderr, ptok, ctok)
            final = out.read_text(encoding="utf-8") if out.is_file() else last_message
        if request.on_turn:
            request.on_turn(1, kinds)
        extra: dict[str, Any] = {"items": len(kinds)}
        return AgentOutcome(final, 1, sum(k != "agent_message" for k in kinds), ptok or 0, ctok or 0, extra=extra)

    async def aclose(self) -> None:
        return None
