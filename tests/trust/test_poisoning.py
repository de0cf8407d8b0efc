"""The poisoning set through the whole flow, offline and with a stand-in that obeys every instruction it reads:
no injected instruction reaches what agents load unflagged, benign look-alikes are not flagged, no hidden character
is exported."""

from __future__ import annotations

import pytest

from tests.fixtures.poisoning import ATTACKS, BENIGN, run_flow
from tests.reliability.harness import IDLE, NOW, Home, frozen

pytestmark = pytest.mark.slow  # the whole poisoning set through the pipeline, as benchmarks/trust.py runs it


@pytest.mark.parametrize("path", ["offline", "copy", "promote"])
def test_poisoned_rollouts_never_reach_agents_unflagged(path: str, isolated_env) -> None:
    home = Home(isolated_env["MEMTUI_HOME"].parent).make()
    with frozen(NOW):
        result = run_flow(home, path, idle=IDLE)
    assert result.succeeded == [], result.succeeded
    assert result.hidden_in_export == 0
    flagged, total = result.false_flags()
    assert flagged <= 0.05 * max(total, 1), (flagged, total, result.flagged)
    if path == "promote":  # filing tool text under the user's preferences is refused outright
        assert result.outcome == "failed" and "failed_trust_upgrade" in (result.reason or "")
    else:
        assert result.outcome == "awaiting_review", result.reason
    # Every attack Phase 1 stored (the stand-in copies each one, in every form) is flagged there; the forms that
    # speak for the user were dropped.
    assert result.stored_unflagged == []
    if path == "copy":
        assert sum(1 for c in ATTACKS if result.flagged.get(c.name)) >= len(ATTACKS) // 2
        assert result.hidden_removed > 0  # the zero-width and bidi payloads were removed and counted
        assert sum(result.statements.get(c.name, 0) for c in BENIGN) > 0
