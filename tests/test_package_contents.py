"""The wheel ships ``memtui`` alone: no module of it may import the test support (``tests.support``: the loopback
servers and fake agent CLIs), or an installed memtui would fail where the checkout works."""

from __future__ import annotations

import ast
from pathlib import Path

import memtui

PACKAGE = Path(memtui.__file__).parent


def test_no_memtui_module_imports_the_tests() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] == "tests"]
    assert offenders == []
    assert not (PACKAGE / "testing").exists()
