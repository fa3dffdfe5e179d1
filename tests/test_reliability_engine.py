"""Failures by model in a run, and what they cost a job (simcluster/engine/reliability.py, docs/failures.md).

Hand-worked cases: one job, one fault at a known time (its lost work, checkpoint and restart charges), a
spare swap, exclusion after N faults; the simulated mean ETTR held to the closed form at a few points; bad
input named; the no-progress guard ends runs that the new costs would keep going for ever.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import ConfigError, SimConfig
from simcluster.engine import Simulation
from simcluster.engine.failures import NoProgressError
from simcluster.faults import RateModel, Repair, expected_wall_time, fit_log
from simcluster.faults.models import Outage, Outages
from simcluster.job import Job
from simcluster.run import resolve_run


class Scripted:
    """A failure model of given outages (server, down at, up at), seconds from the run's start."""

    def __init__(self, *outages: tuple[int, float, float], rate: float = 1e-6) -> None:
        self.given = [Outage(server, down, up, "test") for server, down, up in outages]
        self.rate = rate

    def node_rate(self, gpus_per_node: int) -> float:
        return self.rate

    def outages(self, nodes: int, gpus_per_node: int, horizon_s: float, seed: int) -> Outages:
        given = sorted(self.given, key=lambda o: (o.down_at, o.node))

        class Fixed(Outages):
            def stream(self) -> Iterator[Outage]:
                return iter(given)

        return Fixed(nodes, horizon_s)


def one_job(gpus: int = 8, duration: float = 10_000, nodes: int = 1) -> object:
    return load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [gpus], "duration": [duration]}), nodes=nodes)


def row(result) -> pd.Series:
    return result.jobs.iloc[0]


COSTS = {"checkpoint_interval": 1000.0, "checkpoint_cost": 10.0, "restart_cost": 100.0}


def test_one_fault_costs_the_work_since_the_checkpoint_and_the_restart():
    # checkpoints begin at progress 1000 (t=1000-1010) and 2000 (t=2010-2020); at t=2500 progress is 2480: 480 s
    # lost. The node is down until 3100; the job restarts there, owes 100 s, resumes from 2000 at 3200 and needs
    # 8000 s and 7 more checkpoints (3000 … 9000): it ends at 3200 + 8000 + 70 = 11270.
    result = simulate(one_job(), SimConfig(**COSTS), faults=Scripted((0, 2500.0, 3100.0)))
    job = row(result)
    assert job["end_time"] == pytest.approx(11_270)
    assert job["lost_work"] == pytest.approx(480)
    assert (job["checkpoint_s"], job["restart_s"], job["interruptions"], job["checkpoints"]) == (90, 100, 1, 9)
    assert job["requeue_s"] == pytest.approx(600)
    assert job["busy_time"] == pytest.approx(10_000 + 90 + 100 + 480)
    assert job["ettr"] == pytest.approx(10_000 / 11_270)
    causes = result.summary["gpu_seconds_by_cause"]
    assert causes["down"] == pytest.approx(600 * 8)
    assert causes["lost"] == pytest.approx(480 * 8) and causes["checkpoint"] == pytest.approx(90 * 8)
    assert sum(causes.values()) == pytest.approx(8 * 11_270)


def test_a_fault_during_a_checkpoint_loses_that_checkpoint():
    # the checkpoint at progress 2000 is written from t=2010 to 2020; a fault at 2015 loses it: back to 1000
    result = simulate(one_job(), SimConfig(**COSTS), faults=Scripted((0, 2015.0, 2115.0)))
    job = row(result)
    assert job["lost_work"] == pytest.approx(1000)
    # paid: 10 (first) + 5 (the one cut short) + 8 more (2000 … 9000) × 10
    assert job["checkpoint_s"] == pytest.approx(95)
    assert job["end_time"] == pytest.approx(2115 + 100 + 9000 + 80)


def test_a_spare_takes_the_failed_nodes_place_and_the_job_keeps_its_gpus():
    config = SimConfig(**COSTS, spare_nodes=1, spare_swap=50.0)
    result = simulate(one_job(), config, faults=Scripted((0, 2500.0, 3100.0)))
    job = row(result)
    assert job["requeue_s"] == 0 and job["restarts"] == 1 and job["interruptions"] == 1
    assert job["restart_s"] == pytest.approx(150)
    assert job["end_time"] == pytest.approx(2500 + 150 + 8000 + 70)
    failures = result.summary["failures"]
    assert failures["spare_swaps"] == 1 and result.summary["gpu_seconds_by_cause"]["down"] == 0


