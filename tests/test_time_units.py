"""Units for every time option of every command (issue 54, item 4): ``30m``, ``1h30m``, ``54d`` wherever seconds
are asked for — ``run``'s and ``sweep --set``'s settings, a config file's, ``reliability``'s own options and the
fault models' times — read by one function (:func:`simcluster.limits.duration`).  Before, ``--node-mtbf 30d`` was
refused by ``run`` and taken by ``--faults mtbf=30d``, and ``1h30m`` by neither."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.config import SimConfig, base_type, knobs
from simcluster.experiments.sweep import parse_sets
from simcluster.faults.spec import rate_model
from simcluster.limits import LimitError, duration
from simcluster.settings.fields import coerce


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), ("54d", 54 * 86_400.0), ("1.5h", 5400.0),
    ("2d12h", 216_000.0), (" 1h 30m ", 5400.0), ("1H30M", 5400.0), ("1e3", 1000.0), ("2e1m", 1200.0)])
def test_a_time_is_seconds_or_units_largest_first(text, seconds):
    assert duration(text, "--x") == seconds


@pytest.mark.parametrize(("text", "words"), [
    ("1h30", "must be a time"), ("30m1h", "must be a time"), ("1h1h", "must be a time"), ("h", "must be a time"),
    ("5x", "must be a time"), ("", "must be a time"), ("-1d", "must be at least 0"), ("inf", "finite"),
    ("1e308d", "must be a finite time")])
def test_what_is_not_a_time_is_refused_naming_the_option(text, words):
    with pytest.raises(LimitError, match=words) as error:
        duration(text, "--until")
    assert str(error.value).startswith("--until")


def time_settings():
    return {name: f for name, f in knobs().items() if f.metadata.get("time")}


def test_every_setting_in_seconds_takes_units():
    settings = time_settings()
    assert {"until", "node_mtbf", "checkpoint_interval", "faults_offset", "quantum"} <= set(settings)
    for name, f in settings.items():
        assert coerce(f, "1h30m") == 5400.0, name
    # a float setting whose help speaks of seconds and takes no units would be an option left behind
    left = [name for name, f in knobs().items() if base_type(f) is float and "second" in f.metadata["help"].lower()
            and name not in settings]
    assert left == []


def test_a_config_and_sweep_take_units_and_words_still_work():
    config = SimConfig.from_settings({"until": "2d", "checkpoint_interval": "young-daly", "faults_offset": "random"})
    assert (config.until, config.checkpoint_interval, config.faults_offset) == (172_800.0, "young-daly", "random")
    assert parse_sets(["until=1h30m,2h"])["until"] == [("1h30m", 5400.0), ("2h", 7200.0)]


def test_run_reliability_and_fault_models_take_units_on_the_command_line(tmp_path):
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--until", "1h30m", "--node-mtbf", "30d", "--checkpoint-interval", "30m",
                              "--json", "--out", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    config = json.loads(ran.stdout)["config"]
    assert (config["until"], config["node_mtbf"], config["checkpoint_interval"]) == (5400.0, 2_592_000.0, 1800.0)
    bad = runner.invoke(app, ["run", "--until", "30m1h"])
    assert bad.exit_code == 2 and "'--until': must be a time" in bad.output
    assert "TIME" in runner.invoke(app, ["run", "--help"]).output
    model = rate_model("mtbf=1d12h,repair=1h30m")
    assert repr(model.classes[0].repair) == "Repair.fixed(5400)" and model.node_rate(8) == 1 / 129_600
