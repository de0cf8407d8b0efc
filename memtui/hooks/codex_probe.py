"""What the installed codex can do, read from the program itself, whatever the install method.

``codex`` on PATH may be the native program (a standalone or Homebrew-style install, often behind symlinks) or the
npm launcher ``@openai/codex/bin/codex.js``, whose native program sits in a platform package
(``@openai/codex-linux-x64/vendor/<triple>/bin/codex``) that node resolves from the launcher's folder upwards: a
sibling in a local install, nested under ``@openai/codex/node_modules`` in a global one, a pnpm store link, or (older
releases) ``@openai/codex/vendor``. ``find_codex`` resolves all of these to the native program.

The hook events come from the program's own protocol schema (``codex app-server generate-json-schema``, the
``HookEventName`` enum); a program that cannot answer is searched for the event's name instead. Codex runs a hook
only once a person trusted it (its TUI records ``[hooks.state."<key>"] trusted_hash`` in config.toml; ``codex exec``
skips an untrusted hook without a word), so ``hook_trust`` asks the program's app-server (``hooks/list``) which hooks
it would run.
"""

from __future__ import annotations

import functools
import json
import mmap
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NPM_SCOPE = "@openai"
NPM_PACKAGE = "codex"
SESSION_END = "SessionEnd"  # the event as hooks.json names it; the protocol schema spells it sessionEnd
ASK_TIMEOUT = 60.0  # a cold start of a 300 MB program on a busy machine; an answer normally takes well under 1 s
# The first bytes of native executables: ELF, Mach-O (32/64, both byte orders, universal), PE.
NATIVE_MAGIC = (
    b"\x7fELF",
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xfe\xed\xfa\xce",
    b"\xca\xfe\xba\xbe",
    b"MZ",
)


@dataclass(frozen=True)
class CodexProgram:
    on_path: Path  # what PATH names
    launcher: Path  # the same after symlinks
    native: Path | None  # the native program it runs (None: a launcher whose program was not found)


@dataclass(frozen=True)
class HookTrust:
    key: str  # Codex's key for the hook: <hooks file>:<event>:<group>:<handler>
    status: str  # trusted, untrusted, modified or managed
    current_hash: str


