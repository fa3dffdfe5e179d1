"""A results folder replaces only what simcluster wrote: never a trace, a user's files, `.`, `~` or above."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simcluster import results
from simcluster.cli import app
from simcluster.paths import DEFAULT_TRACE

runner = CliRunner()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    folder = tmp_path / "trace"
    shutil.copytree(DEFAULT_TRACE, folder)
    return folder


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if a simulation starts: the refusals come before any work."""
    import simcluster.api

    def refuse(*args, **kwargs):
        raise AssertionError("simulated although the output was refused")

    monkeypatch.setattr(simcluster.api, "simulate", refuse)


def run(*args: str):
    return runner.invoke(app, ["run", "-q", *args])


def test_the_trace_folder_is_never_the_results_folder(trace, no_simulation):
    before = snapshot(trace)
    for extra in ([], ["--overwrite"]):
        result = run("--trace", str(trace), "--out", str(trace), *extra)
        assert result.exit_code == 2
        assert "holds an input of this run" in result.stderr
    assert snapshot(trace) == before


def test_a_folder_above_the_trace_is_refused_too(trace, no_simulation):
    result = run("--trace", str(trace), "--out", str(trace.parent), "--overwrite")
    assert result.exit_code == 2 and "holds an input of this run" in result.stderr
    assert (trace / "cluster_full_log.csv").is_file()


def test_a_folder_of_someone_elses_files_is_kept_and_named_in_the_error(tmp_path, no_simulation):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("three months of thoughts")
    result = run("--out", str(notes))
    assert result.exit_code == 2
    assert "holds files simcluster did not write (notes.txt)" in result.stderr and "--overwrite" in result.stderr
    assert snapshot(notes) == {"notes.txt": b"three months of thoughts"}


def test_overwrite_replaces_a_foreign_folder_when_asked(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "stale.csv").write_text("x")
    result = run("--out", str(folder), "--overwrite")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == [".simcluster.json", "jobs.csv", "summary.json", "timeline.csv", "users.csv"]


def test_the_current_directory_is_refused_before_any_work(tmp_path, monkeypatch, no_simulation):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper.tex").write_text("draft")
    for out in (".", "./", str(tmp_path), "..", "/"):
        result = run("--out", out, "--overwrite")
        assert result.exit_code == 2, out
        assert "refusing to write results over" in result.stderr
        assert "Traceback" not in result.output
    assert (tmp_path / "paper.tex").read_text() == "draft"


def test_the_home_folder_is_refused_however_it_is_written(tmp_path, monkeypatch, no_simulation):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export PATH")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    for out in ("~", str(home), "home"):
        result = run("--out", out, "--overwrite")
        assert result.exit_code == 2, out
        assert "your home folder" in result.stderr
    assert (home / ".bashrc").read_text() == "export PATH"


def test_a_folder_holding_the_config_file_is_refused(tmp_path, no_simulation):
    folder = tmp_path / "experiment"
    folder.mkdir()
    config = folder / "run.toml"
    config.write_text("quantum = 30\npolicy = 'tiresias'\n")
    result = run("--config", str(config), "--out", str(folder), "--overwrite")
    assert result.exit_code == 2 and "holds an input of this run" in result.stderr
    assert config.is_file()


def test_a_file_is_not_a_results_folder(tmp_path, no_simulation):
    target = tmp_path / "jobs.csv"
    target.write_text("job_id\n")
    result = run("--out", str(target))
    assert result.exit_code == 2 and "is a file" in result.stderr
    assert target.read_text() == "job_id\n"


def test_a_run_folder_we_wrote_is_replaced_by_the_next_run(tmp_path):
    out = tmp_path / "r"
    assert run("--out", str(out), "--policy", "fifo").exit_code == 0
    assert run("--out", str(out), "--policy", "sjf").exit_code == 0
    assert json.loads((out / "summary.json").read_text())["policy"] == "sjf"


def test_a_file_added_to_a_run_folder_stops_the_next_run_from_replacing_it(tmp_path, no_simulation):
    out = tmp_path / "r"
    results.write_run(out, {}, {"policy": "fifo"})
    (out / "analysis.ipynb").write_text("{}")
    result = run("--out", str(out))
    assert result.exit_code == 2 and "analysis.ipynb" in result.stderr
    assert (out / "analysis.ipynb").is_file()


def test_a_report_folder_is_not_replaced_by_a_run(tmp_path, no_simulation):
    out = tmp_path / "report"
    results.write_folder(out, {}, {"comparison.md": "| a |"}, kind="report")
    result = run("--out", str(out))
    assert result.exit_code == 2 and "holds a report folder, not a run folder" in result.stderr
    assert (out / "comparison.md").is_file()


def test_dry_run_says_what_would_run_and_where_and_writes_nothing(tmp_path, monkeypatch, no_simulation):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "--policy", "tiresias", "--quantum", "30", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "tiresias/consolidate" in result.stdout and "quantum = 30.0" in result.stdout
    assert "results/default-tiresias-consolidate-" in result.stdout and "nothing was simulated" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_runs_that_differ_in_any_setting_get_different_default_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("--policy", "srtf").exit_code == 0
    assert run("--policy", "srtf", "--gpus-per-node", "16").exit_code == 0
    folders = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert folders[0] == "default-srtf-consolidate" and folders[1].startswith("default-srtf-consolidate-")


@pytest.fixture
def run_folder(tmp_path) -> Path:
    out = tmp_path / "runs" / "fifo"
    assert run("--out", str(out)).exit_code == 0
    return out


def test_report_refuses_a_foreign_folder_and_the_runs_it_compares(tmp_path, run_folder):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    refused = runner.invoke(app, ["report", str(run_folder), "--out", str(notes)])
    assert refused.exit_code == 2 and "notes.txt" in refused.stderr
    assert (notes / "notes.txt").read_text() == "mine"
    before = snapshot(run_folder.parent)
    over_input = runner.invoke(app, ["report", str(run_folder), "--out", str(run_folder.parent), "--overwrite"])
    assert over_input.exit_code == 2 and "holds an input" in over_input.stderr
    assert snapshot(run_folder.parent) == before


def test_report_replaces_its_own_folder_and_a_foreign_one_with_overwrite(tmp_path, run_folder):
    out = tmp_path / "report"
    for _ in range(2):
        made = runner.invoke(app, ["report", str(run_folder), "--out", str(out), "-q"])
        assert made.exit_code == 0, made.output
    assert results.read_marker(out)["kind"] == "report"
    (out / "mine.txt").write_text("x")
    assert runner.invoke(app, ["report", str(run_folder), "--out", str(out), "-q"]).exit_code == 2
    assert runner.invoke(app, ["report", str(run_folder), "--out", str(out), "-q", "--overwrite"]).exit_code == 0
    assert not (out / "mine.txt").exists()
