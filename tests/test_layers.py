"""The layers the folders show, enforced: import-linter's contracts (``[tool.importlinter]`` in pyproject.toml) and
grimp's import graph (no import circle outside the TUI's App and its screens, no import inside a function that hides
one).

The contracts are written for the layered layout ``scripts/relayout.py`` makes (``memtui/services``, ``domain``,
``adapters``, ``core``); before it is applied they name packages that do not exist yet, so those tests skip and say
why. The circle tests hold in either layout.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memtui"


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package found first on the path from ``cwd`` (its own copy of memtui)."""
    exe = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(exe), "--config", str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def circles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """Every set of modules that import each other in a ring (strongly connected components of two or more)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        # iterative Tarjan: the package's graph is deep enough to strain recursion
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                ring = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    ring.add(member)
                    if member == node:
                        break
                if len(ring) > 1:
                    found.append(frozenset(ring))
    return found


def _in_tui(module: str) -> bool:
    return module == "memtui.tui" or module.startswith("memtui.tui.")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _function_level_imports(path: Path) -> Iterable[tuple[int, list[str]]]:
    """(line, modules it may name) of every ``import memtui...`` inside a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("memtui"):
                assert node.module is not None
                yield node.lineno, [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("memtui")]
                if names:
                    yield node.lineno, names


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("memtui", cache_dir=None)


# ---- the contracts ---------------------------------------------------------------------------------------------


def test_the_layer_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_or_textual_below_the_tui_breaks_the_contracts(tmp_path):
    """The contracts can fail: a copy of the package with a core module importing a service, and a domain module
    importing textual, is refused, and each offending import is named."""
    shutil.copytree(PACKAGE, tmp_path / "memtui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "memtui" / "core" / "upward.py").write_text('"""Reaches up."""\n\nfrom memtui.services import forget\n')
    (tmp_path / "memtui" / "domain" / "drawn.py").write_text('"""Draws itself."""\n\nimport textual\n')
    result = _lint_imports(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "memtui.core.upward -> memtui.services.forget" in out
    assert "memtui.domain.drawn -> textual" in out
    assert "2 broken" in out


def test_every_module_lives_in_a_layer():
    """Nothing new appears loose at the top: a module goes into the layer it belongs to (or the contracts cannot see
    it)."""
    allowed = {"__init__", "__main__", "hook_entry", "cli", "tui", "mcp", "hooks", "demo", "services", "state"}
    allowed |= {"domain", "adapters", "core", "prompts"}
    loose = sorted(p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert [name for name in loose if name not in allowed and not name.endswith((".typed", ".md"))] == []


# ---- circles -------------------------------------------------------------------------------------------------------


def test_the_circle_finder_finds_a_fabricated_circle():
    fabricated = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.e", "p.e")]:
        fabricated.add_import(importer=importer, imported=imported)
    assert circles(fabricated) == [frozenset({"p.a", "p.b", "p.c"})]


def test_no_import_circle_outside_the_tui(graph):
    """The TUI's App and its screens may know each other; nothing else imports in a ring."""
    rings = [ring for ring in circles(graph) if not all(_in_tui(m) for m in ring)]
    assert [sorted(ring) for ring in rings] == []


def test_no_import_inside_a_function_hides_a_circle(graph):
    """An import moved into a function still makes a circle when what it imports leads back to the importer; only
    the TUI's App/screen pair may do that."""
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_of(path)
        if _in_tui(importer) or importer not in graph.modules:
            continue
        for line, names in _function_level_imports(path):
            for name in names:
                if name == importer or name not in graph.modules:
                    continue
                if graph.chain_exists(importer=name, imported=importer):
                    hidden.append(f"{path.relative_to(ROOT)}:{line} imports {name}, which leads back")
    assert hidden == []
