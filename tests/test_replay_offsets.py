"""Replays that sample the whole log (issue 54, item 2): ``--faults-offset random|TIME``, each seed its own offset,
the default for a reliability study's replicas, the offsets reported, and intervals that carry a fitted rate's own
uncertainty (simcluster/faults/replay.py, simcluster/faults/spec.py, simcluster/experiments/reliability.py;
docs/failures.md, "Replaying a log" and "A reliability study").

Kueue has no failure model of its own: its concept pages meet node failures only where Topology Aware Scheduling
replaces a failed node (TASFailedNodeReplacement, https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/).
Where a replay starts in a recorded log, and how uncertain a rate counted from one is, are ours to model.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import ConfigError, SimConfig
from simcluster.experiments.reliability import fault_free_ettr, rate_ratios, rate_widened, reliability_study
from simcluster.faults import LogReplay, ettr, fit_log, read_fault_log
from simcluster.faults.replay import random_offset
from simcluster.faults.spec import failure_model, offset_of, rate_evidence
from simcluster.limits import LimitError
from simcluster.paths import shared_data_dir

DAY = 86_400.0
INFINITEHBD = shared_data_dir() / "faults" / "infinitehbd" / "fault_trace.json"
runner = CliRunner()


def quiet_then_busy(tmp_path, servers: int = 4) -> str:
    """A 30-day log of ``servers`` servers: nothing in days 0–15, then a fault a day on each server (1 h each)."""
    rows = ["node,start,end,class"]
    for day in range(15, 30):
        for server in range(servers):
            start = day * DAY + server * 600
            rows.append(f"n{server},{start:.0f},{start + 3600:.0f},GPU")
    path = tmp_path / "faults.csv"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def one_job(duration: float, gpus: int = 8, nodes: int = 1) -> object:
    return load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [gpus], "duration": [duration]}), nodes=nodes)


def test_a_seed_draws_one_offset_and_the_seeds_cover_the_whole_span():
    span = 365 * DAY
    offsets = [random_offset(span, seed) for seed in range(400)]
    assert offsets[:3] == [random_offset(span, seed) for seed in range(3)]  # the same seed, the same offset
    assert all(0 <= o < span for o in offsets) and len(set(offsets)) == 400
    # uniform: every month of the year is some seed's start
    assert {int(o // (span / 12)) for o in offsets} == set(range(12))


def test_random_offset_in_failure_model_is_the_seed_s_draw_and_a_replay_wraps_round_the_log(tmp_path):
    log = tmp_path / "one.csv"
    log.write_text("node,start,end,class\nn0,100,3700,GPU\nn0,90000,90600,GPU\n")
    span = read_fault_log(log).span_s
    model = failure_model(str(log), "random", seed=5)
    assert isinstance(model, LogReplay) and model.offset_s == random_offset(span, 5)
    # 1,000 s before the log's end (its span ends with its last fault, at 90,600 s): that fault 400 s into the run,
    # then the log's first fault (at 100 s) 1,100 s into it: the replay wrapped round to the log's start
    late = failure_model(str(log), span - 1000)
    outages = [(o.down_at, o.up_at) for o in late.outages(1, 8, 5_000.0, seed=0).stream()]
    assert outages == [(400.0, 1000.0), (1100.0, 4700.0)]


def test_an_offset_takes_a_unit_and_one_past_the_log_or_on_a_rate_model_is_refused_in_words(tmp_path):
    log = quiet_then_busy(tmp_path)
    assert offset_of("90d") == 90 * DAY and offset_of(" Random ") == "random"
    assert failure_model(log, "10d").offset_s == 10 * DAY
    with pytest.raises(LimitError, match=r"--faults-offset must be at most the log's span, .* \(29\.1 days\), got '40d'"):
        failure_model(log, "40d")
    with pytest.raises(LimitError, match="--faults-offset must be random or a time into the log"):
        failure_model(log, "soon")
    with pytest.raises(LimitError, match="--faults-offset applies to a replayed fault log, not to a rate model"):
        failure_model("mtbf=10d", "random")


def test_run_takes_faults_offset_random_and_each_seed_replays_its_own_stretch(tmp_path):
    """A 5-day job on 4 nodes of a log quiet for 15 days: from day 0 it never fails; random offsets sample
    the busy half too, and a run with ``random`` is the run at the offset its seed draws."""
    log = quiet_then_busy(tmp_path)
    span = read_fault_log(log).span_s
    job = one_job(5 * DAY, gpus=32, nodes=4)
    costs = {"checkpoint_interval": 3600.0, "checkpoint_cost": 10.0, "restart_cost": 60.0}
    assert simulate(job, SimConfig(faults=log, **costs)).summary["failures"]["faults"] == 0
    faults = []
    for seed in range(8):
        drawn = simulate(job, SimConfig(faults=log, faults_offset="random", seed=seed, **costs)).summary
        given = simulate(job, SimConfig(faults=log, faults_offset=random_offset(span, seed), seed=seed, **costs))
        assert drawn["failures"] == given.summary["failures"] and drawn["ettr_mean"] == given.summary["ettr_mean"]
        assert drawn["failures"]["faults_offset_s"] == random_offset(span, seed)  # (the drawn offset, reported)
        faults.append(drawn["failures"]["faults"])
    assert max(faults) > 0 and min(faults) < max(faults)


def test_the_setting_reads_random_or_seconds_and_needs_a_log():
    assert SimConfig.from_settings({"faults": "x.csv", "faults_offset": "random"}).faults_offset == "random"
    assert SimConfig.from_settings({"faults": "x.csv", "faults_offset": "3600"}).faults_offset == 3600.0
    with pytest.raises(ConfigError, match="faults_offset' must be a time .seconds, or with units.* or random"):
        SimConfig.from_settings({"faults_offset": "sometime"})
    with pytest.raises(ConfigError, match="faults_offset' must be at least 0"):
        SimConfig.from_settings({"faults_offset": "-1"})


def test_a_study_of_a_log_gives_each_replica_its_own_offset_and_reports_them(tmp_path):
    """Before, every replica started at day 0 (the quiet stretch): an ETTR interval 0.001 wide."""
    log = quiet_then_busy(tmp_path)
    span = read_fault_log(log).span_s
    study = reliability_study([32], [3600.0], log, replicas=12, work=5 * DAY, spare_nodes=0)
    row = study.table.iloc[0]
    expected = [random_offset(span, seed) for seed in range(12)]
    assert row["offsets_days"] == ";".join(f"{o / DAY:.2f}" for o in expected)
    assert study.settings["faults_offset"] == "random"
    assert study.settings["offsets_days"] == [round(o / DAY, 4) for o in expected]
    runs = study.runs[~study.runs["daly"]]
    assert runs["offset_s"].tolist() == expected
    # the replicas that start in the quiet half lose nothing, those in the busy half lose to faults
    assert row["ettr_runs_low"] < row["ettr_runs_high"] and row["ettr_sd"] > 0
    fixed = reliability_study([32], [3600.0], log, replicas=4, work=5 * DAY, spare_nodes=0, faults_offset=0)
    assert fixed.settings["offsets_days"] == [0.0] * 4 and fixed.table["interruptions_mean"].iloc[0] == 0
    assert fixed.table["ettr_sd"].iloc[0] == 0


def test_a_rate_model_study_has_no_offsets_and_refuses_one(tmp_path):
    study = reliability_study([8], [1800.0], "mtbf=5d,repair=1h", replicas=2, work=DAY)
    assert study.settings["offsets_days"] is None and study.runs["offset_s"].isna().all()
    assert study.table["ettr_rate_low"].isna().all()  # a rate given by hand is taken as exact
    with pytest.raises(LimitError, match="--faults-offset applies to a replayed fault log"):
        reliability_study([8], [1800.0], "mtbf=5d,repair=1h", replicas=2, work=DAY, faults_offset="random")


def test_the_rate_s_interval_is_garwood_s_and_a_few_faults_widen_the_study_s_interval(tmp_path):
    """A 6-fault log gave an interval 0.001 wide: the rate counted from 6 faults is known to a factor of ~2.6."""
    low, high = rate_ratios(6, 1e6)
    assert (low, high) == pytest.approx((0.3670, 2.1766), abs=1e-4)  # χ²(0.025; 12)/12, χ²(0.975; 14)/12
    log = tmp_path / "six.csv"
    log.write_text("node,start,end,class\n" + "".join(f"n{i % 3},{i * 5 * DAY:.0f},{i * 5 * DAY + 3600:.0f},GPU\n"
                                                      for i in range(6)))
    assert rate_evidence(str(log))[0] == 6
    study = reliability_study([24], [3600.0], str(log), replicas=6, work=10 * DAY, spare_nodes=0)
    row = study.table.iloc[0]
    assert row["ettr_rate_low"] < row["ettr_low"] <= row["ettr_mean"] <= row["ettr_high"] <= row["ettr_rate_high"]
    assert 0 <= row["ettr_rate_low"] and row["ettr_rate_high"] <= 1
    interval = study.settings["node_rate_interval_per_day"]
    assert interval[0] < study.settings["node_rate_per_day"] < interval[1]


def test_a_fitted_json_carries_its_faults_and_exposure_into_the_interval(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text("node,start,end,class\nn0,1000,4600,GPU\nn1,400000,403600,GPU\nn2,800000,803600,GPU\n")
    fitted = fit_log(log, servers=3).save(tmp_path / "fitted.json")
    document = json.loads(fitted.read_text())
    faults, exposure = rate_evidence(str(fitted))
    assert faults == 3 and exposure == pytest.approx(document["exposure_server_days"] * DAY)
    study = reliability_study([16], [3600.0], str(fitted), replicas=3, work=DAY, spare_nodes=2)
    assert study.table["ettr_rate_low"].notna().all() and study.settings["offsets_days"] is None


@pytest.mark.parametrize("nodes, mtbf_days, interval", [(8, 30, 1800.0), (512, 30, 1800.0), (4, 5, 7200.0)])
def test_the_first_order_propagation_is_conservative_against_the_closed_form(nodes, mtbf_days, interval):
    """At the rate's interval ends the exact (closed-form) ETTR lies inside the propagated interval."""
    work, cost, downtime = 2 * DAY, 60.0, 300.0
    rate = nodes / (mtbf_days * DAY)
    at = ettr(interval, cost, rate, downtime, work=work, exposed=True)
    ratio_low, ratio_high = rate_ratios(6, 1e6)
    low, high = rate_widened(at, at, fault_free_ettr(work, interval, cost), ratio_low, ratio_high)
    exact_low = ettr(interval, cost, rate * ratio_high, downtime, work=work, exposed=True)
    exact_high = ettr(interval, cost, rate * ratio_low, downtime, work=work, exposed=True)
    assert low <= exact_low + 1e-9 and exact_high <= high + 1e-3
    assert exact_low - low < 0.06 and high - exact_high < 0.006


