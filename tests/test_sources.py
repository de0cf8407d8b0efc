"""The transcript-source seam: every registered source has every part of the protocol, a source lacking one is
refused, and a fifth agent needs only its own package (found by the registry) to be ingested, read and judged."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from memtui.adapters import sources
from memtui.adapters.sources import protocol, read_transcript, registry
from memtui.adapters.sources.protocol import PARTS, missing_parts
from memtui.core.paths import resolve_paths
from memtui.services.context import open_context
from memtui.services.ingest import run_ingest
from memtui.services.phase1.eligibility import select_candidates
from memtui.state.threads import get_thread


def test_every_registered_source_has_every_part():
    found = registry.sources()
    assert {"codex", "claude"} <= {s.kind for s in found}
    paths = resolve_paths()
    for source in found:
        assert missing_parts(source) == [], source.kind
        assert isinstance(source.instructions(paths), protocol.Instructions)
        target = source.mcp(paths)
        assert isinstance(target, protocol.McpTarget) and target.style in ("toml", "json", "agent_cli")
        entry = target.entry(protocol.ServerCommand("python", ["-m", "memtui", "mcp"], {"MEMTUI_HOME": "/h"}))
        assert "/h" in repr(entry)  # the home it serves reaches the agent's entry, whatever its shape
        hooks = source.hooks(paths)
        assert hooks is None or isinstance(hooks, protocol.HookTarget)
        assert isinstance(source.roots(paths), list)
        assert list(source.discover(paths)) == []  # the isolated homes hold no session


class _Copy:
    """A registered source's parts, copied onto a fresh object (so one can be left out)."""

    def __init__(self, of: object, without: str) -> None:
        for name in PARTS:
            if name != without:
                setattr(self, name, getattr(of, name))


@pytest.mark.parametrize("part", PARTS)
def test_a_source_lacking_any_part_is_refused(part):
    incomplete = _Copy(registry.source("codex"), without=part)
    with pytest.raises(registry.IncompleteSource, match=part), registry.registered(incomplete):
        pass
    assert missing_parts(_Copy(registry.source("codex"), without="")) == []


def test_an_unknown_kind_is_a_clear_error():
    with pytest.raises(registry.UnknownSource, match="no transcript source reads 'nosuch'"):
        registry.source("nosuch")


# A fifth agent, as a contributor would add it: one package under the sources folder, nothing else. Its sessions are
# ``<home>/notes/<project>/<id>.notes`` files of ``you: ...`` / ``agent: ...`` lines; ``#off`` is its opt-out.
FIFTH = '''
"""A scratch agent: ``~/.notes-agent/<id>.notes``."""

from __future__ import annotations

import os
from pathlib import Path

from memtui.adapters.rollouts.discover import Found
from memtui.adapters.rollouts.model import FileResult, Thread
from memtui.adapters.sources.protocol import Instructions, McpTarget, SimpleRun


def _root() -> Path:
    return Path(os.environ["HOME"]) / ".notes-agent"


def _index(found, data, now):
    result = FileResult(path=found.path, source_kind="notes", size=found.size, mtime_ns=found.mtime_ns)
    lines = data.decode().splitlines()
    said = [line[5:] for line in lines if line.startswith("you: ")]
    result.thread = Thread(
        id="notes-" + Path(found.path).stem, source_kind="notes", path=found.path, cwd=lines[0],
        session_source="cli", memory_mode="disabled" if "#off" in lines else "enabled",
        updated_at=found.mtime_ns // 1_000_000_000, preview=said[0] if said else "", ingested_at=now,
    )
    return result


class NotesSource:
    kind = "notes"
    label = "Notes agent"

    def discover(self, paths):
        for path in sorted(_root().glob("*.notes")):
            st = path.stat()
            yield Found(str(path), "notes", st.st_size, st.st_mtime_ns, False)

    def roots(self, paths):
        return [_root()] if _root().is_dir() else []

    def load(self, path):
        return path.read_bytes(), None

    def begin(self, paths, found):
        return SimpleRun(_index)

    def items(self, path, data):
        out = []
        for line in data.decode().splitlines():
            role, _, text = line.partition(": ")
            if role in ("you", "agent"):
                kind = "input_text" if role == "you" else "output_text"
                role = "user" if role == "you" else "assistant"
                out.append({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})
        return out

    def memory_off(self, path, data, thread_id):
        return b"#off" in data

    def instructions(self, paths):
        return Instructions(user=_root() / "NOTES.md", project="NOTES.md")

    def mcp(self, paths):
        return McpTarget(_root() / "config.json", "json", ("servers",), lambda s: {"run": [s.command, *s.args]})

    def hooks(self, paths):
        return None


SOURCE = NotesSource()
'''


@pytest.fixture
def fifth(tmp_path, monkeypatch):
    """The scratch package, put where the registry looks (a second folder of the sources package)."""
    folder = tmp_path / "scratch-sources"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "__init__.py").write_text(textwrap.dedent(FIFTH))
    monkeypatch.setattr(sources, "__path__", [*sources.__path__, str(folder)])
    monkeypatch.setattr(registry, "_SOURCES", None)
    yield registry.source("notes")
    sys.modules.pop("memtui.adapters.sources.notes", None)


def test_a_fifth_source_needs_only_its_own_package(fifth, isolated_env):
    root = isolated_env["HOME"] / ".notes-agent"
    root.mkdir()
    (root / "a.notes").write_text("/work/proj\nyou: I prefer tabs\nagent: noted\n")
    (root / "b.notes").write_text("/work/proj\n#off\nyou: keep this out\n")
    ctx = open_context()
    summary = run_ingest(ctx)
    assert summary.new == 2 and summary.by_source == {"notes": 2}
    thread = get_thread(ctx.conn, "notes-a")
    assert thread is not None and thread.source_kind == "notes" and thread.preview == "I prefer tabs"
    assert read_transcript(Path(thread.path), "notes").user_texts() == ["I prefer tabs"]
    candidates, skipped = select_candidates(ctx.conn, ctx.settings, all_threads=True)
    assert [c.thread_id for c in candidates] == ["notes-a"] and skipped == {"memory_disabled": 1}
    assert registry.label("notes") == "Notes agent"


def test_a_package_whose_source_lacks_a_part_stops_the_registry(tmp_path, monkeypatch):
    folder = tmp_path / "scratch-sources"
    (folder / "broken").mkdir(parents=True)
    (folder / "broken" / "__init__.py").write_text(
        "class S:\n    kind = 'broken'\n    label = 'Broken'\n\nSOURCE = S()\n"
    )
    monkeypatch.setattr(sources, "__path__", [*sources.__path__, str(folder)])
    monkeypatch.setattr(registry, "_SOURCES", None)
    try:
        with pytest.raises(registry.IncompleteSource, match="broken: the transcript source lacks discover, roots"):
            registry.sources()
    finally:
        sys.modules.pop("memtui.adapters.sources.broken", None)
