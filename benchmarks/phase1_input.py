"""Bytes Phase 1 sends per rollout, against the raw rollout: the input built like Codex's own Phase 1 (per-item caps,
the budget filled by tier) against the previous build (every item whole, the whole rollout cut in the middle), in
the same run on the same files.

Two corpora: the synthetic one of ``benchmarks/phase1.py`` (short stack-trace outputs), and real-like sessions
written the way Codex CLI 0.15x and Claude Code 2.1 write them: ``base_instructions`` in ``session_meta``, a
``turn_context`` and ``token_count`` events per turn, encrypted reasoning, tool output both as an item and again in
``exec_command_end`` events, output sizes drawn from a long-tailed distribution (most a few KB, a few hundred KB:
a test log, a ``cat`` of a generated file); Claude Code sessions with thinking blocks, ``Read`` results, progress and
file-history lines. The system prompt is not counted (it is the same for every rollout).

    .venv/bin/python benchmarks/phase1_input.py [--rollouts 60] [--context-window 0]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import tempfile
import uuid
from pathlib import Path

WORDS = ["retry", "budget", "checkout", "timezone", "flaky", "fixture", "import", "config", "module", "deploy"]
WORDS += ["staging", "cache", "index", "parser"]


def _load_phase1_bench():
    spec = importlib.util.spec_from_file_location("bench_phase1", Path(__file__).with_name("phase1.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _output_size(rng: random.Random) -> int:
    """Long-tailed: median about 1.5 KB, one output in ten over 20 KB, the largest a few hundred KB."""
    return min(400_000, int(rng.lognormvariate(7.3, 1.6)))


def _log(rng: random.Random, size: int) -> str:
    lines, total = [], 0
    while total < size:
        line = f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.ts:{rng.randint(1, 900)}  {_prose(rng, 3, 12)}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def codex_real_like(root: Path, i: int, rng: random.Random) -> Path:
    tid = f"019e1a1b-2c3d-7e4f-8a9b-{i:012d}"
    path = root / "sessions" / "2026" / "07" / "11" / f"rollout-2026-07-11T05-00-00-{tid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = "2026-07-11T05:00:00.000Z"
    cwd = "/home/ana/src/shop"
    out: list[dict] = []

    def line(kind: str, payload: dict) -> None:
        out.append({"timestamp": ts, "type": kind, "payload": payload})

    line(
        "session_meta",
        {
            "id": tid,
            "timestamp": ts,
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.152.0",
            "source": "cli",
            "base_instructions": {"text": _prose(rng, 2500, 3000)},
        },
    )
    line(
        "response_item",
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": _prose(rng, 300, 500)}]},
    )
    agents = f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{_prose(rng, 200, 800)}\n</INSTRUCTIONS>"
    env = f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>zsh</shell>\n</environment_context>"
    line(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": agents}, {"type": "input_text", "text": env}],
        },
    )
    for turn in range(rng.randint(3, 10)):
        line(
            "turn_context",
            {
                "turn_id": str(turn),
                "cwd": cwd,
                "model": "gpt-5.5",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write"},
                "summary": "auto",
            },
        )
        prompt = _prose(rng, 8, 80)
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        line("event_msg", {"type": "user_message", "message": prompt, "images": []})
        for c in range(rng.randint(2, 12)):
            line(
                "response_item",
                {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * rng.randint(800, 6000)},
            )
            cid = f"call_{turn}_{c}"
            cmd = rng.choice(
                ["pnpm test", "rg -n retry src", "cat src/generated/schema.ts", "git diff", "sed -n 1,200p src/app.ts"]
            )
            line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": cmd}),
                    "call_id": cid,
                },
            )
            text = _log(rng, _output_size(rng))
            line(
                "event_msg",
                {
                    "type": "exec_command_end",
                    "call_id": cid,
                    "stdout": text,
                    "stderr": "",
                    "aggregated_output": text,
                    "exit_code": 0,
                    "formatted_output": text,
                },
            )
            line(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": cid,
                    "output": f"Chunk ID: {c}\nWall time: 0.4 seconds\nProcess exited with code 0\nOutput:\n{text}",
                },
            )
            line(
                "event_msg",
                {"type": "token_count", "info": {"total_token_usage": {"input_tokens": rng.randint(1000, 90000)}}},
            )
            if rng.random() < 0.3:
                line(
                    "response_item",
                    {
                        "type": "message",
                        "role": "assistant",
                        "phase": "commentary",
                        "content": [{"type": "output_text", "text": _prose(rng, 10, 40)}],
                    },
                )
        answer = _prose(rng, 30, 200)
        line(
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]},
        )
        line("event_msg", {"type": "agent_message", "message": answer})
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in out))
    return path


def claude_real_like(root: Path, i: int, rng: random.Random) -> Path:
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    cwd = "/home/ana/src/docs"
    path = root / "projects" / "-home-ana-src-docs" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    out: list[dict] = []
    parent = None

    def add(kind: str, content, **extra) -> None:
        nonlocal parent
        uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": sid,
                "version": "2.1.39",
                "gitBranch": "main",
                "type": kind,
                "message": {"role": kind, "content": content},
                "uuid": uid,
                "timestamp": "2026-07-11T06:00:00.000Z",
                **extra,
            }
        )
        parent = uid

    for _turn in range(rng.randint(3, 10)):
        add("user", _prose(rng, 8, 80))
        for _ in range(rng.randint(2, 10)):
            tool = f"toolu_{rng.getrandbits(40):x}"
            add(
                "assistant",
                [
                    {"type": "thinking", "thinking": _prose(rng, 50, 400), "signature": "E" * rng.randint(200, 1200)},
                    {
                        "type": "tool_use",
                        "id": tool,
                        "name": "Read",
                        "input": {"file_path": f"{cwd}/src/{rng.choice(WORDS)}.ts"},
                    },
                ],
            )
            out.append(
                {
                    "type": "progress",
                    "parentUuid": parent,
                    "sessionId": sid,
                    "data": {"type": "hook_progress", "hookName": "PostToolUse"},
                    "timestamp": "2026-07-11T06:00:00.000Z",
                }
            )
            text = _log(rng, _output_size(rng))
            add(
                "user",
                [{"type": "tool_result", "tool_use_id": tool, "content": text}],
                toolUseResult={"type": "text", "file": {"content": text}},
            )
        add("assistant", [{"type": "text", "text": _prose(rng, 30, 200)}])
        out.append({"type": "file-history-snapshot", "messageId": parent, "snapshot": {"trackedFileBackups": {}}})
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in out))
    return path


def measure(paths: list[tuple[Path, str]], context_window: int) -> tuple[int, int, int]:
    """(raw bytes, bytes sent by the previous build, bytes sent now)."""
    from memtui.adapters.redact import redact
    from memtui.adapters.sources import read_transcript
    from memtui.core.settings import Settings
    from memtui.domain.render import _render_item, render_items
    from memtui.services.phase1.prompt import (
        build_stage_one_input_message,
        load_prompt,
        render_template,
        truncate_middle,
    )

    settings = Settings(context_window_tokens=context_window) if context_window else Settings()
    from memtui.services.phase1.prompt import rollout_token_budget

    budget = rollout_token_budget(settings)
    raw = old = new = 0
    for path, kind in paths:
        items = read_transcript(path, kind)
        raw += path.stat().st_size
        new += len(
            build_stage_one_input_message(str(path), "/w", redact(render_items(items)).text, settings).message.encode()
        )
        whole = "\n".join(_render_item(item) for item in items)
        cut = truncate_middle(redact(whole).text, budget, settings.bytes_per_token).text
        message = render_template(
            load_prompt("stage_one_input.md"), {"rollout_path": str(path), "rollout_cwd": "/w", "rollout_contents": cut}
        )
        old += len(message.encode())
    return raw, old, new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rollouts", type=int, default=60)
    ap.add_argument("--context-window", type=int, default=0, help="tokens; 0 = the default setting (272,000)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtui-bench-p1input-"))
    bench = _load_phase1_bench()
    rng = random.Random(21)
    corpora = {
        "benchmark corpus (benchmarks/phase1.py)": [
            (bench.write_rollout(tmp / "a", i, rng)[1], "codex") for i in range(args.rollouts)
        ],
        "real-like Codex 0.15x": [(codex_real_like(tmp / "b", i, rng), "codex") for i in range(args.rollouts)],
        "real-like Claude Code 2.1": [(claude_real_like(tmp / "c", i, rng), "claude") for i in range(args.rollouts)],
    }
    worst = 0.0
    for name, paths in corpora.items():
        raw, old, new = measure(paths, args.context_window)
        n = len(paths)
        print(
            f"{name}: {n} rollouts, raw {raw / n / 1024:.1f} KiB each; sent before {old / n / 1024:.1f} KiB "
            f"({100 * old / raw:.1f} % of raw), now {new / n / 1024:.1f} KiB ({100 * new / raw:.1f} % of raw); "
            f"now/before {new / old:.3f}"
        )
        worst = max(worst, new / old)
    print(f"sent now / sent before, worst corpus: {worst:.3f} (must be <= 1)")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
