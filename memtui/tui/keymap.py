"""The binding ids a ``[keymap]`` table may name, read off the bindings themselves, and the unknown ones."""

from __future__ import annotations

import difflib
import importlib
import pkgutil


def known_binding_ids() -> set[str]:
    """Every binding id of the app, its screens and widgets (the ones the help screen lists)."""
    from textual.binding import Binding
    from textual.dom import DOMNode

    import memtui.tui.screens
    import memtui.tui.widgets
    from memtui.tui.app import MemtuiApp

    for package in (memtui.tui.screens, memtui.tui.widgets):
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
    ids: set[str] = set()
    todo: list[type] = [DOMNode, MemtuiApp]
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("memtui."):
            ids.update(b.id for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding) and b.id)
    return ids


def keymap_warnings(keymap: dict[str, str], where: str) -> list[str]:
    """One line per id in ``keymap`` that no binding has (it would be ignored without a word)."""
    if not keymap:
        return []
    known = known_binding_ids()
    out = []
    for name in sorted(set(keymap) - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "; f1 in memtui lists the binding ids"
        out.append(f"unknown keymap id {name!r} in {where} is ignored{hint}")
    return out