def test_reliability_prints_the_offsets_and_writes_them_to_its_csv(tmp_path):
    log = quiet_then_busy(tmp_path)
    done = runner.invoke(app, ["reliability", "--faults", log, "--gpus", "16", "--checkpoint-interval", "1h",
                               "--replicas", "3", "--work", "2d", "--spare-nodes", "0", "--checkpoint-cost", "1m",
                               "--out", str(tmp_path / "study")])
    assert done.exit_code == 0, done.output
    assert "offsets into the log (drawn from each seed), days:" in done.output
    assert "rate counted from 60 faults" in done.output
    table = pd.read_csv(tmp_path / "study" / "reliability.csv")
    span = read_fault_log(log).span_s
    assert table["offsets_days"].iloc[0] == ";".join(f"{random_offset(span, s) / DAY:.2f}" for s in range(3))
    given = runner.invoke(app, ["reliability", "--faults", log, "--gpus", "16", "--checkpoint-interval", "1h",
                                "--replicas", "2", "--work", "1d", "--faults-offset", "20d", "--json",
                                "--out", str(tmp_path / "given")])
    assert given.exit_code == 0, given.output
    document = json.loads(given.stdout)
    assert document["settings"]["offsets_days"] == [20.0, 20.0] and document["settings"]["faults_offset"] == 20 * DAY
    bad = runner.invoke(app, ["reliability", "--faults", "mtbf=5d", "--gpus", "8", "--checkpoint-interval", "1h",
                              "--replicas", "2", "--work", "1h", "--faults-offset", "random", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--faults-offset applies to a replayed fault log" in bad.output


@pytest.mark.skipif(not INFINITEHBD.is_file(), reason="the InfiniteHBD log is not in ../shared/data/faults")
def test_the_infinitehbd_study_samples_the_year_not_its_quiet_first_month():
    """Its days 0–30 hold 11 of 584 faults: every replica there read ETTR 0.9435 with an interval 0.001 wide."""
    study = reliability_study([64], [3600.0], str(INFINITEHBD), replicas=8, work=30 * DAY, spare_nodes=0)
    offsets = study.settings["offsets_days"]
    assert max(offsets) - min(offsets) > 120 and sum(o > 30 for o in offsets) >= 6
    assert study.settings["rate_faults"] == 584
    row = study.table.iloc[0]
    assert row["ettr_high"] - row["ettr_low"] > 0.01 and row["ettr_rate_low"] <= row["ettr_low"]
    assert math.isclose(study.settings["node_rate_interval_per_day"][0] / study.settings["node_rate_per_day"],
                        rate_ratios(584, 1.0)[0], rel_tol=1e-9)
