"""Claude Code as a backend, on the user's own login (``claude -p``).

What this relies on (documented behaviour, cited):
- ``claude -p`` / ``--print`` answers once and exits; the prompt may come on stdin. ``--output-format json`` prints
  one result object: ``type`` ("result"), ``subtype`` ("success" or an ``error_*`` value), ``is_error``, ``result``
  (the text), ``session_id``, ``duration_ms``, ``num_turns``, ``total_cost_usd``, ``usage``; with
  ``--json-schema SCHEMA`` the validated object is in ``structured_output``. Sources: the Claude Code headless /
  CLI reference as summarised in dev.to/aobaworks "claude code output format json fields", jakelin.github.io
  effective-claude-code item 59, and the claude-headless-mode skill (``structured_output`` field).
- ``--disallowedTools`` / ``--allowedTools`` take comma-separated tool names; ``--permission-mode acceptEdits``
  lets file edits through without a prompt. Source: Claude Code CLI reference (claude_runner's
  ``--disallowed-tools`` page mirrors it).
- Not logged in: the result reads "Invalid API key · Please run /login" (anthropics/claude-code#6270, #6331).
  Usage limits: "Claude AI usage limit reached|<epoch>" (anthropics/claude-code#11429) and "You've hit your limit ·
  resets ..." (#22946). ``claude auth status`` prints ``{"loggedIn": bool, ...}`` (lezli01/vincent#460,
  compozy/compozy#632).
- ``--tools ""`` gives the model no tools at all, ``--strict-mcp-config`` ignores the user's MCP servers, and
  ``--no-session-persistence`` (print mode) writes no transcript; each is used when ``claude --help`` lists it
  (``capabilities``). An older Claude Code writes a transcript under ``~/.claude/projects/<cwd>``: memtui runs it in
  its own working folder and marks the prompt, and ingest skips such sessions (``memtui.adapters.selfcalls``).
- Clean room (``cleanroom``): ``--safe-mode``, ``--setting-sources ""`` and ``--settings`` (hooks and auto memory
  off, the user's auth and model settings, writes into Claude's own folder denied). The agent gets ``--tools
  Read,Edit,Write,Glob,Grep`` (without it Claude 2.1.328 also offered ListAgents, ReportFindings, ScheduleWakeup,
  ToolSearch, Workflow...), ``--permission-mode acceptEdits`` (edits in its folder pass; anything else would ask,
  and ``--permission-prompts none`` refuses what would ask) and no ``--allowedTools`` (a bare ``Write`` there allows
  writes anywhere). After the run memtui checks Claude's per-folder state for the work copy (its auto memory) and
  refuses a run that wrote there.
- The result's ``modelUsage`` maps each model the run used to its tokens: the run is labelled with the one that did
  most of the work.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson

from memtui.adapters.llm.backends.base import AgentOutcome, AgentRequest, BackendError, FailureKind, M, cli_model
from memtui.adapters.llm.backends.capabilities import AGENT_TOOLS, CliCaps, claude_quiet_args, detect
from memtui.adapters.llm.backends.cleanroom import (
    CLAUDE_FILE_TOOLS,
    claude_dirs,
    claude_project_files,
    claude_settings,
)
from memtui.adapters.llm.backends.cli_common import classify, json_lines, probe, run_cli, short
from memtui.adapters.llm.structured import StructuredResult, strict_json_schema, validate_reply
from memtui.adapters.selfcalls import with_marker, work_dir
from memtui.core.paths import Paths
from memtui.core.settings import Settings

COMMAND = "claude"
# The built-in tools, refused for extraction by a Claude Code too old for ``--tools ""`` (which refuses all, MCP
# tools included): the call must only answer.
ALL_TOOLS = (
    "Agent,Bash,BashOutput,KillShell,Edit,MultiEdit,Write,Read,Glob,Grep,LS,NotebookEdit,NotebookRead,"
    "WebFetch,WebSearch,Task,TaskOutput,TaskStop,TodoWrite,SlashCommand,Skill,ExitPlanMode,Monitor,ToolSearch,"
    "EnterWorktree,AskUserQuestion"
)
AGENT_ALLOWED = AGENT_TOOLS
AGENT_DISALLOWED = "Bash,BashOutput,KillShell,NotebookEdit,WebFetch,WebSearch,Task,SlashCommand,Skill"


def auth_status(command: str = COMMAND) -> tuple[bool | None, str]:
    """(logged in?, what the CLI said); None when unknown (an older CLI without ``auth status``, or no CLI)."""
    done = probe([command, "auth", "status"])
    if done is None:
        return None, f"`{command} auth status` could not run"
    try:
        obj = json.loads(done.stdout)
    except ValueError:
        return None, short(done.stdout + done.stderr) or f"exit {done.returncode}"
    if isinstance(obj, dict) and isinstance(obj.get("loggedIn"), bool):
        method = obj.get("authMethod")
        return obj["loggedIn"], "logged in" + (f" ({method})" if method else "") if obj["loggedIn"] else "not logged in"
    return None, "unrecognised `claude auth status` output"


def structured_argv(
    schema: dict[str, Any], model: str | None, command: str = COMMAND, quiet: list[str] | None = None
) -> list[str]:
    argv = [command, "-p", "--output-format", "json", "--json-schema", json.dumps(schema, separators=(",", ":"))]
    argv += quiet or []
    if "--tools" not in (quiet or []):
        argv += ["--disallowedTools", ALL_TOOLS]
    if model:
        argv += ["--model", model]
    return argv


def agent_argv(model: str | None, command: str = COMMAND, quiet: list[str] | None = None) -> list[str]:
    argv = [command, "-p", *(quiet or []), "--permission-mode", "acceptEdits"]
    if "--tools" not in (quiet or []):  # an older Claude Code: the documented tools allowed, the rest refused
        argv += ["--allowedTools", AGENT_ALLOWED, "--disallowedTools", AGENT_DISALLOWED]
    argv += ["--output-format", "json"]
    if model:
        argv += ["--model", model]
    return argv


def refuse_outside_writes(state: Path, root: Path, before: dict[str, tuple[int, int]]) -> list[str]:
    """Files the run wrote or changed in Claude's per-folder state for ``root`` (its auto memory: the one place
    Claude 2.1.328 writes with no permission asked). They belong to memtui's throwaway work copy, so they are
    removed; their names come back for the refusal."""
    after = claude_project_files(state, root)
    wrote = sorted(p for p, sig in after.items() if before.get(p) != sig)
    for p in wrote:
        if p not in before:
            Path(p).unlink(missing_ok=True)
    return wrote


def parse_result(stdout: bytes, stderr: bytes, returncode: int) -> dict[str, Any]:
    """The ``type: result`` object, or a classified ``BackendError``."""
    objs = [o for o in json_lines(stdout) if o.get("type") == "result"]
    if not objs:
        try:
            obj = orjson.loads(stdout)
            objs = [obj] if isinstance(obj, dict) and obj.get("type") == "result" else []
        except orjson.JSONDecodeError:
            objs = []
    if not objs:
        said = (stderr or stdout).decode("utf-8", "replace")
        if returncode != 0:
            raise BackendError(classify(said), short(f"claude exit {returncode}: {said}"))
        raise BackendError(FailureKind.INVALID_OUTPUT, short(f"claude printed no JSON result object: {said}"))
    result = objs[-1]
    raw_usage = result.get("usage")
    usage = raw_usage if isinstance(raw_usage, dict) else {}
    ptok = int(usage.get("input_tokens") or 0) + int(usage.get("cache_read_input_tokens") or 0) or None
    ctok = int(usage.get("output_tokens") or 0) or None
    result["_tokens"] = (ptok, ctok)
    result["_model"] = main_model(result.get("modelUsage"))
    if result.get("is_error") or result.get("subtype") != "success" or returncode != 0:
        said = str(result.get("result") or result.get("subtype") or "error")
        default = FailureKind.INVALID_OUTPUT if "structured_output" in str(result.get("subtype")) else FailureKind.ERROR
        raise BackendError(
            classify(said, default),
            short(f"claude {result.get('subtype')}: {said}"),
            prompt_tokens=ptok,
            completion_tokens=ctok,
        )
    return result


def denied_writes(denials: object) -> list[str]:
    """The paths of file writes Claude refused in the run (the result's ``permission_denials``): an agent that tried
    to write outside its work copy is not trusted with the rest of its run either."""
    out = []
    for d in denials if isinstance(denials, list) else []:
        if isinstance(d, dict) and d.get("tool_name") in CLAUDE_FILE_TOOLS:
            given = d.get("tool_input")
            args = given if isinstance(given, dict) else {}
            out.append(str(args.get("file_path") or args.get("notebook_path") or d.get("tool_name")))
    return out


def main_model(usage: object) -> str | None:
    """The model that did most of the run's work in the result's ``modelUsage`` (side calls may use a small one)."""
    if not isinstance(usage, dict) or not usage:
        return None

    def work(item: tuple[str, object]) -> int:
        u = item[1] if isinstance(item[1], dict) else {}
        return sum(int(u.get(k) or 0) for k in ("inputTokens", "outputTokens", "cacheReadInputTokens"))

    return str(max(usage.items(), key=work)[0])


class ClaudeCliBackend:
    name = "claude"
    own_tools = True

    def __init__(self, settings: Settings, paths: Paths, command: str = COMMAND) -> None:
        self.settings, self.paths, self.command = settings, paths, command
        self._checked = False
        self.caps: CliCaps | None = None

    def describe_model(self, model: str | None) -> str:
        return cli_model(self.name, model)

    async def _ensure_login(self) -> None:
        if self._checked:
            return
        ok, said = await asyncio.to_thread(auth_status, self.command)
        if ok is False:
            raise BackendError(FailureKind.NOT_LOGGED_IN, f"claude auth status: {said}; run `claude` and /login")
        self.caps = await asyncio.to_thread(detect, self.command)
        self._checked = True  # unknown (older CLI) is not a refusal: the call itself will say

    async def structured(
        self, *, model: str | None, system: str, user: str, output_model: type[M], schema_name: str
    ) -> StructuredResult[M]:
        await self._ensure_login()
        cwd = work_dir(self.paths)
        done = await run_cli(
            structured_argv(strict_json_schema(output_model), model, self.command, self._quiet(tool_less=True)),
            stdin=with_marker(f"{system}\n\n{user}").encode("utf-8"),
            cwd=cwd,
            timeout=self.settings.cli_timeout_seconds,
        )
        result = parse_result(done.stdout, done.stderr, done.returncode)
        ptok, ctok = result["_tokens"]
        structured = result.get("structured_output")
        if not isinstance(structured, dict):
            # what Claude Code 2.1.328 does when the model answers in prose instead of calling its structured-output
            # tool: subtype success, structured_output null, the prose in result
            prose = " ".join(str(result.get("result") or "").split())
            said = f': "{prose[:120]}"' if prose else " (and no answer at all)"
            raise BackendError(
                FailureKind.INVALID_OUTPUT,
                f"the model answered without calling Claude Code's structured-output tool, so there is no "
                f"structured_output{said}",
                prompt_tokens=ptok,
                completion_tokens=ctok,
            )

        def fail(reason: str) -> BackendError:
            return BackendError(FailureKind.INVALID_OUTPUT, reason, prompt_tokens=ptok, completion_tokens=ctok)

        output = validate_reply(orjson.dumps(structured), output_model, fail)
        used = result["_model"] or model
        return StructuredResult(output, ptok, ctok, int(done.seconds * 1000), self.describe_model(used))

    async def run_agent(self, request: AgentRequest) -> AgentOutcome:
        await self._ensure_login()
        state = self.paths.claude_dir
        before = claude_project_files(state, request.root)
        try:
            done = await run_cli(
                agent_argv(request.model, self.command, self._quiet(tool_less=False)),
                stdin=with_marker(request.prompt).encode("utf-8"),
                cwd=request.root,
                timeout=request.timeout,
                should_stop=request.should_stop,
            )
        finally:
            wrote = refuse_outside_writes(state, request.root, before)
        if wrote:
            raise BackendError(
                FailureKind.ERROR,
                f"the claude agent wrote outside its work copy ({', '.join(wrote[:4])}); those files were removed "
                "and the run refused",
            )
        result = parse_result(done.stdout, done.stderr, done.returncode)
        ptok, ctok = result["_tokens"]
        if tried := denied_writes(result.get("permission_denials")):
            raise BackendError(
                FailureKind.ERROR,
                short(f"the claude agent tried to write outside its work copy ({', '.join(tried[:3])}); refused"),
                prompt_tokens=ptok,
                completion_tokens=ctok,
            )
        turns = int(result.get("num_turns") or 1)
        if request.on_turn:
            request.on_turn(turns, [])
        cost = result.get("total_cost_usd")
        return AgentOutcome(
            str(result.get("result") or ""),
            turns,
            0,
            ptok or 0,
            ctok or 0,
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            extra={"session_id": result.get("session_id")},
            model=self.describe_model(result["_model"] or request.model),
        )

    def _quiet(self, *, tool_less: bool) -> list[str]:
        if self.caps is None:
            return []
        deny = () if tool_less else claude_dirs(self.paths.claude_dir)
        settings = claude_settings(self.paths.claude_dir, deny_writes_in=deny)
        return claude_quiet_args(self.caps, tool_less=tool_less, settings=settings)

    async def aclose(self) -> None:
        return None
