"""Issue 33.4: when trust leaves a heading out, what stood under it keeps a section of its own in the export, never
the previous project's heading or none."""

from __future__ import annotations

from memtui.domain.trust.export import LEFT_OUT_HEADING, trusted_text
from memtui.services.export import render_prompt
from tests.conftest import approve_root

SUMMARY = """v1
## User Profile [trust:tool]
- works on two repos [trust:user]

## What's in Memory
### /Users/user/shop [trust:user]
- shop task one [trust:user]
### /Users/user/repo [trust:tool]
- repo task one [trust:user]
- repo task two [trust:user]
- repo task three [trust:user]
"""


def _section_of(text: str, needle: str) -> str:
    """The nearest heading above the line holding ``needle``."""
    heading = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            heading = line
        if needle in line:
            return heading
    raise AssertionError(needle)


def test_a_left_out_heading_stays_a_heading_of_the_same_level():
    out = trusted_text(SUMMARY).text
    assert "/Users/user/repo" not in out and "## User Profile" not in out
    assert _section_of(out, "repo task two") == f"### {LEFT_OUT_HEADING}"
    assert _section_of(out, "works on two repos") == f"## {LEFT_OUT_HEADING}"
    assert _section_of(out, "shop task one") == "### /Users/user/shop [trust:user]"


def test_the_export_files_each_task_under_its_own_section(isolated_env):
    root = isolated_env["MEMTUI_HOME"] / "memories"
    root.mkdir(parents=True)
    (root / "memory_summary.md").write_text(SUMMARY)
    approve_root(root)
    block = render_prompt(root) or ""
    for task in ("repo task one", "repo task two", "repo task three"):
        assert "/Users/user/shop" not in _section_of(block, task), task
    assert _section_of(block, "works on two repos").endswith(LEFT_OUT_HEADING)
