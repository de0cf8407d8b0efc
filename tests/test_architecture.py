"""Design invariants that a test can check by reading the code."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memtui"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_domain_code_never_imports_textual():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "tui":
            continue
        bad = {name for name in _imports(path) if name == "textual" or name.startswith(("textual.", "rich."))}
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert offenders == []


def test_time_comes_from_the_clock_module():
    """Domain code asks memtui.core.clock for the time, so tests and snapshots can freeze it."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("tui", "testing") or rel.name == "clock.py":
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ("time.time()", "datetime.now(", "datetime.utcnow("):
            if needle in text:
                offenders.append(f"{rel}: {needle}")
    assert offenders == []