def _is_native(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return head.startswith(NATIVE_MAGIC)


def _target_triples() -> tuple[str, ...]:
    """The vendor folder names the npm launcher picks for this machine (its own table), best first."""
    machine = platform.machine().lower()
    arch = "aarch64" if machine in ("arm64", "aarch64") else "x86_64"
    if sys.platform == "darwin":
        return (f"{arch}-apple-darwin",)
    if sys.platform == "win32":
        return (f"{arch}-pc-windows-msvc",)
    return (f"{arch}-unknown-linux-musl", f"{arch}-unknown-linux-gnu")


def _vendor_binaries(vendor: Path) -> list[Path]:
    names = ("codex.exe", "codex") if sys.platform == "win32" else ("codex",)
    found = [vendor / triple / "bin" / name for triple in _target_triples() for name in names]
    found += sorted(p for name in names for p in vendor.glob(f"*/bin/{name}"))  # another triple, last
    return [p for p in dict.fromkeys(found) if p.is_file()]


def _npm_package_root(launcher: Path) -> Path | None:
    """``.../@openai/codex`` when ``launcher`` is that package's ``bin`` script."""
    root = launcher.parent.parent
    try:
        meta = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return root if isinstance(meta, dict) and meta.get("name") == f"{NPM_SCOPE}/{NPM_PACKAGE}" else None


def _npm_native(root: Path) -> Path | None:
    """The platform package's program, found as node's ``require.resolve`` finds it from the package, then the
    package's own ``vendor`` folder (the launcher's fallback)."""
    for folder in (root, *root.parents):
        modules = folder if folder.name == "node_modules" else folder / "node_modules"
        scope = modules / NPM_SCOPE
        if not scope.is_dir():
            continue
        for package in sorted(scope.glob(f"{NPM_PACKAGE}-*")):
            found = _vendor_binaries(package / "vendor")
            if found:
                return found[0]
    found = _vendor_binaries(root / "vendor")
    return found[0] if found else None


def _script_target(script: Path) -> Path | None:
    """A shell wrapper (``exec /opt/codex/bin/codex "$@"``): the native program it names by absolute path."""
    try:
        text = script.read_text(encoding="utf-8", errors="replace")[:64_000]
    except OSError:
        return None
    for match in re.finditer(r"(/[^\s\"'`;|&()]*codex[^\s\"'`;|&()/]*)", text):
        candidate = Path(match.group(1))
        if candidate.is_file() and _is_native(candidate):
            return Path(os.path.realpath(candidate))
    return None


def find_codex(command: str = "codex") -> CodexProgram | None:
    """The codex PATH runs, down to its native program."""
    exe = shutil.which(command)
    if exe is None:
        return None
    launcher = Path(os.path.realpath(exe))
    if _is_native(launcher):
        native: Path | None = launcher
    else:
        root = _npm_package_root(launcher)
        native = _npm_native(root) if root is not None else _script_target(launcher)
    return CodexProgram(on_path=Path(exe), launcher=launcher, native=native)


def _enum_in(obj: Any, name: str) -> list[str] | None:
    """The values of the schema definition ``name`` anywhere in a JSON schema document."""
    if isinstance(obj, dict):
        for key in ("definitions", "$defs"):
            defs = obj.get(key)
            if isinstance(defs, dict) and isinstance(defs.get(name), dict):
                values = defs[name].get("enum")
                if isinstance(values, list):
                    return [str(v) for v in values]
        for value in obj.values():
            found = _enum_in(value, name)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for value in obj:
            found = _enum_in(value, name)
            if found is not None:
                return found
    return None


def _run(program: CodexProgram) -> Path:
    """What to run: the native program itself (no node start-up) when it was found, else what PATH names."""
    return program.native or program.on_path


def schema_hook_events(program: CodexProgram) -> frozenset[str] | None:
    """The hook events the program's own protocol schema lists, lower-cased; None when it cannot say."""
    with tempfile.TemporaryDirectory(prefix="memtui-codex-schema-") as out:
        try:
            done = subprocess.run(
                [str(_run(program)), "app-server", "generate-json-schema", "--out", out],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=ASK_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        for path in sorted(Path(out).rglob("*.json")):
            try:
                values = _enum_in(json.loads(path.read_text(encoding="utf-8")), "HookEventName")
            except (OSError, ValueError):
                continue
            if values is not None:
                return frozenset(v.lower() for v in values)
    return None


def _names_event(path: Path, event: str) -> bool:
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(event.encode()) >= 0
    except (OSError, ValueError):
        return False


@functools.lru_cache(maxsize=8)
def _knows(run: str, size: int, mtime_ns: int, launcher: str) -> bool:
    program = CodexProgram(on_path=Path(run), launcher=Path(launcher), native=Path(run))
    events = schema_hook_events(program)
    if events is not None:
        return SESSION_END.lower() in events
    return _names_event(Path(run), SESSION_END) or (launcher != run and _names_event(Path(launcher), SESSION_END))


def knows_session_end(program: CodexProgram | None) -> bool:
    """Whether this codex has the ``SessionEnd`` hook event (asked once per program and version in a process)."""
    if program is None:
        return False
    run = _run(program)
    try:
        st = run.stat()
    except OSError:
        return False
    return _knows(str(run), st.st_size, st.st_mtime_ns, str(program.launcher))


def _reader(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def hook_trust(program: CodexProgram, codex_home: Path, cwd: Path, command: str) -> HookTrust | None:
    """Codex's trust state for the hook whose command is ``command``, from its app-server's ``hooks/list``; None
    when the program could not say (or does not list that hook)."""
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    try:
        proc = subprocess.Popen(
            [str(_run(program)), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            text=True,
        )
    except OSError:
        return None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + ASK_TIMEOUT

    def call(request_id: int, method: str, params: dict[str, Any]) -> Any:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                raise EOFError
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                return message.get("result")

    try:
        call(1, "initialize", {"clientInfo": {"name": "memtui", "version": "1"}})
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        proc.stdin.flush()
        listed = call(2, "hooks/list", {"cwds": [str(cwd)]})
    except (OSError, EOFError, queue.Empty):
        return None
    finally:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
    for entry in (listed or {}).get("data", []) if isinstance(listed, dict) else []:
        for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
            if isinstance(hook, dict) and hook.get("command") == command:
                return HookTrust(
                    key=str(hook.get("key", "")),
                    status=str(hook.get("trustStatus", "")),
                    current_hash=str(hook.get("currentHash", "")),
                )
    return None