def test_a_job_on_several_nodes_stops_whole():
    result = simulate(one_job(gpus=16, nodes=2), SimConfig(**COSTS), faults=Scripted((1, 2500.0, 3100.0)))
    job = row(result)
    assert job["interruptions"] == 1 and job["end_time"] == pytest.approx(11_270)


def test_a_server_is_taken_out_at_its_nth_fault_within_the_window():
    # two nodes; node 0 fails at 100 and at 5000 (within a day): out for good; the job moves to node 1
    faults = Scripted((0, 100.0, 200.0), (0, 5000.0, 5100.0), (0, 50_000.0, 50_100.0))
    trace = load_trace(pd.DataFrame({"submit_time": [0, 0], "gpu_num": [8, 8], "duration": [20_000, 100]}), nodes=2)
    result = simulate(trace, SimConfig(exclude_after="2/1"), faults=faults)
    excluded = result.summary["failures"]["excluded_servers"]
    assert [(e["server"], e["node"], e["at"]) for e in excluded] == [(0, "cluster/n0", 5000.0)]
    assert result.summary["failures"]["faults"] == 2  # (the third fault of an excluded server is not one)
    end = result.summary["makespan"]
    assert result.summary["gpu_seconds_by_cause"]["down"] == pytest.approx(8 * (100 + end - 5000))


def test_an_excluded_node_takes_a_spare():
    config = SimConfig(exclude_after="1/1", spare_nodes=1, spare_swap=30.0)
    # the job's node: swapped at once (100 s lost, a 30 s swap), its failed server never comes back
    result = simulate(one_job(duration=1000), config, faults=Scripted((0, 100.0, 200.0)))
    assert result.summary["failures"]["spare_swaps"] == 1
    assert row(result)["end_time"] == pytest.approx(1000 + 100 + 30)
    # an idle node taken out: a spare takes its place after the swap time (down meanwhile)
    result = simulate(one_job(duration=1000, nodes=2), config, faults=Scripted((1, 100.0, 200.0)))
    assert result.summary["failures"]["excluded"] == 1 and result.summary["failures"]["spare_swaps"] == 1
    assert result.summary["gpu_seconds_by_cause"]["down"] == pytest.approx(8 * 30)


def test_young_daly_gives_each_job_the_interval_of_the_nodes_it_spans():
    from simcluster.faults import daly_interval

    trace = load_trace(pd.DataFrame({"submit_time": [0, 0], "gpu_num": [8, 32], "duration": [500_000, 500_000]}),
                       nodes=5)
    result = simulate(trace, SimConfig(faults="mtbf=20d,repair=1h", checkpoint_interval="young-daly",
                                       checkpoint_cost=60.0))
    rate = 1 / (20 * 86_400)
    assert result.jobs["checkpoint_interval_s"].tolist() == pytest.approx(
        [daly_interval(60, rate), daly_interval(60, 4 * rate)])


def test_the_fault_log_and_fit_drive_a_run(tmp_path):
    log = tmp_path / "faults.csv"
    log.write_text("node,start,end,class\nn0,2500,3100,GPU\nn0,900000,900100,GPU\n")
    result = simulate(one_job(), SimConfig(faults=str(log), **COSTS))
    assert row(result)["end_time"] == pytest.approx(11_270)
    # 2000 s into the log: the fault comes at 500, before the first checkpoint; down to 1100, restart to 1200
    offset = simulate(one_job(), SimConfig(faults=str(log), faults_offset=2000.0, **COSTS))
    assert row(offset)["lost_work"] == pytest.approx(500) and row(offset)["end_time"] == pytest.approx(11_290)
    fitted = fit_log(log, servers=4).save(tmp_path / "fitted.json")
    result = simulate(one_job(duration=2_000_000), SimConfig(faults=str(fitted), checkpoint_interval=3600.0, seed=2))
    assert result.summary["failures"]["node_rate_per_day"] == pytest.approx(2 / (4 * 900_100 - 700) * 86_400)
    assert result.summary["interruptions"] == row(result)["interruptions"] > 0


