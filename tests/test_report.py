"""Reports: configurations (trace + settings) with seeds aggregated, a baseline, the table at 80 columns,
and every plot, rendered and checked as images."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments import plots
from simcluster.experiments.report import PLOTS, ReportError, rich_table, write_report
from simcluster.experiments.sweep import build_grid, parse_sets, read_runs, run_sweep
from simcluster.results import write_run
from simcluster.traces.synth import SynthSpec, synthesize

TRACE_A, TRACE_B = "synth:jobs=80,nodes=4,vcs=2,seed=1", "synth:jobs=80,nodes=4,vcs=2,seed=2"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("runs")
    trace = synthesize(SynthSpec(jobs=150, nodes=6, vcs=3, seed=3))
    folders = []
    for policy in ("fifo", "srtf"):
        result = simulate(trace, SimConfig(policy=policy))
        folders.append(write_run(root / policy, result.tables(), result.summary))
    return folders


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """Two traces × fifo, sjf × seeds 1, 2, 3 × consolidate/random placement (random: seeds differ)."""
    out = tmp_path_factory.mktemp("sweep")
    specs = build_grid([TRACE_A, TRACE_B], ["fifo", "sjf"], [1, 2, 3],
                       parse_sets(["placement=consolidate,random", "spread_penalty=0.5"]))
    assert run_sweep(specs, out, workers=2).failed == 0
    return out


def overall(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["vc"] == "all"].set_index("label")


def test_a_report_on_two_runs_writes_the_tables_and_every_plot(two_runs, tmp_path):
    report = write_report(two_runs, tmp_path / "report")
    files = {p.name for p in (tmp_path / "report").iterdir()}
    assert files == {"comparison.csv", "comparison.md", "runs.csv", "sizes.csv", "report.html", *PLOTS,
                     ".simcluster.json"}
    for name in PLOTS:
        image = matplotlib.image.imread(tmp_path / "report" / name)
        assert image.shape[:2] == (plots.HEIGHT, plots.WIDTH), name
        assert np.ptp(image[..., :3]) > 0.5, f"{name} is blank"  # something was drawn
    table = pd.read_csv(tmp_path / "report" / "comparison.csv", keep_default_na=False, na_values=[""])
    assert list(table["label"]) == ["fifo"] * 4 + ["srtf"] * 4
    assert list(table["vc"]) == ["vc0", "vc1", "vc2", "all"] * 2
    assert (table["runs"] == 1).all()
    runs = pd.read_csv(tmp_path / "report" / "runs.csv")
    assert list(runs["run"]) == ["fifo"] * 4 + ["srtf"] * 4 and len(report.runs) == 8


def test_one_seed_gives_the_summary_figures_per_vc_and_overall_with_no_spread(two_runs, tmp_path):
    table = write_report(two_runs, tmp_path / "r").table.set_index(["label", "vc"])
    summary = json.loads((two_runs[1] / "summary.json").read_text())
    assert table.loc[("srtf", "all"), "avg_jct"] == summary["avg_jct"]
    assert table.loc[("srtf", "all"), "avg_jct_min"] == table.loc[("srtf", "all"), "avg_jct_max"] == summary["avg_jct"]
    assert table.loc[("srtf", "vc1"), "p99_queue"] == summary["per_vc"]["vc1"]["p99_queue"]
    assert table.loc[("srtf", "all"), "preemptions"] == summary["preemptions"]
    fifo = json.loads((two_runs[0] / "summary.json").read_text())
    assert table.loc[("fifo", "all"), "jain_users"] == fifo["jain_users"] and 0 < fifo["jain_users"] <= 1
    assert table.loc[("fifo", "vc2"), "rho_mean"] == fifo["per_vc"]["vc2"]["rho_mean"]
    assert table.loc[("fifo", "all"), "rho_p99"] >= table.loc[("fifo", "all"), "rho_mean"] > 0


def test_seeds_are_aggregated_into_mean_min_and_max(sweep, tmp_path):
    table = overall(write_report([sweep], tmp_path / "r").table)
    runs = read_runs(sweep / "runs.csv")
    mine = runs[(runs["trace"] == "synth-jobs80-nodes4-vcs2-seed1") & (runs["policy"] == "sjf")
                & (runs["placement"] == "random")]
    row = table.loc["synth-jobs80-nodes4-vcs2-seed1: sjf placement=random"]
    assert row["runs"] == 3 and row["seeds"] == "1;2;3"
    assert row["avg_jct"] == pytest.approx(mine["avg_jct"].mean())
    assert (row["avg_jct_min"], row["avg_jct_max"]) == (mine["avg_jct"].min(), mine["avg_jct"].max())
    assert row["avg_jct_min"] < row["avg_jct_max"]  # random placement with a spread penalty: seeds matter


def test_runs_of_different_traces_or_settings_never_share_a_label(sweep, tmp_path):
    report = write_report([sweep], tmp_path / "r")
    table = overall(report.table)
    assert len(table) == 8 and table.index.is_unique  # 2 traces × 2 policies × 2 placements
    labels = report.runs.groupby("label")
    assert (labels["trace"].nunique() == 1).all()
    for label, runs in report.runs[report.runs["vc"] == "all"].groupby("label"):
        assert len(runs) == 3, label  # its three seeds, nothing else
    assert "synth-jobs80-nodes4-vcs2-seed2: fifo placement=consolidate" in table.index


def test_a_deterministic_configuration_is_noted_as_identical_for_every_seed(sweep, tmp_path):
    report = write_report([sweep], tmp_path / "r")
    row = overall(report.table).loc["synth-jobs80-nodes4-vcs2-seed1: fifo placement=consolidate"]
    assert row["avg_jct_min"] == row["avg_jct_max"]
    assert "identical for seeds 1, 2, 3" in row["notes"]
    assert any("identical for seeds" in n for n in report.notes)


def test_a_baseline_gives_each_configuration_its_change(two_runs, tmp_path):
    table = overall(write_report(two_runs, tmp_path / "r", baseline="fifo").table)
    assert table.loc["fifo", "avg_jct_vs_baseline"] == 0
    assert table.loc["srtf", "avg_jct_vs_baseline"] == pytest.approx(
        table.loc["srtf", "avg_jct"] / table.loc["fifo", "avg_jct"] - 1)
    assert table.loc["srtf", "baseline"] == "fifo"
    with pytest.raises(ReportError, match="--baseline tiresias: no run of that policy"):
        write_report(two_runs, tmp_path / "r2", baseline="tiresias")


def test_the_baseline_is_taken_on_the_same_trace(sweep, tmp_path):
    table = overall(write_report([sweep], tmp_path / "r", baseline="fifo").table)
    row = table.loc["synth-jobs80-nodes4-vcs2-seed2: sjf placement=random"]
    assert row["baseline"] == "synth-jobs80-nodes4-vcs2-seed2: fifo placement=random"


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_console_table_keeps_every_label_whole_at_any_width(sweep, tmp_path, width):
    table = write_report([sweep], tmp_path / "r", baseline="fifo").table
    console = Console(width=width, record=True)
    console.print(rich_table(table, width=width))
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= width
    assert "configuration" in text and "avg JCT" in text
    flat = text.replace("\n", "")
    for label in table["label"].unique():
        assert label.split(": ")[1] in text or label in flat  # whole (a long label may fold onto two lines)


def test_markdown_and_html_hold_every_row_and_inline_the_plots(two_runs, tmp_path):
    write_report(two_runs, tmp_path / "r")
    text = (tmp_path / "r" / "comparison.md").read_text().splitlines()
    assert text[0].startswith("For configurations without replicas, each figure is the mean over the seeds")
    markdown = [line for line in text[:text.index("## By job size (GPUs per job)")] if line.startswith("|")]
    assert len(markdown) == 2 + 8 and markdown[0].startswith("| configuration | seeds / replicas | vc | jobs | avg JCT |")
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count('<figure><img alt="') == len(PLOTS) and page.count('<section class="chart"') == 4
    sizes = len(pd.read_csv(tmp_path / "r" / "sizes.csv"))
    assert 'src="http' not in page and page.count("<tr") == 1 + 8 + 1 + sizes


def test_a_folder_that_is_no_run_is_a_clear_error_and_writes_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="neither a run folder"):
        write_report([tmp_path / "empty"], tmp_path / "out")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no such folder" in result.output
    assert not (tmp_path / "out").exists()


def test_the_cli_report_prints_the_table_at_80_columns(two_runs, tmp_path):
    result = CliRunner().invoke(app, ["report", *map(str, two_runs), "--out", str(tmp_path / "r"),
                                      "--baseline", "fifo"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "srtf" in result.output and "avg JCT" in result.output and "Δ avg JCT" in result.output
    table = [line for line in result.output.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(map(len, table)) <= 80


def test_time_weighted_bins():
    assert plots.binned_mean(np.array([0.0, 10.0]), np.array([2.0, 4.0]), np.array([0.0, 5.0, 20.0])).tolist() \
        == [2.0, (2.0 * 5 + 4.0 * 10) / 15]


# --- pictures of a run -------------------------------------------------------------------------------------------

def test_placements_record_each_run_of_a_job_and_the_report_draws_a_gantt_chart_per_run(tmp_path):
    import pandas as pd

    from simcluster.api import load_trace, simulate
    from simcluster.config import SimConfig
    from simcluster.metrics.placements import Placements

    jobs = pd.DataFrame({"submit_time": [0, 10], "gpu_num": [8, 8], "duration": [1000, 50]})
    where = Placements()
    simulate(load_trace(jobs, nodes=1), SimConfig(policy="srtf"), observers=[where])
    runs = where.frame()
    assert runs[["job_id", "start", "end"]].values.tolist() == [["0", 0.0, 10.0], ["1", 10.0, 60.0],
                                                                ["0", 60.0, 1090.0]]  # preempted; resumed with 40 s of restore
    assert set(runs["gpus"]) == {"0,1,2,3,4,5,6,7"}


def test_a_large_run_is_sampled_to_a_readable_gantt_and_a_window_chooses_the_stretch():
    import pandas as pd

    from simcluster.experiments.pictures import MAX_BARS, MAX_NODES, gantt_of, parse_window

    nodes = [f"vc/n{i}" for i in range(100)]
    rows = [[f"j{i}", "vc", nodes[i % 100], f"{i % 8}", i * 60.0, i * 60.0 + 30.0] for i in range(20_000)]
    placements = pd.DataFrame(rows, columns=["job_id", "vc", "node", "gpus", "start", "end"])
    chart = gantt_of("big", placements, 0.0, {"makespan": 1.2e6})
    assert len(chart.rows) == MAX_NODES and chart.rows[:2] == ["vc/n0", "vc/n3"] and chart.rows[-1] == "vc/n99"
    assert len(chart.bars) <= MAX_BARS and "40 of 100 nodes" in chart.note and "--gantt-window" in chart.note
    window = gantt_of("big", placements, 0.0, {"makespan": 1.2e6}, parse_window("10h:11h"))
    assert window.bars["start"].min() >= 10 - 0.5 / 60 and window.bars["end"].max() <= 11 + 0.5 / 60
    assert window.hours == (10.0, 11.0)
    with pytest.raises(ValueError, match="end must come after the start"):
        parse_window("2h:1h")


def test_report_gantt_window_reaches_the_charts(tmp_path, monkeypatch):
    """``report --gantt-window`` draws that stretch and says so; a window that is no START:END is refused.

    Once failed in a full run on a loaded machine (an AssertionError on an exit code, which hid the cause), never
    alone.  Everything it reads is its own: its trace, run and report folders under ``tmp_path``, the current
    folder too (``run`` and ``report`` look up cwd-relative names: inputs, the folders they must not replace), a
    fixed policy and seed rather than the defaults; and a command that raises does so here with its traceback
    (``catch_exceptions=False``) instead of ending in an exit code to compare."""
    from simcluster.traces.synth import SynthSpec, save_trace, synthesize

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    trace = save_trace(synthesize(SynthSpec(jobs=80, nodes=2, vcs=1, seed=1)), tmp_path / "t")
    ran = runner.invoke(app, ["run", "--trace", str(trace), "--policy", "fifo", "--seed", "0", "--placements",
                              "--out", str(tmp_path / "run"), "-q"], catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    assert (tmp_path / "run" / "placements.csv").is_file()
    done = runner.invoke(app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "r"), "--gantt-window",
                               "0:6h", "-q"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert (tmp_path / "r" / "gantt-1.png").is_file()
    assert "from 0 h to 6 h" in (tmp_path / "r" / "report.html").read_text()
    bad = runner.invoke(app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "r2"), "--gantt-window", "6h"],
                        catch_exceptions=False)
    assert bad.exit_code == 2 and "START:END" in bad.output, bad.output
    assert not (tmp_path / "r2").exists()
