import pytest

from memtui.adapters.llm.backends.choose import resolved_provider
from memtui.cli import main
from memtui.core.settings import SettingsError, load_settings


def test_defaults_match_codex_memories_table():
    s = load_settings().settings
    assert (s.max_rollout_age_days, s.min_rollout_idle_hours) == (10, 6)
    assert (s.max_raw_memories_for_consolidation, s.max_unused_days, s.concurrency) == (256, 30, 8)
    assert resolved_provider(s) == "offline"  # no key, no server


def test_layers_config_then_env_then_flags(isolated_env, monkeypatch):
    (isolated_env["MEMTUI_HOME"] / "config.toml").write_text(
        "[memories]\nmax_unused_days = 12\nconcurrency = 3\nextract_model = 'from-config'\n"
    )
    monkeypatch.setenv("MEMTUI_CONCURRENCY", "5")
    loaded = load_settings({"extract_model": "from-flag", "max_unused_days": None})
    s, origins = loaded.settings, loaded.origins
    assert (s.max_unused_days, s.concurrency, s.extract_model) == (12, 5, "from-flag")
    assert origins["max_unused_days"].startswith("config")
    assert origins["concurrency"] == "env"
    assert origins["extract_model"] == "flag"
    assert origins["max_rollout_age_days"] == "default"


def test_openai_variables_select_the_model_provider(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert resolved_provider(load_settings().settings) == "openai"


@pytest.mark.parametrize(
    "text, needle",
    [("max_unused_days = 999\n", "max_unused_days"), ("nope = 1\n", "unknown setting"), ("= broken", "TOML")],
)
def test_bad_config_is_a_clear_error(isolated_env, text, needle):
    (isolated_env["MEMTUI_HOME"] / "config.toml").write_text(text)
    with pytest.raises(SettingsError, match=needle):
        load_settings()


def test_config_command_prints_origins(isolated_env, monkeypatch, capsys):
    monkeypatch.setenv("MEMTUI_MAX_UNUSED_DAYS", "7")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "max_unused_days" in out and "env" in out
    assert str(isolated_env["MEMTUI_HOME"]) in out


def test_bad_config_exits_2_with_message(isolated_env, capsys):
    (isolated_env["MEMTUI_HOME"] / "config.toml").write_text("concurrency = 0\n")
    assert main(["config"]) == 2
    assert "concurrency" in capsys.readouterr().err


def test_set_flag_is_the_top_layer(isolated_env, monkeypatch, capsys):
    monkeypatch.setenv("MEMTUI_MAX_UNUSED_DAYS", "7")
    assert main(["--set", "max_unused_days=14", "config", "--json"]) == 0
    import json

    row = json.loads(capsys.readouterr().out)["settings"]["max_unused_days"]
    assert row == {"value": 14, "origin": "flag"}
    assert main(["--set", "nonsense", "config"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_keymap_table_in_config(isolated_env):
    (isolated_env["MEMTUI_HOME"] / "config.toml").write_text('[keymap]\n"review.approve" = "A"\n')
    loaded = load_settings()
    assert loaded.settings.keymap == {"review.approve": "A"}
    assert loaded.origins["keymap"].startswith("config")