def test_without_reliability_options_nothing_is_added():
    plain = simulate(one_job(), SimConfig(node_mtbf=5000.0, checkpoint_interval=1000.0))
    assert "ettr" not in plain.jobs and "gpu_seconds_by_cause" not in plain.summary


@pytest.mark.parametrize(("settings", "words"), [
    ({"checkpoint_interval": "young"}, "checkpoint_interval' must be a time .seconds, or with units.* or young-daly"),
    ({"checkpoint_cost": "nan"}, "checkpoint_cost' must be a finite number"),
    ({"restart_cost": "-1"}, "restart_cost' must be at least 0"),
    ({"spare_swap": "inf"}, "spare_swap' must be a finite number"),
    ({"exclude_after": "3"}, "exclude_after' must be N/DAYS"),
    ({"exclude_after": "0/7"}, "exclude_after' needs N ≥ 1"),
])
def test_bad_settings_name_the_setting(settings, words):
    with pytest.raises(ConfigError, match=words):
        SimConfig.from_settings(settings)


@pytest.mark.parametrize(("config", "words"), [
    (SimConfig(checkpoint_interval="young-daly", node_mtbf=1000.0), "young-daly needs --checkpoint-cost"),
    (SimConfig(checkpoint_interval="young-daly", checkpoint_cost=60.0), "young-daly needs a failure rate"),
    (SimConfig(faults="mtbf=1d", node_mtbf=1000.0), "--faults or --node-mtbf, not both"),
    (SimConfig(spare_nodes=2), "need failures"),
    (SimConfig(faults="mtbf=1d,repiar=1h"), "'repiar=1h' is not one of mtbf=, repair="),
    (SimConfig(faults="mtbf=-1d"), "--faults mtbf must be at least 0"),
    (SimConfig(faults="no/such/log.csv"), "no/such/log.csv: no such fault log"),
])
def test_bad_fault_settings_are_refused_in_words(config, words):
    with pytest.raises(ValueError, match=words):
        simulate(one_job(), config)


def test_a_bad_fault_log_is_named_with_its_line(tmp_path):
    log = tmp_path / "bad.csv"
    log.write_text("node,start,end\nn0,10,nan\n")
    with pytest.raises(ValueError, match=r"bad.csv, line 2, field 'end'"):
        simulate(one_job(), SimConfig(faults=str(log)))


@pytest.mark.parametrize("costs", [
    {"checkpoint_interval": 1000.0, "checkpoint_cost": 20_000.0},  # a checkpoint outlasts the nodes' MTBF
    {"checkpoint_interval": 1000.0, "restart_cost": 20_000.0},  # so does a restart, exposed to faults
])
def test_the_no_progress_guard_ends_runs_the_costs_would_keep_going(costs):
    config = SimConfig(faults="mtbf=2000,repair=1", restart_limit=5, **costs)
    with pytest.raises(NoProgressError, match="without a fault"):
        simulate(one_job(duration=100_000), config)
    abandoned = simulate(one_job(duration=100_000), SimConfig(faults="mtbf=2000,repair=1", restart_limit=5,
                                                              on_no_progress="abandon", spare_nodes=2, **costs))
    assert abandoned.summary["abandoned_jobs"] == ["0"]


def test_the_simulated_ettr_agrees_with_the_closed_form():
    # one 32-GPU job (4 nodes), exponential faults, spares (so a fault costs the swap and the restart, which
    # faults may strike too: the closed form with the downtime exposed); 200 replicas per point
    work, cost, restart, nodes = 30_000.0, 60.0, 120.0, 4
    for mtbf, interval in ((40_000.0, 1500.0), (20_000.0, 600.0), (80_000.0, 4000.0)):
        model = RateModel.from_mtbf(mtbf, Repair.fixed(30.0))
        walls = []
        for seed in range(200):
            config = SimConfig(seed=seed, checkpoint_interval=interval, checkpoint_cost=cost, restart_cost=restart,
                               spare_nodes=3)
            job = Job(index=0, job_id="0", vc="a", gpu_num=8 * nodes, submit_time=0, duration=work)
            Simulation([job], resolve_run(config=config, cluster={"a": nodes}, faults=model)).run()
            walls.append(job.end_time - job.start_time)
        mean, half = np.mean(walls), 1.96 * np.std(walls, ddof=1) / math.sqrt(len(walls))
        expected = expected_wall_time(work, interval, cost, nodes / mtbf, restart, exposed=True)
        assert mean - half <= expected <= mean + half, (mtbf, interval, mean, half, expected)


