"""Stand-ins for the ``codex`` and ``claude`` executables, written from their documented flags and outputs.

``install(bin_dir)`` writes two executable Python scripts into ``bin_dir`` (put it first on PATH). Behaviour comes
from the environment, so a test sets it with ``monkeypatch.setenv`` and the subprocess inherits it:

- ``FAKE_AGENT_MODE``: ``success`` (default), ``not_logged_in``, ``usage_limit``, ``garbage`` (not JSON),
  ``schema_mismatch`` (JSON with an unknown field), ``hang`` (sleeps until killed).
- ``FAKE_AGENT_REPLY``: the JSON object to answer with (default: a valid stage-one output).
- ``FAKE_AGENT_EDITS``: JSON ``{relative path: content | null}`` an agent run applies inside its working root.
- ``FAKE_AGENT_DELAY``: seconds an agent run works before it applies its edits (a window to kill memtui in).
- ``FAKE_AGENT_LOG``: a JSONL file; each invocation appends ``{"argv", "cwd", "stdin"}``.
- ``FAKE_CODEX_IGNORE_EPHEMERAL=1``: persist a session even with ``--ephemeral`` (an old or buggy CLI).
- ``FAKE_CODEX_DEFAULT_MODEL`` / ``FAKE_CLAUDE_DEFAULT_MODEL``: the model a run uses when none is asked for (codex
  names it in its session's ``turn_context``, claude in the result's ``modelUsage``).
- ``FAKE_CLAUDE_AUTOMEMORY=1``: the agent also writes into Claude's auto-memory folder for its cwd, as Claude Code
  2.1.328 lets it with no permission asked, unless a ``--settings`` deny rule covers the folder
  (``FAKE_CLAUDE_IGNORE_DENY=1``: even then).
- ``FAKE_CODEX_LOGIN_STATUS=logged_out``: ``codex login status`` says "Not logged in" while ``codex exec`` works
  (a provider that takes its API key from ``env_key``).

Each log line also says what the real CLI would have loaded of the user's setup: ``instructions`` (codex:
``$CODEX_HOME/AGENTS.md`` and, with ``[features] memories``, ``memories/memory_summary.md``; claude:
``$CLAUDE_CONFIG_DIR/CLAUDE.md`` unless ``--safe-mode``), and claude runs the user's ``SessionEnd`` hooks from
``settings.json`` unless ``--setting-sources`` leaves out ``user`` or ``--settings`` sets ``disableAllHooks``.

Like the real CLIs, codex writes a rollout under ``$CODEX_HOME/sessions`` unless ``--ephemeral``, and claude always
writes a transcript under ``$CLAUDE_CONFIG_DIR/projects/<cwd>``, so "memtui never ingests its own sessions" is tested
against real files. Formats: see the docstrings of ``memtui.adapters.llm.backends.codex_cli`` and ``claude_cli``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

# A valid stage-one output for the rollout ``tests.test_phase1_run.write_rollout`` writes (what the stand-ins and
# the conformance tier's fake model answer a Phase 1 call with).
STAGE_ONE_REPLY = {
    "rollout_summary": "# Fixed the flaky checkout test\n\nThe user ran the tests under TZ=UTC.\n",
    "rollout_slug": "fix-checkout-test",
    "raw_memory": "---\ndescription: tests need TZ=UTC\ntask: fix test\ntask_group: shop-api\ntask_outcome: success\n"
    "cwd: /home/ana/src/shop-api\nkeywords: tz\n---\n### Task 1: fix test\n- run the suite with TZ=UTC\n",
}

SCRIPT = r"""
import json, os, subprocess, sys, time, uuid
from datetime import datetime, timezone
from pathlib import Path

MODE = os.environ.get("FAKE_AGENT_MODE", "success")
DEFAULT_REPLY = json.loads(__STAGE_ONE_REPLY__)
NAME = Path(sys.argv[0]).name
ARGS = sys.argv[1:]


