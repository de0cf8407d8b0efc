"""A command loads only its own module: ``memtui status`` answers without importing the model client, git or the
other commands, and a bare ``memtui --help`` still lists every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memtui.cli import COMMANDS, _named_command, build_parser


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["status"], "status"),
        (["--home", "/tmp/h", "review", "show"], "review"),
        (["--set", "max_unused_days=3", "--home", "/h", "health", "--json"], "health"),
        (["--home", "status"], None),  # "status" is the home's value here, not a command
        (["--help"], None),
        ([], None),
        (["no-such-command"], None),
    ],
)
def test_the_named_command_is_found_after_global_options(argv: list[str], command: str | None) -> None:
    assert _named_command(argv) == command


def test_the_full_help_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(_named_command(["--help"])).parse_args(["--help"])
    listed = capsys.readouterr().out
    assert all(name in listed for name in COMMANDS)


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
