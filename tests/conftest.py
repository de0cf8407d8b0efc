"""Every test runs in its own homes: MEMTUI_HOME, CODEX_HOME, CLAUDE_CONFIG_DIR and HOME (and the XDG folders) under
tmp_path.

No test reads the user's real home, and no OpenAI variable leaks in from the environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from memtui.core import clock
from tests.support.chat_server import ChatServer

# CI replays the same hypothesis examples every run, so a landing never hinges on a lucky draw; local runs
# (and benchmarks/soak.py) keep drawing new ones to find what CI would not.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

# A fixed "now" for tests that want one: 2026-07-10T12:00:00Z.
FROZEN_NOW = 1_783_684_800

# Whole tiers marked ``slow``: Textual pilot and snapshot tests (tests/tui) and the kill, race and fuzz trials
# (tests/reliability), and the real-agent conformance tier (tests/conformance: the real codex and claude against
# loopback fakes of their APIs). ``pytest -m "not slow"`` is the day-to-day run; a plain ``pytest`` still runs everything.
SLOW_TIERS = ("tui", "reliability", "conformance")


def in_slow_tier(path: Path) -> bool:
    """Whether ``path`` lies in one of the ``SLOW_TIERS`` folders of tests/."""
    tests = Path(__file__).parent
    return path.is_relative_to(tests) and path.relative_to(tests).parts[:1] in {(tier,) for tier in SLOW_TIERS}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m "not slow"`` does not even import the slow tiers: every test there would be deselected, and collecting
    them (Textual apps, snapshot fixtures, hypothesis) costs every xdist worker seconds of the day-to-day run."""
    if "".join(config.getoption("markexpr", "").split()) == "notslow" and in_slow_tier(collection_path):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects, so the tier's mark counts
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if in_slow_tier(item.path):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    homes = {
        "MEMTUI_HOME": tmp_path / "memtui-home",
        "CODEX_HOME": tmp_path / "codex-home",
        "CLAUDE_CONFIG_DIR": tmp_path / "claude-home",
        "HOME": tmp_path / "user-home",
    }
    for name, path in homes.items():
        path.mkdir(parents=True, exist_ok=True)
        if name == "MEMTUI_HOME":
            path.chmod(0o700)  # as memtui makes it (a looser home is tightened, with a message, on the first run)
        monkeypatch.setenv(name, str(path))
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "MEMTUI_")) and name not in homes:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(homes["HOME"] / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(homes["HOME"] / ".local" / "share"))  # OpenCode's database
    for name in ("GEMINI_CLI_HOME", "OPENCODE_CONFIG", "OPENCODE_DB"):  # other agents' homes: under HOME
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    clock.reset()
    yield homes
    clock.reset()


@pytest.fixture
def frozen_clock() -> Iterator[int]:
    clock.freeze(FROZEN_NOW)
    yield FROZEN_NOW
    clock.reset()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A real Chat Completions server on 127.0.0.1 (random port), scripted per test."""
    with ChatServer() as server:
        yield server


@pytest.fixture
def model_env(chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> ChatServer:
    """Point memtui's settings at the loopback server, as a user would with OPENAI_BASE_URL."""
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback-000000000000")
    monkeypatch.setenv("MEMTUI_PROVIDER", "openai")
    return chat_server


# The reliability suite's one-line-per-area figures (this conftest is the one an xdist controller loads).
from tests.reliability.figures import pytest_terminal_summary  # noqa: E402, F401


def approve_root(root: Path) -> str:
    """Commit the memory root's working tree as the approved baseline, as a person's own commit would: agents read
    only the baseline (``memtui.adapters.memroot.approved``), so a test that writes memory files by hand approves them."""
    from memtui.adapters.memroot import baseline
    from memtui.adapters.memroot.lock import memory_root_lock

    with memory_root_lock(root, "test: approve the files written by hand"):
        return baseline.reset_baseline(root, "test: approved by hand")
