"""The README and docs/ stay true: generated references match the code, links resolve, the README fits a page."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


gen_docs = _load_generator()


def test_generated_references_match_the_code():
    stale = [path.name for path, text in gen_docs.expected_pages().items() if path.read_text(encoding="utf-8") != text]
    assert stale == [], f"docs/{', docs/'.join(stale)} no longer match the code: run `{gen_docs.COMMAND}`"


def test_the_check_names_a_stale_page_and_the_command(tmp_path, capsys):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    page = docs / "settings.md"
    page.write_text(
        page.read_text(encoding="utf-8").replace("| `max_unused_days` | `30` |", "| `max_unused_days` | `31` |")
    )
    assert gen_docs.main(["--check"], docs=docs) == 1
    assert f"stale: docs/settings.md; run `{gen_docs.COMMAND}`" in capsys.readouterr().err
    assert gen_docs.main([], docs=docs) == 0  # regenerating puts the model's default back
    assert "| `max_unused_days` | `30` |" in page.read_text(encoding="utf-8")
    assert gen_docs.main(["--check"], docs=docs) == 0


def test_every_setting_and_command_is_in_the_references():
    from memtui.cli import build_parser
    from memtui.core.settings import Settings

    settings = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert [name for name in Settings.model_fields if f"| `{name}` |" not in settings] == []
    assert [name for name, field in Settings.model_fields.items() if not field.description] == [], (
        "every setting says what it is for (Field(description=...)): docs/settings.md is generated from it"
    )
    cli = (DOCS / "cli.md").read_text(encoding="utf-8")
    commands = [name for name, _, _ in gen_docs._subcommands(build_parser())]
    assert len(commands) >= 19
    assert [name for name in commands if f"### `memtui {name}`" not in cli] == []
    described = cli[: cli.index(gen_docs.BEGIN)]  # the hand-written table says what each command does
    assert [name for name in commands if f"`memtui {name}" not in described] == []


def test_import_circles_are_found():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")]
    assert gen_docs.import_circles(edges) == [["a", "b", "c"], ["d", "e"]]
    assert gen_docs.import_circles([("a", "b"), ("b", "c")]) == []


def test_the_drawing_follows_the_layers_contract(tmp_path):
    """With a layers contract, the groups are its layers (highest first) and an import running up is named."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[tool.importlinter]\nroot_package = 'memtui'\n\n[[tool.importlinter.contracts]]\nname = 'layers'\n"
        "type = 'layers'\ncontainers = ['memtui']\nlayers = ['state', 'cli | tui']\n",
        encoding="utf-8",
    )
    groups, layered = gen_docs.layer_groups(pyproject, ["memtui.cli", "memtui.state"])
    assert layered and [g.members for g in groups] == [("memtui.state",), ("memtui.cli", "memtui.tui")]
    text = gen_docs.render_architecture(pyproject)
    # The CLI imports the state package, which this (upside-down) contract puts above it.
    assert re.search(r"- `memtui\.cli[\w.]*` imports `memtui\.state[\w.]*` \(cli \| tui -> state\)", text)
    assert "-. " in text and "up .->" in text
    assert "#### outside the layers" in text  # every module not in a layer is still drawn


def test_without_a_contract_each_top_level_package_is_a_group(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'x'\n", encoding="utf-8")
    groups, layered = gen_docs.layer_groups(pyproject, ["memtui.cli", "memtui.cli.common", "memtui.state.db"])
    assert not layered and [g.name for g in groups] == ["cli", "state"]


# --- links ---------------------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in _FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if m := re.match(r"#{1,6} (.+)", line):
            slug, n = _slug(m.group(1)), 0
            while (candidate := slug if n == 0 else f"{slug}-{n}") in found:
                n += 1
            found.add(candidate)
    return found


def _links(page: Path) -> list[str]:
    text = _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in _links(page):
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_link_check_sees_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A `b` title\n\n[ok](#a-b-title) [gone](missing.md) ![img](x.svg) `[code](not-a-link.md)`\n")
    assert _links(page) == ["#a-b-title", "missing.md", "x.svg"]
    assert _anchors(page) == {"a-b-title"}


# --- what the docs name exists -------------------------------------------------------------------------------------

_NAMED = re.compile(r"`((?:memtui|tests|benchmarks|scripts)/[\w./-]+?\.(?:py|md))?(?:::(\w+))?")


def _named(text: str) -> list[tuple[str, str]]:
    """(file, test) pairs a page names: `path`, `path::test`, or `::test` continuing the last path named."""
    out, last = [], ""
    for path, test in _NAMED.findall(text):
        last = path or last
        if path or (test and last):
            out.append((last, test))
    return out


def test_every_file_and_test_the_docs_name_exists():
    """A path or a test named in the docs exists, so a renamed module or test cannot leave the docs pointing at
    nothing."""
    missing = []
    for page in PAGES:
        for path, test in _named(page.read_text(encoding="utf-8")):
            file = ROOT / path
            if not file.is_file():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
            elif test and not re.search(rf"def {test}\(", file.read_text(encoding="utf-8")):
                missing.append(f"{page.relative_to(ROOT)}: {path}::{test}")
    assert missing == []


def test_the_name_check_reads_continued_tests():
    text = "`tests/a.py::test_x`, `::test_y`; `memtui/b.py` and `tests/c.py` (`::test_z`) `::`"
    assert _named(text) == [
        ("tests/a.py", "test_x"),
        ("tests/a.py", "test_y"),
        ("memtui/b.py", ""),
        ("tests/c.py", ""),
        ("tests/c.py", "test_z"),
    ]


# --- the front door ------------------------------------------------------------------------------------------------


def test_the_readme_fits_the_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to docs/"


def test_ci_runs_the_readmes_test_command():
    """The README's second set-up command ends with the test run; .ci/run runs that same command."""
    setup = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert setup
    lines = [line for line in setup.group(1).splitlines() if line.strip()]
    test_command = lines[1].split("&&")[-1].strip()
    assert "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in [line.strip() for line in ci], f"{test_command!r} is not a line of .ci/run"


@pytest.mark.parametrize("page", [p.name for p in PAGES if p.parent == DOCS])
def test_every_page_is_linked_from_the_readme(page):
    assert f"](docs/{page})" in README.read_text(encoding="utf-8")