def test_the_reliability_study_writes_its_table_and_picture(tmp_path):
    from simcluster.experiments.reliability import parse_intervals, reliability_study

    study = reliability_study([8, 64], parse_intervals("10m..2h", 3), "mtbf=5d,repair=1h", replicas=4,
                              work=86_400.0)
    table = study.table
    assert len(table) == 2 * 4 and table["daly"].sum() == 2  # 3 intervals and Daly's, per size
    assert ((table["ettr_low"] <= table["ettr_mean"]) & (table["ettr_mean"] <= table["ettr_high"])).all()
    assert table["closed_form"].between(0, 1).all()
    written = study.write(tmp_path)
    assert [p.name for p in written] == ["reliability.csv", "reliability.png"]
    assert pd.read_csv(written[0]).shape == table.shape


def test_lucid_sim_reliability_runs_from_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from simcluster.cli import app

    runner = CliRunner()
    done = runner.invoke(app, ["reliability", "--faults", "mtbf=5d,repair=1h", "--gpus", "8,16", "--checkpoint-interval",
                               "30m,1h", "--replicas", "3", "--work", "1d", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "reliability.png").exists() and "Daly" in done.output
    bad = runner.invoke(app, ["reliability", "--faults", "mtbf=5d", "--gpus", "12", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--gpus 12: a job of whole nodes" in bad.output


def test_lucid_sim_run_takes_the_fault_options(tmp_path):
    import json

    from typer.testing import CliRunner

    from simcluster.cli import app

    trace = tmp_path / "jobs.csv"
    trace.write_text("submit_time,gpu_num,duration\n0,8,50000\n10,16,40000\n20,1,3000\n")
    log = tmp_path / "faults.csv"
    log.write_text("node,start,end,class\nn0,5000,8000,GPU\nn1,9000,9500,NIC\nn2,30000,31000,GPU\n")
    out = tmp_path / "run"
    done = CliRunner().invoke(app, ["run", "--trace", str(trace), "--nodes", "4", "--faults", str(log),
                                    "--checkpoint-interval", "young-daly", "--checkpoint-cost", "60",
                                    "--restart-cost", "300", "--spare-nodes", "1", "--exclude-after", "2/1",
                                    "--out", str(out), "--quiet"])
    assert done.exit_code == 0, done.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["checkpoint_interval"] == "young-daly" and summary["failures"]["faults"] >= 1
    assert set(summary["gpu_share_by_cause"]) == {"productive", "lost", "checkpoint", "restart", "other_overhead",
                                                 "down", "idle"}
    jobs = pd.read_csv(out / "jobs.csv")
    assert {"interruptions", "checkpoint_s", "restart_s", "ettr"} <= set(jobs.columns)
    bad = CliRunner().invoke(app, ["run", "--trace", str(trace), "--nodes", "4", "--checkpoint-interval", "daily",
                                   "--out", str(tmp_path / "bad"), "--quiet"])
    assert bad.exit_code == 2 and "--checkpoint-interval" in bad.output and "young-daly" in bad.output


def test_a_job_that_never_finds_enough_servers_up_is_an_error_not_a_century_late_result():
    from simcluster.engine.failures import NoProgressError
    from simcluster.faults.models import MAX_HORIZON_S

    # one of its two servers is down from the start to the end of the faults' century: the 16-GPU job never fits
    never = Scripted((1, 0.0, MAX_HORIZON_S))
    with pytest.raises(NoProgressError, match=r"horizon \(100 years\) passed with 1 job\(s\) unfinished; the "
                                              r"largest, job .* of 16 GPUs.*--spare-nodes"):
        simulate(one_job(gpus=16, nodes=2), SimConfig(), faults=never)
    # the same server down for a day only: the job waits, then runs
    day = simulate(one_job(gpus=16, nodes=2), SimConfig(), faults=Scripted((1, 0.0, 86_400.0)))
    assert row(day)["start_time"] == pytest.approx(86_400)
