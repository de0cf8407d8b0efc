"""A command loads only its own module: ``memtui status`` answers without importing the model client, git or the
other commands, and a bare ``memtui --help`` still lists every command without importing any of them.

Structure only, no timing: the seconds are measured by ``benchmarks/startup.py``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memtui.cli import COMMANDS, LISTED, _named_command, build_parser


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["status"], "status"),
        (["--home", "/tmp/h", "review", "show"], "review"),
        (["--set", "max_unused_days=3", "--home", "/h", "health", "--json"], "health"),
        (["--home", "status"], LISTED),  # "status" is the home's value here, not a command
        (["--help"], LISTED),
        ([], LISTED),
        (["no-such-command"], LISTED),
    ],
)
def test_the_named_command_is_found_after_global_options(argv: list[str], command: str) -> None:
    assert _named_command(argv) == command


def test_the_full_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(_named_command(["--help"])).parse_args(["--help"])
    listed = capsys.readouterr().out
    assert all(name in listed for name in COMMANDS)
    assert all(help_.split()[0] in listed for help_ in COMMANDS.values())


def test_each_command_registers_the_help_line_the_list_shows() -> None:
    """The list built without the modules says what each module's own parser says (one definition: COMMANDS)."""
    for name, help_ in COMMANDS.items():
        sub = next(a for a in build_parser(name)._actions if isinstance(a, argparse._SubParsersAction))
        assert [(c.dest, c.help) for c in sub._choices_actions] == [(name, help_)]


@pytest.mark.parametrize(
    ("argv", "kept_out"),
    [
        (["status"], ("openai", "git", "textual", "memtui.cli.ingest_cmd", "memtui.cli.phase1_cmd")),
        # an agent waits on `memtui mcp` to start: ingest, git and search stay out
        (
            ["mcp", "--project", "/p"],
            ("memtui.services.ingest", "git", "memtui.services.search", "memtui.cli.ingest_cmd"),
        ),
    ],
)
def test_a_command_starts_without_what_it_never_uses(argv: list[str], kept_out: tuple[str, ...]) -> None:
    code = (
        "import sys; from memtui.cli import build_parser, _named_command; "
        f"build_parser(_named_command(['--home', '/tmp/x', *{argv!r}])); "
        f"print(','.join(m for m in {kept_out!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_mcp_answers_its_client_before_loading_the_sdk_settings_or_database(tmp_path) -> None:
    """When `memtui mcp` starts answering the handshake (memtui.mcp.front), none of the slow imports has run: the
    MCP SDK (about a second alone), pydantic, anyio, memtui's settings, state or services."""
    from tests.test_mcp_server import HeldBack

    server = HeldBack(tmp_path / "release", "--project", str(tmp_path))
    try:
        loaded = server.modules_at_start()
    finally:
        (tmp_path / "release").touch()
        server.close()
    heavy = ("mcp", "mcp_types", "pydantic", "anyio", "memtui.core.settings", "memtui.state", "memtui.services")
    assert "memtui.mcp.front" in loaded
    assert [m for m in loaded if m.startswith(heavy) or m == "memtui.mcp.server"] == []


def modules_after(argv: list[str], tmp_path: Path) -> set[str]:
    """The modules ``memtui <argv>`` had imported when it finished, run in a fresh interpreter (``sys.modules``
    written to a file at exit, so the command's own output stays as it is)."""
    out = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        "from memtui.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    return set(json.loads(out.read_text()))


def _loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in prefixes or m.startswith(tuple(f"{p}." for p in prefixes)))


COMMAND_MODULES = tuple(f"memtui.cli.{name}_cmd" for name in COMMANDS)
# What none of the read-only commands below needs: the UI, the model clients and their SDKs, the MCP SDK,
# GitPython, the pipeline stages and their rules (redaction, memory health, search, trust).
NEVER_READING = (
    "textual",
    "openai",
    "httpx",
    "mcp",
    "git",
    "memtui.tui",
    "memtui.adapters.llm",
    "memtui.adapters.redact",
    "memtui.services.ingest",
    "memtui.services.phase1",
    "memtui.services.health",
    "memtui.services.search",
    "memtui.domain.trust",
)


@pytest.mark.parametrize("argv", [["--help"], ["no-such-command"], ["--version"]])
def test_the_command_list_imports_no_command(argv: list[str], tmp_path: Path) -> None:
    loaded = modules_after(["--home", str(tmp_path / "home"), *argv], tmp_path)
    assert "memtui.cli" in loaded
    assert _loaded(loaded, (*COMMAND_MODULES, *NEVER_READING, "pydantic", "memtui.core.settings")) == []


def test_status_and_review_show_import_only_their_own_path(tmp_path: Path) -> None:
    """On a home with a consolidation awaiting review (the demo's), ``status`` and ``review show`` (its diff, its file
    list) load their own command module and nothing from the list above."""
    from memtui.demo.build import build_demo_home

    home = build_demo_home(tmp_path / "demo").home
    for argv in (["status"], ["review", "show"], ["review", "show", "--stat"]):
        loaded = modules_after(["--home", str(home), *argv], tmp_path)
        own = f"memtui.cli.{argv[0]}_cmd"
        assert own in loaded
        assert _loaded(loaded, (*(m for m in COMMAND_MODULES if m != own), *NEVER_READING)) == [], argv
