"""Command palette provider: run work, decide on a consolidation, open a screen or the task log."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from memtui.tui.app import MemtuiApp


class MemtuiCommands(Provider):
    @property
    def memtui(self) -> MemtuiApp:
        from memtui.tui.app import MemtuiApp

        app = self.app
        assert isinstance(app, MemtuiApp)
        return app

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.memtui
        cmds: list[tuple[str, str, Callable[[], object]]] = [
            ("run: Ingest rollouts", "Scan Codex and Claude Code sessions for new or changed rollouts", app.run_ingest),
            ("run: Phase 1 (extract pending rollouts)", "Extract memories from eligible rollouts", app.run_phase1),
            ("run: Phase 2 (consolidate)", "Consolidate raw memories into MEMORY.md, up to review", app.run_phase2),
            (
                "run: Phase 2 (ignore cooldown)",
                "Consolidate now even if the last one succeeded recently (asks first)",
                app.confirm_phase2_force,
            ),
            ("review: Approve consolidation", "Make the run awaiting review the new baseline", app.approve_pending),
            ("review: Reject consolidation", "Undo the agent's edits, with a reason", app.reject_pending),
            ("search: Search memory and messages", "Full-text search (bm25); Enter opens the hit", app.open_search),
            ("work: Cancel running work", "Ask every running task to stop", app.action_cancel_work),
            ("view: Task log", "What ran, when, and how it ended; every notification", app.action_task_log),
            ("help: Keys and screens", "Show the help screen", app.action_help),
        ]
        for mode, label in app.SCREEN_LABELS.items():
            cmds.append((f"open: {label}", f"Switch to the {label} screen", partial(app.reach_mode, mode)))
        return cmds

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
