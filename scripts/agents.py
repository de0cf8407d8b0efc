"""Install, locate and bump the real agent CLIs the conformance tier drives (tests/conformance/agents.json).

    python scripts/agents.py install   # npm install the pinned versions into .agents/ (what .ci/run does)
    python scripts/agents.py bump      # pin the registry's latest versions, then install them
    python scripts/agents.py which     # print where each binary is

The packages come from the npm registry; their native binaries arrive in the platform packages
(``@openai/codex-linux-x64``, ``@anthropic-ai/claude-code-linux-x64``), and Gemini CLI is one JavaScript bundle
(node 20 or later), so install scripts are not needed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "tests" / "conformance" / "agents.json"
PREFIX = ROOT / ".agents"
BINARIES = {"@openai/codex": "codex", "@anthropic-ai/claude-code": "claude", "@google/gemini-cli": "gemini"}


def binary(name: str) -> Path | None:
    """Where the tier runs ``name`` from: Codex and Gemini CLI through their npm wrappers (bin/codex.js,
    bundle/gemini.js on node, as a user's ``codex``/``gemini`` runs), Claude Code as the native binary of its platform package (it needs no node, and with install scripts off
    the wrapper package holds only a stub)."""
    modules = PREFIX / "node_modules"
    if name in ("codex", "gemini"):
        path = modules / ".bin" / name
        return path if path.exists() else None
    for candidate in sorted(modules.glob("@anthropic-ai/claude-code-linux-*/claude")):
        if candidate.is_file():
            return candidate
    return None


def pins() -> dict[str, str]:
    return {name: version for name, version in json.loads(PINS.read_text()).items() if not name.startswith("_")}


def installed(name: str) -> str | None:
    manifest = PREFIX / "node_modules" / name / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.is_file() else None


def install() -> int:
    wanted = pins()
    if all(installed(name) == version for name, version in wanted.items()):
        print("agents: already installed:", ", ".join(f"{n}@{v}" for n, v in wanted.items()))
        return 0
    npm = shutil.which("npm")
    if npm is None:
        print("agents: npm is not on PATH (the conformance tier needs node and npm)", file=sys.stderr)
        return 1
    PREFIX.mkdir(exist_ok=True)
    (PREFIX / "package.json").write_text('{"name": "memtui-conformance-agents", "private": true}\n')
    specs = [f"{name}@{version}" for name, version in wanted.items()]
    cmd = [
        npm,
        "install",
        "--prefix",
        str(PREFIX),
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--save-exact",
        *specs,
    ]
    result = subprocess.run(cmd, check=False)
    if result.returncode:
        return result.returncode
    for name, version in wanted.items():
        if installed(name) != version:
            print(f"agents: {name} did not install at {version}", file=sys.stderr)
            return 1
    print("agents: installed", ", ".join(specs))
    return 0


def bump() -> int:
    npm = shutil.which("npm") or "npm"
    data = json.loads(PINS.read_text())
    for name in pins():
        latest = subprocess.run([npm, "view", name, "version"], capture_output=True, text=True, check=True).stdout
        data[name] = latest.strip()
        print(f"agents: {name} -> {data[name]}")
    PINS.write_text(json.dumps(data, indent=2) + "\n")
    return install()


def which() -> int:
    for name, exe in BINARIES.items():
        path = binary(exe)
        print(f"{exe}: {path or '(not installed)'} {installed(name) or ''}")
    return 0


if __name__ == "__main__":
    verb = sys.argv[1] if len(sys.argv) > 1 else "install"
    sys.exit({"install": install, "bump": bump, "which": which}[verb]())
