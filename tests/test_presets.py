"""Config files, presets and the command line set the same settings, in a fixed order."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.config import ConfigError, SimConfig
from simcluster.presets import presets, resolve_config

runner = CliRunner()


def test_every_shipped_preset_is_valid_and_says_what_it_reproduces():
    found = presets()
    assert {"lucid-artifact", "gavel"} <= set(found)
    for preset in found.values():
        assert preset.description and preset.reproduces and preset.source
        SimConfig.from_settings(preset.settings, str(preset.path))


def test_the_command_line_overrides_the_config_file_which_overrides_the_preset(tmp_path):
    config = tmp_path / "mine.toml"
    config.write_text('preset = "gavel"\nround_seconds = 120\nrealloc_interval = 600\n')
    resolved = resolve_config(config_file=config, overrides={"realloc_interval": 60})
    assert resolved.preset == "gavel" and resolved.config_file == str(config)
    assert resolved.midround_release is False  # from the preset
    assert resolved.round_seconds == 120  # the file over the preset
    assert resolved.realloc_interval == 60  # the command line over both


@pytest.mark.parametrize("text, message", [
    ("quantm = 30\n", "unknown setting 'quantm' (did you mean 'quantum'?)"),
    ("quantum = 'fast'\n", "setting 'quantum' must be a time (seconds, or with units: 30m, 1h30m, 54d), got 'fast'"),
    ("quantum = -1\n", "setting 'quantum' must be greater than 0"),
    ("lucid_sharing = 'sometimes'\n", "must be one of adaptive, always, never"),
    ("gpus_per_node = 2.5\n", "setting 'gpus_per_node' must be an integer"),
    ("quantum = \n", "not valid TOML"),
    ("preset = 'nope'\n", "unknown preset 'nope'"),
])
def test_a_bad_config_file_is_an_error_naming_the_file_and_the_key(tmp_path, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match="bad.toml" if "preset" not in text else "nope") as caught:
        resolve_config(config_file=config)
    assert message in str(caught.value)
    result = runner.invoke(app, ["run", "--config", str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "out").exists()


def test_run_records_the_preset_and_the_effective_config_in_the_summary(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["run", "--preset", "gavel", "--round", "100", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "summary.json").read_text())["config"]
    assert config["preset"] == "gavel"
    assert (config["round_seconds"], config["realloc_interval"], config["midround_release"]) == (100.0, 1920.0, False)


def test_an_option_left_at_its_default_does_not_undo_the_preset(tmp_path):
    out = tmp_path / "run"
    # --realloc-interval is not given, so its default (0) must not replace the preset's 1920
    result = runner.invoke(app, ["run", "--preset", "gavel", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "summary.json").read_text())["config"]["realloc_interval"] == 1920.0


def test_presets_lists_each_preset_with_its_source():
    result = runner.invoke(app, ["presets", "--json"])
    assert result.exit_code == 0
    listed = json.loads(result.stdout)
    assert listed["gavel"]["settings"]["midround_release"] is False
    assert "stanford-futuredata/gavel" in listed["gavel"]["source"]


def test_a_sweep_starts_every_run_from_the_preset(tmp_path):
    result = runner.invoke(app, ["sweep", "--preset", "gavel", "--policy", "fifo,sjf", "--set", "round_seconds=100,200",
                                 "--trace", "synth:jobs=40,nodes=4,vcs=2,seed=1", "--out", str(tmp_path / "s"), "-q",
                                 "--workers", "1"])
    assert result.exit_code == 0, result.output
    configs = [json.loads(p.read_text())["config"] for p in sorted((tmp_path / "s" / "runs").glob("*/summary.json"))]
    assert len(configs) == 4
    assert {c["preset"] for c in configs} == {"gavel"} and {c["realloc_interval"] for c in configs} == {1920.0}
    assert sorted(c["round_seconds"] for c in configs) == [100.0, 100.0, 200.0, 200.0]
