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
- Every call runs with memtui's private ``CODEX_HOME`` (``cleanroom``): none of the user's AGENTS.md, memories,
  notify, hooks or MCP servers. Its session file lands there, not among the user's sessions; memtui reads the model
  Codex really used from it (the last ``turn_context``, measured with codex 0.169.0: ``--json`` events name no
  model) and deletes it. ``codex login status`` says "Not logged in" for a provider that takes an API key from
  ``env_key``; such a Codex works, so memtui accepts it when that variable is set (``codex_api_key_login``).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.llm.backends.base import AgentOutcome, AgentRequest, BackendError, FailureKind, M, cli_model
from memtui.adapters.llm.backends.capabilities import codex_quiet_args, detect
from memtui.adapters.llm.backends.cleanroom import codex_api_key_login, codex_config, codex_env, codex_home
from memtui.adapters.llm.backends.cli_common import classify, json_lines, probe, run_cli, short
from memtui.adapters.llm.structured import StructuredResult, strict_json_schema, validate_reply
from memtui.adapters.rollouts.model import OUTPUT_TYPES
from memtui.adapters.selfcalls import with_marker, work_dir
from memtui.core.paths import Paths, resolve_paths
from memtui.core.settings import Settings

COMMAND = "codex"


def login_status(
    command: str = COMMAND, env: dict[str, str] | None = None, config: dict[str, Any] | None = None
) -> tuple[bool | None, str]:
    """(logged in?, what the CLI said); None when the CLI cannot be run. ``config``: the provider settings the calls
    use (default: the user's); a provider with its API key in the environment counts as logged in."""
    done = probe([command, "login", "status"], env=env)
    if done is None:
        return None, f"`{command} login status` could not run"
    said = short((done.stdout.strip() + " " + done.stderr.strip()).strip()) or f"exit {done.returncode}"
    if done.returncode == 0:
        return True, said
    if config is None:
        config = codex_config(resolve_paths().codex_home)
    if why := codex_api_key_login(config, env if env is not None else dict(os.environ)):
        return True, f"{why} (`codex login status`: {said})"
    return False, said


def structured_argv(
    schema: Path, out: Path, cwd: Path, model: str | None, command: str = COMMAND, quiet: list[str] | None = None
) -> list[str]:
    argv = [command, "exec", *(quiet or []), "--sandbox", "read-only", "--skip-git-repo-check", "--json"]
    argv += ["--color", "never", "-C", str(cwd), "--output-schema", str(schema), "-o", str(out)]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


# ``workspace-write`` also lets commands write in /tmp and $TMPDIR; the agent may write only its work copy.
AGENT_SANDBOX = ["-c", "sandbox_workspace_write.exclude_slash_tmp=true"]
AGENT_SANDBOX += ["-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"]
# What a command gets when the sandbox refuses a write (Linux; macOS's seatbelt says "Operation not permitted").
SANDBOX_REFUSED = ("Read-only file system", "Operation not permitted")


def agent_argv(
    root: Path, out: Path, model: str | None, command: str = COMMAND, quiet: list[str] | None = None
) -> list[str]:
    argv = [command, "exec", *(quiet or []), "--sandbox", "workspace-write", *AGENT_SANDBOX]
    argv += ["-C", str(root), "--skip-git-repo-check"]
    argv += ["--json", "--color", "never", "-o", str(out)]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


@dataclass
class Events:
    """What memtui reads from ``--json`` events."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    failure: str | None = None
    kinds: list[str] = field(default_factory=list)
    last_message: str = ""
    thread_id: str | None = None
    refused: list[str] = field(default_factory=list)  # commands the sandbox stopped from writing


def _events_summary(stdout: bytes) -> Events:
    """Tokens, the failure message, item kinds, the last agent message and the thread id from ``--json`` events."""
    out = Events()
    last_error = None
    completed = False
    for ev in json_lines(stdout):
        kind = ev.get("type")
        if kind == "thread.started" and isinstance(ev.get("thread_id"), str):
            out.thread_id = ev["thread_id"]
        if kind in ("turn.completed", "turn.failed") and isinstance(ev.get("usage"), dict):
            out.prompt_tokens = (out.prompt_tokens or 0) + int(ev["usage"].get("input_tokens") or 0)
            out.completion_tokens = (out.completion_tokens or 0) + int(ev["usage"].get("output_tokens") or 0)
        completed = completed or kind == "turn.completed"
        if kind == "turn.failed":
            error = ev.get("error")
            err = error if isinstance(error, dict) else ev
            out.failure = str(err.get("message") or "codex reported a failed turn")
        elif kind == "error":  # may be a transient notice (a reconnect) in a turn that still completes
            last_error = str(ev.get("message") or "codex reported an error")
        if kind == "item.completed" and isinstance(ev.get("item"), dict):
            item = ev["item"]
            item_type = str(item.get("type") or item.get("item_type") or "item")
            out.kinds.append(item_type)
            if item_type == "agent_message" and isinstance(item.get("text"), str):
                out.last_message = item["text"]
            said = str(item.get("aggregated_output") or "")
            if item_type == "command_execution" and any(r in said for r in SANDBOX_REFUSED):
                out.refused.append(short(str(item.get("command") or "")))
    if out.failure is None and last_error is not None and not completed:
        out.failure = last_error
    return out


@dataclass
class Session:
    """What memtui reads from its own call's session file: the model and the writes the sandbox refused."""

    model: str | None = None
    refused: list[str] = field(default_factory=list)