def log(stdin, **more):
    path = os.environ.get("FAKE_AGENT_LOG")
    if path:
        entry = {"argv": [NAME, *ARGS], "cwd": os.getcwd(), "stdin": stdin, "codex_home": os.environ.get("CODEX_HOME")}
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({**entry, **more}) + "\n")


def codex_home():
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def codex_config():
    import tomllib

    try:
        return tomllib.loads((codex_home() / "config.toml").read_text())
    except (OSError, ValueError):
        return {}


def codex_instructions():
    # What codex 0.169.0 prepends to a prompt from its home: the global AGENTS.md and, with memories on, the summary.
    home, out = codex_home(), []
    if (home / "AGENTS.md").is_file():
        out.append((home / "AGENTS.md").read_text())
    if codex_config().get("features", {}).get("memories") and (home / "memories" / "memory_summary.md").is_file():
        out.append((home / "memories" / "memory_summary.md").read_text())
    return "\n".join(out)


def opt(*names):
    for i, a in enumerate(ARGS):
        if a in names and i + 1 < len(ARGS):
            return ARGS[i + 1]
    return None


def reply_obj():
    raw = os.environ.get("FAKE_AGENT_REPLY")
    obj = json.loads(raw) if raw else dict(DEFAULT_REPLY)
    if MODE == "schema_mismatch":
        obj["confidence"] = 0.9
    return obj


def apply_edits(root):
    time.sleep(float(os.environ.get("FAKE_AGENT_DELAY") or 0))
    edits = json.loads(os.environ.get("FAKE_AGENT_EDITS") or "{}")
    for rel, content in edits.items():
        p = Path(root) / rel
        if content is None:
            if p.exists():
                p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content, encoding="utf-8")
    return list(edits)


def now_iso():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


CODEX_HELP = "\n".join([
    'Run Codex non-interactively',
    'Usage: codex exec [OPTIONS] [PROMPT]',
    '  -c, --config <key=value>  Override a configuration value from ~/.codex/config.toml',
    '  -m, --model <MODEL>',
    '  -s, --sandbox <SANDBOX_MODE>',
    '  -C, --cd <DIR>',
    '      --skip-git-repo-check',
    '      --ephemeral',
    '      --disable <FEATURE>',
    '      --output-schema <FILE>',
    '      --color <COLOR>',
    '      --json',
    '  -o, --output-last-message <FILE>',
    '',
])
CLAUDE_HELP = "\n".join([
    'Usage: claude [options] [command] [prompt]',
    '  -p, --print                     Print response and exit',
    '  --output-format <format>',
    '  --json-schema <schema>',
    '  --allowedTools, --allowed-tools <tools...>',
    '  --disallowedTools, --disallowed-tools <tools...>',
    '  --tools <tools...>              Specify the list of available tools ("" disables all tools)',
    '  --safe-mode                     Start with all customizations (CLAUDE.md, hooks...) disabled',
    '  --setting-sources <sources>     Comma-separated list of setting sources to load (user, project, local)',
    '  --settings <file-or-json>       Settings file or JSON string to load more settings from',
    '  --permission-prompts <target>   Who answers permission prompts with --print: "host" or "none"',
    '  --strict-mcp-config             Only use MCP servers from --mcp-config',
    '  --no-session-persistence        Disable session persistence (only with --print)',
    '  --permission-mode <mode>',
    '  --model <model>',
    '',
])


def config_overrides():
    out = {}
    for i, a in enumerate(ARGS[:-1]):
        if a in ("-c", "--config"):
            key, _, value = ARGS[i + 1].partition("=")
            out[key] = value
    return out


def fire_notify(thread):
    # As codex does after each turn: run the user's notify program from config.toml, unless overridden.
    notify = codex_config().get("notify")
    override = config_overrides().get("notify")
    if override is not None:
        notify = json.loads(override)
    if notify:
        payload = {"type": "agent-turn-complete", "thread-id": thread, "turn-id": "1", "cwd": os.getcwd()}
        subprocess.run([*notify, json.dumps(payload)], check=False)


