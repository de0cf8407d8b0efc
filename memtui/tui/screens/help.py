# ruff: noqa: RUF012  (Textual declares BINDINGS, MODES and CSS as mutable class attributes)
"""The help screen: what each screen is for, every active key with its binding id, and how to remap keys."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from memtui.tui.app import MemtuiApp
from memtui.tui.format import home_path
from memtui.tui.widgets.vim import VimScroll

INTRO = """memtui curates the long-term memory of your coding agents.
1 Rollouts: every indexed session; enter opens one (conversation, memory, job history); e extracts it,
  b every session however old (the backfill offered when your history predates max_rollout_age_days).
2 Jobs: stage-1 extraction jobs and the Phase 2 consolidation job; retry, or release a stale lease.
3 Review: the consolidation awaiting review, hunk by hunk with its evidence; space leaves a hunk out, e amends it, v focuses the evidence (enter opens the rollout at the cited item); approve or reject.
4 Memory: edit MEMORY.md and memory_summary.md; commit your edit as a manual change.
5 Citations: paste an agent answer; enter jumps to the cited lines or opens a cited rollout.
6 History: every decision and each kept version's diff; r restores a version through review.
7 Health: each approved memory line, worst first: cited, restated, contradicted, corrected, stale; enter shows
  what the user said (enter again opens it); c confirms, u / d propose an update / removal, D removes it now.
Everywhere: ctrl+p command palette · ctrl+n task log · j/k g/G move · / search or filter · esc or q back.
Click a tab at the top to switch screens."""

# Keys that are not bindings of the screen (Textual's own, or a widget's) but a person needs to know.
ALWAYS = [
    ("ctrl+q", "Quit memtui", "(Textual: quit)"),
    ("ctrl+p", "Command palette: run Ingest, Phase 1, Phase 2, approve, reject, open a screen", "(Textual: palette)"),
    ("enter", "Open the highlighted row, file or citation", "(the list)"),
    ("j / k, g / G", "Down / up, first / last, in every list and view", "(the list)"),
]


def keymap_text(home: Path) -> str:
    config = home_path(home / "config.toml")
    return (
        f"Home: {home_path(home)}\n"
        f"Remap keys in {config}, in a [keymap] table: binding id = key(s), for example\n"
        '    [keymap]\n    "review.approve" = "A"\n    "memtui.jobs" = "f2,2"\n'
        "Each id follows its action, after the description; the change applies the next time memtui starts."
    )


def help_rows(app: MemtuiApp) -> list[tuple[str, str, str]]:
    """The keys active on the current screen, then the ones every screen has."""
    rows = []
    seen = set()
    for active in app.screen.active_bindings.values():
        binding = active.binding
        if binding.action in ("help_quit",) or binding.system or not (binding.id or binding.show):
            continue
        key = (binding.id, binding.action)
        if key in seen:
            continue
        seen.add(key)
        rows.append((app.get_key_display(binding), binding.description or binding.action, binding.id or ""))
    return rows + ALWAYS


class HelpScreen(ModalScreen[None]):
    NAVIGABLE = True  # not a question: a number key closes it on the way to its screen
    # A modal screen keeps the app's keys from firing: the number keys are repeated here, under the app's ids, so
    # a remapped screen key works here too.
    BINDINGS = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close", id="help.close"),
        *[
            Binding(b.key, f"app.{b.action}", b.description, show=False, id=b.id)
            for b in MemtuiApp.BINDINGS
            if isinstance(b, Binding) and b.action.startswith("switch_mode")
        ],
    ]

    def __init__(self, bindings: list[tuple[str, str, str]], home: Path | str) -> None:
        super().__init__()
        self.rows = bindings
        self.home = Path(home)

    def compose(self) -> ComposeResult:
        key_width = max((cell_len(key) for key, _, _ in self.rows), default=4) + 2
        with VimScroll(id="help"):
            yield Static(Content("memtui help (esc closes; j/k scroll)"), classes="dialog-title")
            yield Static(Content(INTRO), id="help-intro")
            yield Static(Content.styled("Key", "bold").pad_right(key_width - 3).append("Action · binding id"))
            with Vertical(id="help-keys"):
                # Keys and ids are never cut: the key column is as wide as the widest key, and the description
                # wraps with the id after it (an id has no spaces, so a line break never falls inside one).
                for key, desc, binding_id in self.rows:
                    with Horizontal(classes="help-row"):
                        label = Label(Content.styled(key, "bold $text-accent"), classes="help-key")
                        label.styles.width = key_width
                        yield label
                        yield Static(
                            Content.assemble(desc, ("  " + binding_id if binding_id else "", "$text-muted")),
                            classes="help-action",
                        )
            yield Static(Content(keymap_text(self.home)), id="help-keymap")

    def on_mount(self) -> None:
        self.query_one(VimScroll).focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
