"""What runs given a reliability option add to their results and reports (docs/failures.md, "In sweeps and reports"):
the GPU-time by cause over time, the report's Reliability table and pictures, ETTR intervals over replicas and
the ETTR columns of a sweep's runs.csv; and that runs without those options are reported as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments.replicas import interval
from simcluster.experiments.report import write_report

sys.path.insert(0, str(Path(__file__).parent))
from test_reliability_engine import COSTS, Scripted, one_job

PNG = b"\x89PNG\r\n\x1a\n"


def test_gpu_time_by_cause_over_time_puts_each_cause_where_it_happened():
    # one 8-GPU job, checkpoints every 1000 s of progress costing 10 s, restart 100 s; a fault at 2500 loses the
    # 480 s done since the checkpoint written at 2010-2020 and keeps the node down to 3100 (test_reliability_engine)
    result = simulate(one_job(), SimConfig(**COSTS), faults=Scripted((0, 2500.0, 3100.0)))
    series = result.summary["gpu_time_by_cause_over_time"]
    assert series["bins"] == 100 and series["start"] == 0 and series["bin_s"] == pytest.approx(112.7)
    edges = series["start"] + series["bin_s"] * np.arange(101)
    got = {name: np.array(values) for name, values in series["gpu_seconds"].items()}

    def within(a: float, b: float) -> np.ndarray:  # GPU-seconds of 8 GPUs over [a, b] in each bin
        return 8 * np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0, None)

    assert got["lost"] == pytest.approx(within(2020, 2500), abs=1e-3)
    assert got["down"] == pytest.approx(within(2500, 3100), abs=1e-3)
    assert got["idle"].sum() == pytest.approx(0, abs=1e-6)
    # every bin adds up to the cluster's 8 GPUs × the bin; the bins add up to the run's totals
    assert sum(got.values()) == pytest.approx(np.full(100, 8 * series["bin_s"]), abs=1e-2)
    for cause, total in result.summary["gpu_seconds_by_cause"].items():
        assert got[cause].sum() == pytest.approx(total, abs=0.1), cause


def test_without_reliability_options_there_is_no_series():
    plain = simulate(one_job(), SimConfig(node_mtbf=5000.0, checkpoint_interval=1000.0))
    assert "gpu_time_by_cause_over_time" not in plain.summary


def sweep(out: Path, *options: str) -> Path:
    done = CliRunner().invoke(app, ["sweep", "--trace", "synth:jobs=40,nodes=4,vcs=1,seed=2", "--policy", "fifo,sjf",
                                    *options, "--out", str(out), "--workers", "1", "--quiet"])
    assert done.exit_code == 0, done.output
    return out


FAULTY = ("--set", "faults=mtbf=12h", "--set", "checkpoint_cost=60", "--set", "restart_cost=300", "--set",
          "checkpoint_interval=1800", "--replicas", "4", "--perturb", "seeds")


def test_a_report_of_faulty_runs_has_the_reliability_table_pictures_and_intervals(tmp_path):
    folder = sweep(tmp_path / "sweep", *FAULTY)
    runs = pd.read_csv(folder / "runs.csv")
    summaries = {p.parent.name: json.loads(p.read_text()) for p in (folder / "runs").glob("*/summary.json")}
    for row in runs.itertuples():  # the sweep's runs.csv: each run's own ETTR figures
        summary = summaries[row.run_id]
        assert (row.ettr_mean, row.ettr_gpu_weighted, row.interruptions) == pytest.approx(
            (summary["ettr_mean"], summary["ettr_gpu_weighted"], summary["interruptions"]))
    replicas = pd.read_csv(folder / "replicas.csv")
    fifo = sorted((s for s in summaries.values() if s["policy"] == "fifo"), key=lambda s: s["sweep_run"]["replica"])
    values = [s["ettr_mean"] for s in fifo]
    assert len(set(values)) > 1  # the replicas' faults differ
    expected = interval(values)
    row = replicas[(replicas["configuration"] == "fifo") & (replicas["figure"] == "ettr_mean")].iloc[0]
    assert (row["mean"], row["low"], row["high"], row["n"]) == pytest.approx(
        (expected.mean, expected.low, expected.high, 4))

    report = write_report([folder], tmp_path / "report")
    assert {"reliability.csv", "gpu_time_by_cause.png", "ettr_by_size.png"} <= set(report.files)
    table = pd.read_csv(tmp_path / "report" / "reliability.csv").set_index("label")
    assert table.loc["fifo", "ettr_mean"] == pytest.approx(expected.mean)
    assert (table.loc["fifo", "ettr_mean_low"], table.loc["fifo", "ettr_mean_high"]) == pytest.approx(
        (expected.low, expected.high))
    weighted = interval([s["ettr_gpu_weighted"] for s in fifo])
    assert table.loc["fifo", "ettr_gpu_weighted_high"] == pytest.approx(weighted.high)
    shares = np.mean([s["gpu_share_by_cause"]["down"] for s in fifo])
    assert table.loc["fifo", "gpu_share_down"] == pytest.approx(shares)
    comparison = pd.read_csv(tmp_path / "report" / "comparison.csv")
    assert comparison.loc[comparison["vc"] == "all", "ettr_mean_low"].notna().all()
    page = (tmp_path / "report" / "report.html").read_text()
    section = page[page.index('<h2 id="reliability">'):]
    # the answer first: the Reliability section leads, before the table of every figure and the paired differences
    assert page.index('<h2 id="reliability">') < page.index("<table><thead>") < page.index("Paired differences")
    assert f"{expected.mean:.3f} [{expected.low:.3f}–{expected.high:.3f}]" in section
    assert "gpu_time_by_cause.png: The cluster&#x27;s GPU-time by cause over time" in page
    assert 'alt="ettr_by_size.png"' in page
    markdown = (tmp_path / "report" / "comparison.md").read_text()
    assert markdown.startswith("## Reliability") and "mean ETTR" in (tmp_path / "report" / "differences.csv").read_text()
    for name in ("gpu_time_by_cause.png", "ettr_by_size.png"):
        assert (tmp_path / "report" / name).read_bytes().startswith(PNG)


def test_a_report_of_runs_without_reliability_options_is_as_before(tmp_path):
    folder = sweep(tmp_path / "sweep")
    header = (folder / "runs.csv").read_text().splitlines()[0].split(",")
    assert not {"ettr_mean", "ettr_gpu_weighted", "interruptions"} & set(header)
    assert header[header.index("unfinished_jobs") + 1] == "sim_cpu_seconds"
    report = write_report([folder], tmp_path / "report")
    assert not {"reliability.csv", "gpu_time_by_cause.png", "ettr_by_size.png"} & set(report.files)
    assert "ettr" not in (tmp_path / "report" / "comparison.csv").read_text()
    assert "ettr" not in (tmp_path / "report" / "runs.csv").read_text()
    assert "Reliability" not in (tmp_path / "report" / "report.html").read_text()