def own_hook_events():
    # install() writes "# hook events: A, B" at the top of a codex that has them
    for line in Path(__file__).read_text(encoding="utf-8").splitlines()[:3]:
        if line.startswith("# hook events: "):
            return [e.strip() for e in line.split(":", 1)[1].split(",") if e.strip()]
    return []


def codex():
    if ARGS[:3] == ["app-server", "generate-json-schema", "--out"]:
        # as the real one: the protocol schema, whose HookEventName enum lists the hook events (camelCase)
        events = [e[:1].lower() + e[1:] for e in own_hook_events()] or ["preToolUse", "postToolUse", "stop"]
        out = Path(ARGS[3])
        out.mkdir(parents=True, exist_ok=True)
        schema = {"definitions": {"HookEventName": {"enum": events, "type": "string"}}}
        (out / "codex_app_server_protocol.v2.schemas.json").write_text(json.dumps(schema))
        sys.exit(0)
    if ARGS[:1] == ["--version"]:
        print(f"codex-cli {os.environ.get('FAKE_CODEX_VERSION', '0.200.0')}")
        sys.exit(0)
    if ARGS[:2] == ["exec", "--help"]:
        print(CODEX_HELP)
        sys.exit(0)
    if ARGS[:2] == ["login", "status"]:
        log("")
        if MODE == "not_logged_in" or os.environ.get("FAKE_CODEX_LOGIN_STATUS") == "logged_out":
            print("Not logged in", file=sys.stderr)
            sys.exit(1)
        print("Logged in using ChatGPT", file=sys.stderr)
        sys.exit(0)
    if not ARGS or ARGS[0] != "exec":
        print("error: unknown command", file=sys.stderr)
        sys.exit(2)
    prompt = sys.stdin.read() if ARGS[-1] == "-" else ARGS[-1]
    log(prompt, instructions=codex_instructions())
    root = opt("-C", "--cd") or os.getcwd()
    thread = str(uuid.uuid4())
    model = opt("-m", "--model") or codex_config().get("model") or os.environ.get("FAKE_CODEX_DEFAULT_MODEL", "gpt-5.5")
    if "--ephemeral" not in ARGS or os.environ.get("FAKE_CODEX_IGNORE_EPHEMERAL") == "1":
        home = codex_home()
        day = datetime.now(timezone.utc)
        path = home / "sessions" / day.strftime("%Y/%m/%d") / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{thread}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            {"timestamp": now_iso(), "type": "session_meta", "payload": {"id": thread, "timestamp": now_iso(), "cwd": root, "originator": "codex_exec", "cli_version": "0.200.0", "source": "exec"}},
            {"timestamp": now_iso(), "type": "turn_context", "payload": {"cwd": root, "model": model}},
            {"timestamp": now_iso(), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}},
        ]
        path.write_text("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines), encoding="utf-8")
    events = [{"type": "thread.started", "thread_id": thread}, {"type": "turn.started"}]
    if MODE == "not_logged_in":
        events.append({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
        print("\n".join(json.dumps(e) for e in events))
        sys.exit(1)
    if MODE == "usage_limit":
        msg = "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 3 hours."
        events += [{"type": "error", "message": msg}, {"type": "turn.failed", "error": {"message": msg}}]
        print("\n".join(json.dumps(e) for e in events))
        sys.exit(1)
    if MODE == "hang":
        time.sleep(3600)
    if opt("--sandbox") == "workspace-write":
        for rel in apply_edits(root):
            events.append({"type": "item.completed", "item": {"id": f"item_{len(events)}", "type": "file_change", "changes": [{"path": rel, "kind": "update"}]}})
        text = "Updated the memory."
    elif MODE == "garbage":
        text = "Sure! Here is what I found in the rollout (not JSON)."
    else:
        schema = opt("--output-schema")
        json.loads(Path(schema).read_text())  # the real CLI refuses a missing or invalid schema file
        text = json.dumps(reply_obj())
    events.append({"type": "item.completed", "item": {"id": "item_final", "type": "agent_message", "text": text}})
    events.append({"type": "turn.completed", "usage": {"input_tokens": len(prompt) // 4, "cached_input_tokens": 0, "output_tokens": len(text) // 4}})
    out = opt("-o", "--output-last-message")
    if out:
        Path(out).write_text(text, encoding="utf-8")
    fire_notify(thread)
    print("\n".join(json.dumps(e) for e in events))
    sys.exit(0)


def claude():
    if ARGS[:1] == ["--version"]:
        print(f"{os.environ.get('FAKE_CLAUDE_VERSION', '2.1.300')} (Claude Code)")
        sys.exit(0)
    if ARGS[:1] == ["--help"]:
        # FAKE_CLAUDE_OLD=1: a Claude Code from before --tools, --strict-mcp-config and --no-session-persistence
        old = os.environ.get("FAKE_CLAUDE_OLD") == "1"
        new = ("--tools ", "--strict", "--no-session", "--safe-mode", "--setting", "--permission-prompts")
        print("\n".join(l for l in CLAUDE_HELP.splitlines() if not (old and any(f in l for f in new))))
        sys.exit(0)
    if ARGS[:1] == ["mcp"] and ARGS[1:2] in (["add-json"], ["remove"]):
        # as the real CLI: user scope in the state file's mcpServers, local scope under projects[<cwd>]
        log("")
        home = os.environ.get("CLAUDE_CONFIG_DIR")
        state = Path(home) / ".claude.json" if home else Path.home() / ".claude.json"
        data = json.loads(state.read_text()) if state.exists() else {}
        scope = opt("-s", "--scope") or "local"
        table = data if scope == "user" else data.setdefault("projects", {}).setdefault(os.getcwd(), {})
        servers = table.setdefault("mcpServers", {})
        name = [a for a in ARGS[2:] if not a.startswith("-") and a != scope][0]
        if ARGS[1] == "remove":
            if name not in servers:
                print(f'No MCP server named "{name}" in {scope} scope', file=sys.stderr)
                sys.exit(1)
            del servers[name]
        else:
            if name in servers:
                print(f"MCP server {name} already exists in {scope} config", file=sys.stderr)
                sys.exit(1)
            servers[name] = json.loads(ARGS[-1])
        state.write_text(json.dumps(data, indent=2))
        sys.exit(0)
    if ARGS[:2] == ["auth", "status"]:
        log("")
        logged = MODE != "not_logged_in"
        print(json.dumps({"loggedIn": logged, "authMethod": "claude.ai" if logged else "none"}))
        sys.exit(0 if logged else 1)
    if "-p" not in ARGS and "--print" not in ARGS:
        print("error: interactive mode is not available here", file=sys.stderr)
        sys.exit(2)
    prompt = sys.stdin.read()
    home = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    claude_md = home / "CLAUDE.md"
    log(prompt, instructions=claude_md.read_text() if claude_md.is_file() and "--safe-mode" not in ARGS else "")
    session = str(uuid.uuid4())
    flag_settings = json.loads(opt("--settings") or "{}")
    try:
        user_settings = json.loads((home / "settings.json").read_text()) if opt("--setting-sources") != "" else {}
    except (OSError, ValueError):
        user_settings = {}
    model = opt("--model") or flag_settings.get("model") or os.environ.get("FAKE_CLAUDE_DEFAULT_MODEL", "claude-sonnet-5")
    project = home / "projects" / "".join(c if c.isalnum() else "-" for c in os.getcwd())
    project.mkdir(parents=True, exist_ok=True)
    transcript = os.devnull if "--no-session-persistence" in ARGS else project / f"{session}.jsonl"
    with open(transcript, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "sessionId": session, "cwd": os.getcwd(), "version": "2.1.300", "isSidechain": False, "timestamp": now_iso(), "message": {"role": "user", "content": prompt}}) + "\n")
        fh.write(json.dumps({"type": "assistant", "sessionId": session, "cwd": os.getcwd(), "isSidechain": False, "timestamp": now_iso(), "message": {"role": "assistant", "model": "claude-sonnet-5", "content": [{"type": "text", "text": "done"}]}}) + "\n")
    base = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200, "duration_api_ms": 1100, "num_turns": 1, "session_id": session, "total_cost_usd": 0.0123, "usage": {"input_tokens": len(prompt) // 4, "output_tokens": 120, "cache_read_input_tokens": 0}, "modelUsage": {model: {"inputTokens": len(prompt) // 4, "outputTokens": 120}, "claude-haiku-4-5": {"inputTokens": 10, "outputTokens": 2}}}
    if not flag_settings.get("disableAllHooks"):
        # "Session" + "End": not spelled whole, since memtui reads the hook events a codex knows from its program
        for group in user_settings.get("hooks", {}).get("Session" + "End", []):
            for h in group.get("hooks", []):
                subprocess.run(h["command"], shell=True, check=False)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "not_logged_in":
        print(json.dumps({**base, "is_error": True, "result": "Invalid API key · Please run /login", "total_cost_usd": 0}))
        sys.exit(1)
    if MODE == "usage_limit":
        print(json.dumps({**base, "is_error": True, "result": "Claude AI usage limit reached|1762952400"}))
        sys.exit(1)
    if MODE == "garbage":
        print("Error: the model said something that is not a result object")
        sys.exit(0)
    if MODE == "prose":  # the model answered in prose, never calling the structured-output tool (real 2.1.328)
        print(json.dumps({**base, "result": "The session fixed a flaky test.", "structured_output": None}))
        sys.exit(0)
    if opt("--permission-mode") == "acceptEdits":
        apply_edits(os.getcwd())
        if os.environ.get("FAKE_CLAUDE_AUTOMEMORY") == "1":
            target = project / "memory" / "notes.md"
            denied = flag_settings.get("permissions", {}).get("deny", [])
            ignore = os.environ.get("FAKE_CLAUDE_IGNORE_DENY") == "1"
            if ignore or not any(r.startswith("Write(/") and str(target).startswith(r[len("Write(/"):-len("/**)")]) for r in denied):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("remembered outside the work copy\n")
        print(json.dumps({**base, "num_turns": 4, "result": "Updated MEMORY.md and memory_summary.md."}))
        sys.exit(0)
    schema = opt("--json-schema")
    json.loads(schema)
    obj = reply_obj()
    print(json.dumps({**base, "result": json.dumps(obj), "structured_output": obj}))
    sys.exit(0)


if __name__ == "__main__":
    (codex if NAME == "codex" else claude)()
"""


def install(bin_dir: Path, codex_hook_events: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write executable ``codex`` and ``claude`` stand-ins into ``bin_dir``; returns their paths.

    ``codex_hook_events``: the hook events this codex's program names (a real codex binary carries the names of the
    events it knows; memtui reads them from it)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in ("codex", "claude"):
        path = bin_dir / name
        known = f"# hook events: {', '.join(codex_hook_events)}\n" if name == "codex" and codex_hook_events else ""
        script = SCRIPT.replace("__STAGE_ONE_REPLY__", repr(json.dumps(STAGE_ONE_REPLY)))
        path.write_text(f"#!{sys.executable}\n{known}{script}", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        out[name] = path
    return out


def path_with(bin_dir: Path, *, only: bool = False) -> str:
    """A PATH with ``bin_dir`` first (``only``: nothing else, plus the interpreter's folder for ``git``...)."""
    if only:
        return os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    return os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
