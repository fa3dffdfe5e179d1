"""`--help` is whole and readable at 80 columns: every option name, every word of help, the right defaults."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from simcluster.cli import app

runner = CliRunner()
WIDTH = 80


def command_paths() -> list[list[str]]:
    """Every command and group of lucid-sim, as the words that name it (the root is [])."""
    root = typer.main.get_command(app)
    found: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        found.append(path)
        for name in getattr(command, "commands", {}):
            walk(command.commands[name], [*path, name])

    walk(root, [])
    return found


def command_at(path: list[str]):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def flattened(output: str) -> str:
    """The help as one line of words: panel borders dropped, wrapped lines joined."""
    lines = [line.strip().strip("│╭╮╰╯─").strip() for line in output.splitlines()]
    return " ".join(" ".join(lines).split())


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "lucid-sim")
def test_every_option_name_and_every_word_of_help_is_shown_whole_at_80_columns(path):
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    text = flattened(result.output)
    params = command_at(path).params
    written = "".join(f"{getattr(p, 'help', '')}{p.metavar or ''}" for p in params)
    assert text.count("…") == written.count("…")  # only those the texts hold: nothing cut
    for param in params:
        for name in (*param.opts, *param.secondary_opts):
            if param.param_type_name == "option":
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), name
        help_text = " ".join((getattr(param, "help", None) or "").replace("`", "").split())
        assert help_text in text, param.name


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "lucid-sim")
def test_h_is_help_everywhere(path):
    short, long = runner.invoke(app, [*path, "-h"]), runner.invoke(app, [*path, "--help"])
    assert short.exit_code == 0 and short.output == long.output


def test_run_help_shows_each_default_as_it_would_be_typed():
    text = flattened(runner.invoke(app, ["run", "--help"]).output)
    for shown in ("[default: fifo]", "[default: 604800]", "[default: 0.85,0.95]",
                  "(default: the format's: 2020-04-01 for Venus logs",
                  "[default: --midround-release]", "[default: 18000]", "--queues INT", "[≥ 1]"):
        assert shown in text, shown
    assert "Default: results/TRACE-POLICY-PLACEMENT" in text  # --out says how its name is made
    assert "[default: --no-" not in text  # a flag is off unless given: nothing to say


def test_run_help_groups_options_by_the_feature_or_policy_that_reads_them():
    output = runner.invoke(app, ["run", "--help"]).output
    titles = re.findall(r"╭─ (.+?) ─", output)
    assert titles[:2] == ["Trace", "Policy"] and titles[-2:] == ["Output", "Options"]
    assert {"Cluster", "Failures and checkpoints", "Preemption", "Policy: tiresias", "Policy: lucid", "Sharing",
            "GPU types", "Gavel: rounds and job types", "Deadlines", "Elastic jobs"} <= set(titles)
    panels = dict(re.findall(r"╭─ (.+?) ─.*?\n(.*?)╰", output, re.DOTALL))
    assert "--node-mtbf" in panels["Failures and checkpoints"] and "--spare-nodes" in panels["Failures and checkpoints"]
    assert "--preempt-overhead-small" in panels["Preemption"]
    assert "--deadlines" in panels["Deadlines"] and "--restart-delay" in panels["Elastic jobs"]


def test_help_keeps_angle_brackets_and_paths_as_written():
    assert "runs/<run-id>/" in flattened(runner.invoke(app, ["sweep", "--help"]).output)
    assert "<model>_importances.csv" in flattened(runner.invoke(app, ["explain", "--help"]).output)
    assert "report [OPTIONS] FOLDERS..." in runner.invoke(app, ["report", "--help"]).output
