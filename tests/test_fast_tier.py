"""The day-to-day run (``pytest -m "not slow"``) leaves out whole slow tiers, and a plain run keeps every test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import in_slow_tier

TESTS = Path(__file__).parent


def test_every_test_of_a_slow_tier_is_marked_slow(request: pytest.FixtureRequest) -> None:
    """Holds in any run: a new file in tests/tui or tests/reliability is slow without remembering a decorator."""
    tiered = [item for item in request.session.items if in_slow_tier(item.path)]
    assert all(item.get_closest_marker("slow") for item in tiered)
    assert request.node.get_closest_marker("slow") is None  # this test is itself in the fast tier


@pytest.mark.slow
def test_not_slow_selects_no_tier_test_and_the_plain_run_selects_them_all() -> None:
    files = ["tests/tui/test_layout.py", "tests/reliability/test_fuzz.py", "tests/test_fast_tier.py"]

    def collected(*args: str) -> set[str]:
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args, *files],
            capture_output=True,
            text=True,
            check=True,
            cwd=TESTS.parent,
        ).stdout
        return {line.split("::")[0] for line in out.splitlines() if "::" in line}

    every, fast = collected(), collected("-m", "not slow")
    assert every == set(files)
    assert fast == {"tests/test_fast_tier.py"}