def take_session(home: Path, thread_id: str | None) -> Session:
    """The model of the thread's last turn (``turn_context``, else ``session_meta``) and the tool outputs that say
    the sandbox refused a write, from its session file in memtui's private CODEX_HOME, which is then deleted:
    memtui keeps no copy of its own calls' sessions. (The ``--json`` events do not always carry a refused
    command's output; the session always has what the model was told.)"""
    out = Session()
    if not thread_id:
        return out
    for path in sorted((home / "sessions").glob(f"**/rollout-*{thread_id}.jsonl")):
        try:
            lines = path.read_bytes().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            payload = obj.get("payload") if isinstance(obj, dict) else None
            if not isinstance(payload, dict):
                continue
            named = payload.get("model")
            if isinstance(named, str) and named and obj.get("type") in ("session_meta", "turn_context"):
                out.model = named
            if payload.get("type") in OUTPUT_TYPES:
                said = str(payload.get("output") or "")
                if any(r in said for r in SANDBOX_REFUSED):
                    out.refused.append(short(said))
        path.unlink(missing_ok=True)
    return out


class CodexCliBackend:
    name = "codex"
    own_tools = True

    def __init__(self, settings: Settings, paths: Paths, command: str = COMMAND) -> None:
        self.settings, self.paths, self.command = settings, paths, command
        self._login_checked = False
        self._login_lock = asyncio.Lock()
        self.quiet: list[str] = []  # from the installed codex's own help, once (``capabilities``)
        self.home: Path | None = None  # memtui's private CODEX_HOME (``cleanroom``)
        self.env: dict[str, str] | None = None

    def describe_model(self, model: str | None) -> str:
        return cli_model(self.name, model)

    async def _ensure_login(self) -> None:
        async with self._login_lock:
            if self._login_checked:
                return
            self.home = await asyncio.to_thread(codex_home, self.paths)
            self.env = codex_env(self.home)
            config = codex_config(self.paths.codex_home)
            ok, said = await asyncio.to_thread(login_status, self.command, self.env, config)
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

    def _session(self, ev: Events) -> Session:
        assert self.home is not None
        return take_session(self.home, ev.thread_id)

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
                env=self.env,
            )
            ev = _events_summary(done.stdout)
            used = self._session(ev).model or model
            ptok, ctok = ev.prompt_tokens, ev.completion_tokens
            if done.returncode != 0 or ev.failure:
                raise self._fail(done.returncode, ev.failure or "", done.stderr, ptok, ctok)
            text = out.read_text(encoding="utf-8") if out.is_file() else ev.last_message
        if not text.strip():
            raise BackendError(FailureKind.INVALID_OUTPUT, "codex exec produced no final message", prompt_tokens=ptok)

        def fail(reason: str) -> BackendError:
            return BackendError(FailureKind.INVALID_OUTPUT, reason, prompt_tokens=ptok, completion_tokens=ctok)

        output = validate_reply(text, output_model, fail)
        return StructuredResult(output, ptok, ctok, int(done.seconds * 1000), self.describe_model(used))

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
                env=self.env,
            )
            ev = _events_summary(done.stdout)
            session = self._session(ev)
            used = session.model or request.model
            ptok, ctok = ev.prompt_tokens, ev.completion_tokens
            if done.returncode != 0 or ev.failure:
                raise self._fail(done.returncode, ev.failure or "", done.stderr, ptok, ctok)
            if refused := ev.refused or session.refused:
                raise BackendError(
                    FailureKind.ERROR,
                    short(f"the codex agent tried to write outside its work copy ({'; '.join(refused[:3])}); refused"),
                    prompt_tokens=ptok,
                    completion_tokens=ctok,
                )
            final = out.read_text(encoding="utf-8") if out.is_file() else ev.last_message
        if request.on_turn:
            request.on_turn(1, ev.kinds)
        extra: dict[str, Any] = {"items": len(ev.kinds)}
        tool_calls = sum(k != "agent_message" for k in ev.kinds)
        return AgentOutcome(final, 1, tool_calls, ptok or 0, ctok or 0, extra=extra, model=self.describe_model(used))

    async def aclose(self) -> None:
        return None
