"""Memory health's shared vocabulary: how a later sentence of the user's relates to an approved memory line.

The rules (``memtui.services.health.rules``) decide it and the health tables (``memtui.state.health``) store it, so
it sits below both."""

from __future__ import annotations

from enum import StrEnum


class Relation(StrEnum):
    RESTATED = "restated"
    CONTRADICTED = "contradicted"
    CORRECTED = "corrected"
