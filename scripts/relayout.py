"""Move memtui's modules into folders that show its layers, and rewrite every reference to them.

    .venv/bin/python scripts/relayout.py            # move (git mv) and rewrite, in place
    .venv/bin/python scripts/relayout.py --check    # exit 1 and list what would move; change nothing

The layers, top to bottom (``[tool.importlinter]`` in pyproject.toml enforces them):

    entry points   memtui.cli, tui, mcp, hooks, demo (and memtui.__main__, memtui.hook_entry)
    services       memtui.services.*   one module or package per use case
    state          memtui.state.*      the tables and their owners
    domain         memtui.domain.*     typed shapes and pure functions
    adapters       memtui.adapters.*   git and the memory root, model backends, transcript readers, redaction
    core           memtui.core.*       settings, paths, clock, private files: used by every layer

``MOVES`` maps an old module or package to its new name; the longest matching prefix wins, so a module someone
added inside a package moves with it. A rule is live only while its old file or folder exists, so a second run
changes nothing. References are rewritten in Python files (imports, with ``as`` when a module's name changes,
and every dotted ``memtui.x.y`` in strings: patch targets, entry points) and in the project's text files (dotted
names and ``memtui/x/y.py`` paths). ``memtui/testing`` and ``memtui/prompts`` stay where they are.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "memtui"

# old module or package -> new module or package (longest old prefix wins)
MOVES: dict[str, str] = {
    # entry points: the faces people and agents use. memtui.hook_entry stays where it is: agents' installed hook
    # commands name it (``python -m memtui.hook_entry``), and a new name would break every installed hook.
    "memtui.mcp_server": "memtui.mcp.server",
    "memtui.mcp_scope": "memtui.mcp.scope",
    "memtui.hooks": "memtui.hooks.install",
    # application services: one per use case
    "memtui.context": "memtui.services.context",
    "memtui.ingest": "memtui.services.ingest",
    "memtui.phase1": "memtui.services.phase1",
    "memtui.phase2": "memtui.services.phase2",
    "memtui.review": "memtui.services.review",
    "memtui.history": "memtui.services.history",
    "memtui.forget": "memtui.services.forget",
    "memtui.state.stores": "memtui.services.stores",
    "memtui.export": "memtui.services.export",  # export.py becomes the package's __init__.py (PACKAGE_INIT)
    "memtui.export_cap": "memtui.services.export.cap",
    "memtui.export_chain": "memtui.services.export.chain",
    "memtui.export_scope": "memtui.services.export.scope",
    "memtui.search": "memtui.services.search",
    "memtui.health": "memtui.services.health",
    "memtui.batch": "memtui.services.batch",
    "memtui.retention": "memtui.services.retention",
    "memtui.citations": "memtui.services.citations",
    "memtui.views": "memtui.services.views",
    "memtui.lint": "memtui.services.lint",
    "memtui.trust.annotate": "memtui.services.phase1.annotate",
    "memtui.trust.enforce": "memtui.services.phase2.enforce",
    # domain: typed shapes and pure functions
    "memtui.trust": "memtui.domain.trust",
    "memtui.scope": "memtui.domain.scope",
    "memtui.labels": "memtui.domain.labels",
    "memtui.phase1.render": "memtui.domain.render",
    "memtui.phase2.stems": "memtui.domain.stems",
    "memtui.citations.model": "memtui.domain.citation",
    # adapters: the outside world
    "memtui.memroot": "memtui.adapters.memroot",
    "memtui.phase2.baseline": "memtui.adapters.memroot.baseline",
    "memtui.llm": "memtui.adapters.llm",
    "memtui.rollouts": "memtui.adapters.rollouts",
    "memtui.redact": "memtui.adapters.redact",
    "memtui.selfcalls": "memtui.adapters.selfcalls",
    # core: what every layer uses
    "memtui.settings": "memtui.core.settings",
    "memtui.paths": "memtui.core.paths",
    "memtui.clock": "memtui.core.clock",
    "memtui.private": "memtui.core.private",
    "memtui.trust.hidden": "memtui.core.hidden",
}
PACKAGE_INIT = {"memtui.export"}  # a module that becomes a package's __init__.py (its siblings move inside it)

LAYER_DOCS = {
    "memtui.services": "Application services: one module or package per use case, called alike by the CLI, the TUI,\n"
    "the MCP server and the hooks.",
    "memtui.domain": "The domain: typed shapes and pure functions over them (no I/O, no SQL, no git, no textual).",
    "memtui.adapters": "Adapters to the outside world: the memory root and its git baseline, model backends, transcript\n"
    "readers, redaction.",
    "memtui.core": "What every layer uses: settings, paths, the clock, private files.",
    "memtui.mcp": "The MCP server agents query, and the scope it confines them to.",
    "memtui.hooks": "The agents' own hooks: installing, checking and removing them (the command they run is\n"
    "``memtui.hook_entry``, stdlib-only and kept at its installed name).",
}

PY_DIRS = ("memtui", "tests", "benchmarks", "scripts")
TEXT_GLOBS = ("pyproject.toml", ".ci/*", "README.md", "docs/**/*.md", "*.md")
SKIP_PARTS = {".venv", ".git", "__pycache__", "node_modules"}
# its own table of old names, and its test's old-layout fixture, are never rewritten
KEEP = frozenset({Path("scripts/relayout.py"), Path("tests/test_relayout.py")})

# Key binding ids share the package's prefix (``memtui.history`` is a key's id in a person's [keymap], not the module):
# the ids the TUI declares are left alone wherever they appear. Filled by ``relayout`` from memtui/tui.
BINDING_ID = re.compile(r"""\bid\s*=\s*["'](memtui\.[\w.]+)["']""")
KEEP_STRINGS: set[str] = set()
CONTRACTS = "[tool.importlinter]"  # pyproject.toml from here on names the new layout: never rewritten

DOTTED = re.compile(r"\bmemtui(?:\.[A-Za-z_]\w*)+")
PATHLIKE = re.compile(r"\bmemtui(?:/[A-Za-z_][\w]*)+(?:\.py)?/?")
# a path inside the package without its ``memtui/`` (``rollouts/user_words.py``); a bare file name is left alone
INNER_PATH = re.compile(r"(?<![\w/.-])(?:[a-z_]\w*/)+[a-z_]\w*\.py\b")


# ---- where things are --------------------------------------------------------------------------------------------


def module_path(module: str, root: Path = ROOT) -> Path | None:
    """The file or package folder of ``module`` as the tree holds it now, or None."""
    base = root.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if base.is_dir():
        return base
    return None


def live_moves(root: Path = ROOT) -> dict[str, str]:
    """The rules whose old module still exists: after a full run there are none, so a rerun is a no-op."""
    return {
        old: new for old, new in MOVES.items() if module_path(old, root) is not None and module_path(new, root) is None
    }


def old_modules(root: Path = ROOT) -> set[str]:
    """Every module and package under memtui/ now (dotted names)."""
    out = {PKG}
    for p in (root / PKG).rglob("*.py"):
        if SKIP_PARTS & set(p.parts):
            continue
        rel = p.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.add(".".join(parts))
        for i in range(1, len(parts)):
            out.add(".".join(parts[:i]))
    return out


def map_module(name: str, moves: dict[str, str]) -> str:
    """``name`` (a module, or a module plus attributes) under the longest matching rule."""
    best = max((old for old in moves if name == old or name.startswith(old + ".")), key=len, default=None)
    return name if best is None else moves[best] + name[len(best) :]


def map_dotted(text: str, moves: dict[str, str], modules: set[str], *, quoted: bool = False) -> str:
    """A dotted reference whose longest existing-module prefix moves (attributes after it are kept). A key
    binding's id is kept only where it stands alone as a quoted string, as ids are written (``quoted``)."""
    if quoted and text in KEEP_STRINGS:
        return text
    parts = text.split(".")
    for i in range(len(parts), 1, -1):
        head = ".".join(parts[:i])
        if head in modules:
            return map_module(head, moves) + ("." + ".".join(parts[i:]) if i < len(parts) else "")
    return text


def new_file_of(old: str, moves: dict[str, str], root: Path = ROOT) -> Path:
    """Where the file of old module ``old`` goes (a package's folder, a module's .py, or a package __init__.py)."""
    new = map_module(old, moves)
    src = module_path(old, root)
    base = root.joinpath(*new.split("."))
    if src is not None and src.is_dir():
        return base
    if old in PACKAGE_INIT:
        return base / "__init__.py"
    return base.with_suffix(".py")


def map_path(text: str, moves: dict[str, str], modules: set[str]) -> str:
    """``memtui/x/y.py`` (or a folder ``memtui/x/``) of a moved module, in its new place."""
    trail = "/" if text.endswith("/") else ""
    body = text.rstrip("/")
    is_py = body.endswith(".py")
    dotted = (body[:-3] if is_py else body).replace("/", ".")
    if dotted.endswith(".__init__"):
        return text
    if dotted not in modules:
        return text
    new = map_module(dotted, moves)
    if new == dotted:
        return text
    if is_py and dotted in PACKAGE_INIT:
        return new.replace(".", "/") + "/__init__.py" + trail
    return new.replace(".", "/") + (".py" if is_py else "") + trail


# ---- rewriting -----------------------------------------------------------------------------------------------------


def _format_from(indent: str, module: str, names: list[str], width: int = 110) -> str:
    one = f"{indent}from {module} import {', '.join(names)}\n"
    if len(one) <= width:
        return one
    inner = "".join(f"{indent}    {n},\n" for n in names)
    return f"{indent}from {module} import (\n{inner}{indent})\n"


def _rewrite_import(node: ast.Import | ast.ImportFrom, indent: str, moves: dict[str, str], modules: set[str]) -> str:
    if isinstance(node, ast.Import):
        lines = []
        for a in node.names:
            new = map_module(a.name, moves) if a.name in modules else a.name
            if a.asname is None and new != a.name:
                lines.append(f"{indent}import {new}\n")  # dotted uses of it are rewritten with the text
            else:
                lines.append(f"{indent}import {new}" + (f" as {a.asname}" if a.asname else "") + "\n")
        return "".join(lines)
    assert node.module is not None
    groups: dict[str, list[str]] = {}
    for a in node.names:
        full = f"{node.module}.{a.name}"
        if full in modules:  # a submodule: it may move on its own
            new_full = map_module(full, moves)
            parent, base = new_full.rsplit(".", 1)
            alias = a.asname or (a.name if base != a.name else None)
            groups.setdefault(parent, []).append(base + (f" as {alias}" if alias else ""))
        else:
            parent = map_module(node.module, moves)
            groups.setdefault(parent, []).append(a.name + (f" as {a.asname}" if a.asname else ""))
    return "".join(_format_from(indent, mod, names) for mod, names in groups.items())


def rewrite_python(src: str, moves: dict[str, str], modules: set[str]) -> str:
    """Imports of moved modules rewritten (split by destination), then every dotted and path reference elsewhere."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return rewrite_text(src, moves, modules)
    lines = src.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        touches = False
        if isinstance(node, ast.Import):
            touches = any(a.name in modules and map_module(a.name, moves) != a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith(PKG):
            touches = map_module(node.module, moves) != node.module or any(
                map_module(f"{node.module}.{a.name}", moves) != f"{node.module}.{a.name}" for a in node.names
            )
        if not touches:
            continue
        assert isinstance(node, ast.Import | ast.ImportFrom)
        first = lines[node.lineno - 1]
        if first[: node.col_offset].strip():  # `if x: import y` on one line: leave it to the text pass
            continue
        indent = first[: node.col_offset]
        text = _rewrite_import(node, indent, moves, modules)
        tail = lines[node.end_lineno - 1][node.end_col_offset :] if node.end_lineno else "\n"
        if tail.strip() and not tail.strip().startswith("#"):
            continue  # `import x; y()`: leave it to the text pass
        if tail.strip().startswith("#"):
            text = text.rstrip("\n") + "  " + tail.strip() + "\n"
        edits.append((node.lineno, node.end_lineno or node.lineno, text))
    taken: set[int] = set()
    for a, b, _ in edits:
        taken.update(range(a - 1, b))
    out = [line if i in taken else rewrite_text(line, moves, modules) for i, line in enumerate(lines)]
    for a, b, text in sorted(edits, reverse=True):
        out[a - 1 : b] = [text] + [""] * (b - a)
    return "".join(out)


IMPORT_LINE = re.compile(
    r"^([ \t]*)((?:from[ \t]+memtui[\w.]*[ \t]+import[ \t]+[\w ,]+)|(?:import[ \t]+memtui[\w. ,]*))[ \t]*$", re.M
)


def _import_in_text(m: re.Match[str], moves: dict[str, str], modules: set[str]) -> str:
    """An import written inside a string (code a test runs in a subprocess): split like a real one."""
    try:
        node = ast.parse(m.group(2)).body[0]
    except (SyntaxError, IndexError):
        return m.group(0)
    if not isinstance(node, ast.Import | ast.ImportFrom):
        return m.group(0)
    return _rewrite_import(node, m.group(1), moves, modules).rstrip("\n")


def rewrite_text(text: str, moves: dict[str, str], modules: set[str]) -> str:
    """Line by line: an import line is rewritten as an import (and only so), any other line by its dotted names
    and paths."""
    return "".join(_rewrite_line(line, moves, modules) for line in text.splitlines(keepends=True))


def _rewrite_line(line: str, moves: dict[str, str], modules: set[str]) -> str:
    body = line.rstrip("\r\n")
    end = line[len(body) :]
    if m := IMPORT_LINE.fullmatch(body):
        return _import_in_text(m, moves, modules) + end
    body = DOTTED.sub(lambda m: map_dotted(m.group(0), moves, modules, quoted=_stands_alone(body, m)), body)
    body = PATHLIKE.sub(lambda m: map_path(m.group(0), moves, modules), body)
    return INNER_PATH.sub(lambda m: _map_inner(m.group(0), moves, modules), body) + end


def _stands_alone(body: str, m: re.Match[str]) -> bool:
    """Whether the match is a whole quoted string (``"x"``, ``'x'``, a markdown `x`): how a key binding's id is
    written. A module is named otherwise too: in code, under a glob (``x.*``), in a docstring's double backticks."""
    before, after = body[m.start() - 1 : m.start()], body[m.end() : m.end() + 1]
    if not before or before != after or before not in "\"'`":
        return False
    return body[m.start() - 2 : m.start()] != "``"


def _map_inner(text: str, moves: dict[str, str], modules: set[str]) -> str:
    new = map_path(f"{PKG}/{text}", moves, modules)
    return new[len(PKG) + 1 :] if new.startswith(f"{PKG}/") else text


def project_files(root: Path = ROOT) -> Iterable[tuple[Path, bool]]:
    """(file, is_python) for every file whose references are rewritten."""
    seen: set[Path] = set()
    for d in PY_DIRS:
        for p in sorted((root / d).rglob("*.py")):
            rel = p.relative_to(root)
            if not (SKIP_PARTS & set(rel.parts)) and rel not in KEEP and p not in seen:
                seen.add(p)
                yield p, True
    for pattern in TEXT_GLOBS:
        for p in sorted(root.glob(pattern)):
            if p.is_file() and not (SKIP_PARTS & set(p.relative_to(root).parts)) and p not in seen:
                seen.add(p)
                yield p, False


# ---- moving --------------------------------------------------------------------------------------------------------


def _tracked(path: Path, root: Path) -> bool:
    rel = path.relative_to(root)
    out = subprocess.run(["git", "ls-files", "--error-unmatch", str(rel)], cwd=root, capture_output=True)
    return out.returncode == 0


def _move(src: Path, dst: Path, root: Path) -> None:
    """git mv, merging into a destination folder that already exists (a module moved into it first)."""
    if src.is_dir() and dst.is_dir():
        for child in sorted(src.iterdir()):
            if child.name == "__pycache__":
                shutil.rmtree(child)
                continue
            _move(child, dst / child.name, root)
        src.rmdir()
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.rmtree(src / "__pycache__", ignore_errors=True)
    if src.is_file() and not _tracked(src, root):
        src.rename(dst)
        return
    subprocess.run(["git", "mv", str(src.relative_to(root)), str(dst.relative_to(root))], cwd=root, check=True)


def _ensure_packages(root: Path, moves: dict[str, str]) -> list[Path]:
    """An ``__init__.py`` (with a docstring saying what the layer holds) in every new folder on the way."""
    made = []
    for new in sorted(set(moves.values())):
        parts = new.split(".")
        for i in range(2, len(parts)):
            pkg = ".".join(parts[:i])
            init = root.joinpath(*parts[:i], "__init__.py")
            if not init.exists():
                init.parent.mkdir(parents=True, exist_ok=True)
                doc = LAYER_DOCS.get(pkg, f"{pkg.rsplit('.', 1)[-1]}.")
                init.write_text(f'"""{doc}"""\n')
                subprocess.run(["git", "add", str(init.relative_to(root))], cwd=root, check=True)
                made.append(init)
    return made


def relayout(root: Path = ROOT, *, check: bool = False) -> list[str]:
    """Apply the moves; returns what moved (``old -> new``). With ``check``, only says what would move."""
    moves = live_moves(root)
    if not moves:
        return []
    plan = [(old, module_path(old, root), new_file_of(old, moves, root)) for old in moves]
    report = [f"{old} -> {moves[old]}" for old in moves]
    if check:
        return report
    modules = old_modules(root)
    KEEP_STRINGS.clear()
    for p in (root / PKG / "tui").rglob("*.py"):
        KEEP_STRINGS.update(BINDING_ID.findall(p.read_text(encoding="utf-8")))
    for p, is_py in list(project_files(root)):
        src = p.read_text(encoding="utf-8")
        head, contracts = src, ""
        if p.name == "pyproject.toml" and CONTRACTS in src:  # written for the new layout already
            head, contracts = src[: src.index(CONTRACTS)], src[src.index(CONTRACTS) :]
        new = (rewrite_python(head, moves, modules) if is_py else rewrite_text(head, moves, modules)) + contracts
        if new != src:
            p.write_text(new, encoding="utf-8")
    # the most specific first: a module moved out of a package before the package itself moves
    for old, src, dst in sorted(plan, key=lambda t: -len(t[0])):
        assert src is not None
        if src.is_file() and old in PACKAGE_INIT:
            dst.parent.mkdir(parents=True, exist_ok=True)
        _move(src, dst, root)
    _ensure_packages(root, moves)
    _tidy(root)
    return report


def _tidy(root: Path) -> None:
    """Imports split by the rewrite go back into ruff's order; ruff from the checkout's venv when there is one."""
    ruff = root / ".venv" / "bin" / "ruff"
    cmd = str(ruff) if ruff.exists() else shutil.which("ruff")
    if cmd is None:
        print("relayout: ruff not found; run `ruff check --select I --fix` and `ruff format` yourself", file=sys.stderr)
        return
    dirs = [d for d in PY_DIRS if (root / d).is_dir()]
    subprocess.run([cmd, "check", "-q", "--select", "I", "--fix", *dirs], cwd=root, check=False)
    subprocess.run([cmd, "format", "-q", *dirs], cwd=root, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list what would move; exit 1 when something would")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to relayout (default: this one)")
    args = parser.parse_args(argv)
    done = relayout(args.root.resolve(), check=args.check)
    for line in done:
        print(("would move " if args.check else "moved ") + line)
    if not done:
        print("relayout: the layout is already the layered one")
    return 1 if (args.check and done) else 0


if __name__ == "__main__":
    sys.exit(main())
