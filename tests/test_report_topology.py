"""Reports of runs on a cluster with a topology: ``topology_spanning.png`` and ``topology_stranded.png``, their
captions, and bars that are the runs' own figures from ``summary.json`` (mean, min–max over seeds, 95 % interval
over replicas); a report of runs without a topology has none of it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments import plots
from simcluster.experiments.aggregate import configurations
from simcluster.experiments.pictures import (
    FIT_BUT_WAITED,
    INTERVAL,
    MIN_MAX_REPLICAS,
    MIN_MAX_SEEDS,
    ONE_RUN,
    QUEUEING,
    SHARING_UPLINK,
    runs_bar,
    topology_bars,
)
from simcluster.experiments.replicas import interval
from simcluster.experiments.report import TOPOLOGY_PLOTS, collect, write_report
from simcluster.experiments.runs import load_trace_arg
from simcluster.experiments.sweep import build_grid, parse_sets, run_sweep
from simcluster.results import write_run

# 8 nodes: 2 blocks of 2 racks of 2 nodes (a rack holds 16 GPUs, the largest job of the trace below)
TOPOLOGY = "node,block,rack\n" + "".join(f"h{i},b{i // 4},r{i // 2}\n" for i in range(8))
TRACE = "synth:jobs=120,nodes=8,vcs=1,sizes=pow2:16,arrivals=poisson,load=0.9,seed=3"
SLOWDOWN = "block=0.5,rack=0.2,node=0.05"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def topology(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("topology") / "topo.csv"
    path.write_text(TOPOLOGY)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, topology) -> dict[str, Path]:
    """``racks``: every job requires a rack (tas-best-fit); ``random-1``, ``random-2``: no request, random
    placement under link contention, seeds 1 and 2 (one configuration); ``plain``: no topology."""
    root = tmp_path_factory.mktemp("runs")
    trace = load_trace_arg(TRACE)
    settings = {
        "racks": SimConfig(topology=str(topology), topology_slowdown=SLOWDOWN, placement="tas-best-fit",
                           topology_request="required:rack"),
        **{f"random-{seed}": SimConfig(topology=str(topology), topology_slowdown=SLOWDOWN, placement="random",
                                       link_contention=0.1, seed=seed) for seed in (1, 2)},
        "plain": SimConfig(placement="random", seed=1),
    }
    folders = {}
    for name, config in settings.items():
        result = simulate(trace, config)
        folders[name] = write_run(root / name, result.tables(), result.summary)
    return folders


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def captions(page: str) -> dict[str, str]:
    return {name: html.unescape(text) for name, text in re.findall(r"<figcaption>([\w.-]+\.png): (.*?)</figcaption>",
                                                                   page)}


def topology_runs(runs: dict[str, Path]) -> list[Path]:
    return [runs["racks"], runs["random-1"], runs["random-2"]]


def test_a_report_of_topology_runs_draws_both_pictures_and_captions_them(runs, tmp_path):
    report = write_report(topology_runs(runs), tmp_path / "report")
    assert set(TOPOLOGY_PLOTS) <= set(report.files)
    for name in TOPOLOGY_PLOTS:
        data = (tmp_path / "report" / name).read_bytes()
        assert data.startswith(PNG), name
        image = matplotlib.image.imread(tmp_path / "report" / name)
        assert image.shape[:2] == (plots.HEIGHT, plots.WIDTH), name
        assert np.ptp(image[..., :3]) > 0.5, f"{name} is blank"
    said = captions((tmp_path / "report" / "report.html").read_text())
    assert said["topology_spanning.png"].startswith("Topology: the share of the jobs that started (left) and of the "
                                                    "GPU-time held (right) that spanned each level")
    assert "min–max over seeds" in said["topology_spanning.png"]
    assert "fit but waited" in said["topology_stranded.png"]
    assert "shared an uplink with another job (Crux's figure" in said["topology_stranded.png"]
    markdown = (tmp_path / "report" / "comparison.md").read_text()
    section = markdown[markdown.index("## Topology"):]
    for name in TOPOLOGY_PLOTS:
        assert f"![{name}]({name})" in section and f"{name}: {said[name]}" in section


def test_the_report_command_draws_them_too(runs, tmp_path):
    done = CliRunner().invoke(app, ["report", *map(str, topology_runs(runs)), "--out", str(tmp_path / "r"), "-q"],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    for name in TOPOLOGY_PLOTS:
        assert (tmp_path / "r" / name).read_bytes().startswith(PNG)
    assert set(TOPOLOGY_PLOTS) <= set(captions((tmp_path / "r" / "report.html").read_text()))


def bars_of(paths: list[Path]):
    groups = configurations(collect(paths))
    label = {r.folder: g.label for g in groups for r in g.runs}
    return topology_bars(groups), label


def test_the_bars_are_the_runs_figures_from_their_summaries(runs):
    found, label = bars_of(topology_runs(runs))
    assert found is not None and found.levels == ["block", "rack", "node"] and found.sharing
    racks, one, two = summary(runs["racks"]), summary(runs["random-1"]), summary(runs["random-2"])
    alone, seeded = label[runs["racks"]], label[runs["random-1"]]
    assert seeded == label[runs["random-2"]] != alone
    for figure in ("jobs_spanning", "gpu_time_spanning", "stranded_share"):
        for level in found.levels:
            value = racks["topology"][figure][level]
            assert found.bars[figure][alone][level] == (value, value, value)
            pair = [one["topology"][figure][level], two["topology"][figure][level]]
            assert found.bars[figure][seeded][level] == pytest.approx((np.mean(pair), min(pair), max(pair)))
    assert racks["topology"]["jobs_spanning"]["rack"] == 0  # a required rack is never spanned
    assert found.bars["jobs_spanning"][seeded]["rack"][0] > 0  # (else the test would show nothing)
    waited = found.bars[QUEUEING]
    share = racks["topology"]["fit_but_waited"]["share_of_queueing"]
    assert waited[alone] == {FIT_BUT_WAITED: (share, share, share)}  # no link contention: no uplink bar
    sharing = [one["link_contention"]["jobs_sharing_uplink"], two["link_contention"]["jobs_sharing_uplink"]]
    assert waited[seeded][SHARING_UPLINK] == pytest.approx((np.mean(sharing), min(sharing), max(sharing)))
    assert max(sharing) > 0
    assert found.kinds == sorted([MIN_MAX_SEEDS, ONE_RUN])


def test_runs_without_link_contention_have_no_uplink_bars(runs):
    found, _ = bars_of([runs["racks"]])
    assert found is not None and not found.sharing
    assert all(SHARING_UPLINK not in bars for bars in found.bars[QUEUEING].values())


def test_replicas_give_a_95_percent_interval_and_too_few_a_min_max():
    values = np.array([0.1, 0.4, 0.2, 0.3, 0.25])
    got = interval(values)
    assert runs_bar(values, 5, 5) == ((got.mean, got.low, got.high), INTERVAL)
    assert runs_bar(values[:2], 2, 2) == ((0.25, 0.1, 0.4), MIN_MAX_REPLICAS)
    # four replicas, but two lack the figure: too few for an interval
    assert runs_bar(np.array([0.3, np.nan, 0.1, np.nan]), 4, 4) == (pytest.approx((0.2, 0.1, 0.3)), MIN_MAX_REPLICAS)


def test_a_replica_sweep_on_a_topology_draws_intervals(topology, tmp_path):
    specs = build_grid([TRACE], ["fifo"], [0], parse_sets([f"topology={topology}", "placement=random",
                                                           "link_contention=0.1"]), replicas=3, perturb="seeds")
    assert run_sweep(specs, tmp_path / "sweep", workers=1).failed == 0
    found, _ = bars_of([tmp_path / "sweep"])
    assert found is not None and found.kinds == [INTERVAL]
    (label,) = found.bars["jobs_spanning"]
    spans = [summary(folder)["topology"]["jobs_spanning"]["block"]
             for folder in sorted((tmp_path / "sweep" / "runs").iterdir())]
    got = interval(spans)
    assert found.bars["jobs_spanning"][label]["block"] == pytest.approx((got.mean, got.low, got.high))
    write_report([tmp_path / "sweep"], tmp_path / "report")
    said = captions((tmp_path / "report" / "report.html").read_text())
    assert "error bars: 95 % interval over 3 replicas" in said["topology_stranded.png"]


def test_a_report_of_runs_without_a_topology_has_no_topology_pictures(runs, tmp_path):
    assert "topology" not in summary(runs["plain"])
    found, _ = bars_of([runs["plain"]])
    assert found is None
    report = write_report([runs["plain"]], tmp_path / "report")
    assert not set(TOPOLOGY_PLOTS) & set(report.files)
    assert "Topology" not in (tmp_path / "report" / "comparison.md").read_text()
    assert "topology_" not in (tmp_path / "report" / "report.html").read_text()


def test_beside_runs_without_one_only_the_topology_runs_get_bars(runs, tmp_path):
    found, label = bars_of([runs["plain"], runs["racks"]])
    assert found is not None and [g.label for g in found.groups] == [label[runs["racks"]]]
    assert set(found.bars["jobs_spanning"]) == {label[runs["racks"]]}
    report = write_report([runs["plain"], runs["racks"]], tmp_path / "report")
    assert set(TOPOLOGY_PLOTS) <= set(report.files)
