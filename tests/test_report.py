"""Reports: the comparison table (CSV, Markdown, HTML) and every plot, rendered and checked as images."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments import plots
from simcluster.experiments.report import PLOTS, ReportError, short_labels, write_report
from simcluster.experiments.sweep import build_grid, run_sweep
from simcluster.results import write_run
from simcluster.traces.synth import SynthSpec, synthesize


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    trace = synthesize(SynthSpec(jobs=150, nodes=6, vcs=3, seed=3))
    folders = []
    for policy in ("fifo", "srtf"):
        result = simulate(trace, SimConfig(policy=policy))
        folders.append(write_run(root / policy, result.tables(), result.summary))
    return folders


def test_a_report_on_two_runs_writes_the_table_and_every_plot(two_runs, tmp_path):
    report = write_report(two_runs, tmp_path / "report")
    files = {p.name for p in (tmp_path / "report").iterdir()}
    assert files == {"comparison.csv", "comparison.md", "report.html", *PLOTS, ".simcluster.json"}
    for name in PLOTS:
        image = matplotlib.image.imread(tmp_path / "report" / name)
        assert image.shape[:2] == (plots.HEIGHT, plots.WIDTH), name
        assert np.ptp(image[..., :3]) > 0.5, f"{name} is blank"  # something was drawn
    table = pd.read_csv(tmp_path / "report" / "comparison.csv")
    assert list(table["run"]) == ["fifo"] * 4 + ["srtf"] * 4
    assert list(table["vc"]) == ["vc0", "vc1", "vc2", "all"] * 2
    assert table.equals(report.table.astype(table.dtypes.to_dict()))


def test_the_table_holds_the_summary_figures_per_vc_and_overall(two_runs, tmp_path):
    table = write_report(two_runs, tmp_path / "r").table.set_index(["run", "vc"])
    summary = json.loads((two_runs[1] / "summary.json").read_text())
    assert table.loc[("srtf", "all"), "avg_jct"] == summary["avg_jct"]
    assert table.loc[("srtf", "vc1"), "p99_queue"] == summary["per_vc"]["vc1"]["p99_queue"]
    assert table.loc[("fifo", "all"), "gpu_utilization"] > 0


def test_markdown_and_html_hold_every_row_and_inline_the_plots(two_runs, tmp_path):
    write_report(two_runs, tmp_path / "r")
    markdown = (tmp_path / "r" / "comparison.md").read_text().splitlines()
    assert len(markdown) == 2 + 8 and markdown[0].startswith("| run | policy |")
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(PLOTS)
    assert 'src="http' not in page and page.count("<tr") == 1 + 8


def test_a_sweep_folder_is_read_through_its_runs(tmp_path):
    run_sweep(build_grid(["synth:jobs=80,nodes=4,vcs=2,seed=1"], ["fifo", "sjf"], [1, 2]), tmp_path / "sweep",
              workers=2)
    table = write_report([tmp_path / "sweep"], tmp_path / "report").table
    assert len(table) == 4 * 3 and table["run"].nunique() == 4
    for name in PLOTS:
        assert matplotlib.image.imread(tmp_path / "report" / name).shape[:2] == (plots.HEIGHT, plots.WIDTH)


def test_a_folder_that_is_no_run_is_a_clear_error_and_writes_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="neither a run folder"):
        write_report([tmp_path / "empty"], tmp_path / "out")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no such folder" in result.output
    assert not (tmp_path / "out").exists()


def test_the_cli_report_prints_the_table(two_runs, tmp_path):
    result = CliRunner().invoke(app, ["report", *map(str, two_runs), "--out", str(tmp_path / "r")],
                                env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "srtf" in result.output and "avg JCT" in result.output


def test_time_weighted_bins_and_short_labels():
    assert plots.binned_mean(np.array([0.0, 10.0]), np.array([2.0, 4.0]), np.array([0.0, 5.0, 20.0])).tolist() \
        == [2.0, (2.0 * 5 + 4.0 * 10) / 15]
    assert short_labels(["t-fifo-seed1", "t-sjf-seed1", "t-sjf-seed2"]) == ["fifo-seed1", "sjf-seed1", "sjf-seed2"]
