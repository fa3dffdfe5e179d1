"""Issue 54, what was left: a run that can never finish is said at once, and the fleet warning is in the error.

A job of D seconds without checkpoints on n nodes that fail at rate λ survives a run with probability exp(−λ·n·D);
within the faults' horizon H it finishes with probability at most (λ·n·H + 1)·exp(−λ·n·D)
(:func:`~simcluster.engine.reliability.finish_chance`).  At most 1e-9, the run stops at once with the no-progress
error naming the job and that chance (docs/failures.md, "A job that can practically never finish"), instead of
replaying a century of faults; runs that finish are unchanged.  Faults are counted, never timed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import simcluster
from simcluster.api import load_trace, simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.engine import NoProgressError
from simcluster.engine.reliability import FinishChance, finish_chance, longest_stretch
from simcluster.experiments.reliability import reliability_study
from simcluster.metrics.observer import Observer

runner = CliRunner()
HOUR, DAY = 3600.0, 86_400.0
DEFAULT_TRACE = f"{simcluster.__path__[0]}/data/default_trace"


class Downs(Observer):
    """Counts the nodes taken down: the faults the run replayed."""

    def __init__(self) -> None:
        self.count = 0

    def on_node_down(self, node_name: str, now: float) -> None:
        self.count += 1


def trace(jobs: list[tuple[str, int, float, float]], nodes: int) -> object:
    """(job_id, GPUs, submit time, duration) on one VC of ``nodes`` 8-GPU nodes."""
    return load_trace(pd.DataFrame({"job_id": [j[0] for j in jobs], "gpu_num": [j[1] for j in jobs],
                                    "submit_time": [j[2] for j in jobs], "duration": [j[3] for j in jobs]}),
                      nodes=nodes)


@pytest.mark.parametrize("exposed_h, horizon_h", [(4.0, 40.0), (8.0, 100.0), (6.0, 30.0)])
def test_the_bound_holds_over_a_monte_carlo_of_poisson_faults_and_is_not_vacuous(exposed_h, horizon_h):
    """Runs restart at each fault (rate 1/h); the job finishes once a gap between faults reaches E before H."""
    rng = np.random.default_rng(7)
    trials, gaps_per_trial = 20_000, int(4 * horizon_h) + 40
    gaps = rng.exponential(1.0, (trials, gaps_per_trial))
    starts = np.concatenate([np.zeros((trials, 1)), np.cumsum(gaps, axis=1)[:, :-1]], axis=1)
    finished = ((gaps >= exposed_h) & (starts + exposed_h <= horizon_h)).any(axis=1).mean()
    bound = finish_chance(1 / HOUR, exposed_h * HOUR, horizon_h * HOUR)
    assert finished <= bound + 3 * np.sqrt(bound * (1 - bound) / trials) + 1e-9
    assert finished >= bound / 2.5  # (tight enough to mean something where it is small)


def test_the_longest_stretch_is_the_interval_with_its_checkpoint_or_the_work_left():
    assert longest_stretch(0, DAY, 0, 60) == DAY
    assert longest_stretch(1800, 7200, 1800, 60) == 1860
    assert longest_stretch(0, 1000, 1800, 60) == 1000  # (no checkpoint at a job's end)
    assert longest_stretch(5400, 7200, 1800, 60) == 1800


def test_the_issues_run_without_the_guard_stops_at_once_naming_the_job_and_its_chance():
    """`lucid-sim run --faults mtbf=1h --restart-limit 0` on the embedded trace ran past 100 s."""
    downs = Downs()
    with pytest.raises(NoProgressError) as stopped:
        simulate(load_trace(DEFAULT_TRACE), SimConfig(faults="mtbf=1h", restart_limit=0), observers=[downs])
    message = str(stopped.value)
    assert "job s0-44 (1 GPU(s) on 1 node(s), 0 of 420,684 s done, no checkpoints) can practically never " \
           "finish" in message
    assert "exp(-116.9) = 1.8e-51" in message and "at most 1.6e-45, below 1e-09" in message
    assert "spare" not in message and "up at once" not in message  # (not availability: the job's own length)
    assert "--checkpoint-interval" in message and "--on-no-progress abandon" in message
    assert downs.count < 20_000  # (a century of hourly faults on 32 nodes: 28 million)


def test_the_cli_says_so_with_exit_status_2(tmp_path):
    result = runner.invoke(app, ["run", "--faults", "mtbf=1h", "--restart-limit", "0", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "can practically never finish" in result.output, result.output
    assert "Traceback" not in result.output


def test_abandon_takes_out_only_the_job_that_can_never_finish():
    jobs = trace([("long", 8, 0, 2 * DAY), ("a", 8, 0, 600), ("b", 8, 1000, 600)], nodes=2)
    result = simulate(jobs, SimConfig(faults="mtbf=1h,repair=1m", restart_limit=0, on_no_progress="abandon"))
    ended = result.jobs.set_index("job_id")["end_time"]
    assert ended[["a", "b"]].notna().all() and pd.isna(ended["long"])
    assert result.summary["abandoned_jobs"] in (1, ["long"]) or "long" in str(result.summary["abandoned_jobs"])


def test_a_run_that_finishes_is_the_same_with_the_rule_as_without(monkeypatch):
    jobs = trace([(f"j{i}", 8 * (1 + i % 3), 600.0 * i, 3 * HOUR + 100 * i) for i in range(12)], nodes=4)
    config = SimConfig(faults="mtbf=2d,repair=1h", checkpoint_interval=1800, checkpoint_cost=30, restart_cost=60)
    judged = []
    original = FinishChance.judge

    def counting(self, job, nodes, now):
        judged.append(job.job_id)
        return original(self, job, nodes, now)

    monkeypatch.setattr(FinishChance, "judge", counting)
    with_rule = simulate(jobs, config).jobs
    assert judged  # (the rule was asked, and let every job go on)
    monkeypatch.setattr(FinishChance, "judge", lambda self, job, nodes, now: None)
    without = simulate(jobs, config).jobs
    pd.testing.assert_frame_equal(with_rule, without)


@pytest.mark.parametrize("change", [{"policy": "srtf"}, {"faults": "mtbf=1h,shape=0.7"}])
def test_the_rule_is_left_where_it_would_not_be_sound_and_the_guard_speaks(change):
    """A preemption keeps progress (srtf); Weibull faults are not memoryless: the guard's own words."""
    jobs = trace([("long", 8, 0, 2 * DAY)], nodes=1)
    config = SimConfig(**{"faults": "mtbf=1h", "restart_limit": 5, **change})
    with pytest.raises(NoProgressError) as stopped:
        simulate(jobs, config)
    assert "stopped 5 times in a row" in str(stopped.value)
    assert "practically never" not in str(stopped.value)


def test_with_until_an_unfinished_job_is_a_result_not_an_error():
    jobs = trace([("long", 8, 0, 2 * DAY), ("a", 8, 0, 600)], nodes=2)
    result = simulate(jobs, SimConfig(faults="mtbf=1h", restart_limit=0, until=5 * DAY))
    ended = result.jobs.set_index("job_id")["end_time"]
    assert pd.isna(ended["long"]) and ended["a"] > 0


def test_a_waiting_job_is_judged_on_the_fewest_servers_that_hold_it_without_a_restart():
    """At 5 h some of 64 servers are down (repair 1 day): the whole-fleet job waits, and can never finish."""
    jobs = trace([("small", 8, 0, 10), ("fleet", 512, 5 * HOUR, DAY)], nodes=64)
    downs = Downs()
    with pytest.raises(NoProgressError) as stopped:
        simulate(jobs, SimConfig(faults="mtbf=1d,repair=1d"), observers=[downs])
    message = str(stopped.value)
    assert "job fleet (512 GPU(s) on 64 node(s), 0 of 86,400 s done" in message
    assert "(86,400 s of work)" in message and "restart" not in message.split("; under")[0]
    assert downs.count < 200
    result = simulate(jobs, SimConfig(faults="mtbf=1d,repair=1d", on_no_progress="abandon"))
    ended = result.jobs.set_index("job_id")["end_time"]
    assert ended["small"] > 0 and pd.isna(ended["fleet"])


def test_the_study_marks_a_row_never_finishes_with_the_studys_own_words():
    """`reliability --faults mtbf=1h --gpus 16384 --spare-nodes 0` ran past 5 minutes: each row ended at the guard."""
    study = reliability_study([16_384], [1800.0], "mtbf=1h", replicas=2, spare_nodes=0)
    row = study.table.iloc[0]
    assert row["unfinished_runs"] == 2
    assert row["unfinished_why"] == "a run between its checkpoints practically never outlasts the faults of its nodes"
    errors = study.runs["error"].tolist()
    assert all("can practically never finish" in e and "--until" not in e for e in errors), errors


def test_the_fleet_warning_of_a_csv_log_ends_the_no_progress_error(tmp_path):
    rows = ["node,start,end,class"] + [f"n{s},{t},{t + 60},GPU" for s in (1, 2) for t in range(0, 30 * 86_400, 1200)]
    (tmp_path / "busy.csv").write_text("\n".join(rows) + "\n")
    jobs = trace([("day", 8, 0, DAY)], nodes=1)
    with pytest.raises(NoProgressError) as stopped:
        simulate(jobs, SimConfig(faults=str(tmp_path / "busy.csv")))
    message = str(stopped.value)
    assert "was stopped 50 times in a row" in message
    assert message.endswith("Give --fault-servers with the servers observed, those that never failed included.")
    assert "Note: --faults " in message and "the fleet is taken to be the log's 2 server(s)" in message
    assert "Note:" not in stopped.value.finding  # (what the study records: the finding alone)


def test_node_mtbf_faults_are_counted_where_they_interrupt(tmp_path):
    """summary.json had interruptions 1 and failures.faults 0 under --node-mtbf with a checkpoint cost."""
    jobs = trace([(f"j{i}", 8, 0, 5 * HOUR) for i in range(4)], nodes=4)
    result = simulate(jobs, SimConfig(node_mtbf=DAY, checkpoint_cost=60, checkpoint_interval=1800))
    summary = result.summary
    assert summary["failures"]["faults"] >= summary["interruptions"] > 0


@pytest.mark.parametrize("policy, judged", [("sjf", True), ("easy-backfill", True), ("lucid", True),
                                            ("max_min_fairness", False), ("tiresias", False)])
def test_which_policies_the_rule_judges(policy, judged):
    """Gavel's rounds and tiresias preempt (keeping progress): the guard speaks there.  Lucid's profiler moves a job
    on with its 200 s of progress; judged in its own VC after that."""
    jobs = trace([("long", 8, 0, 3 * DAY), ("a", 8, 0, 100)], nodes=2)
    with pytest.raises(NoProgressError) as stopped:
        simulate(jobs, SimConfig(policy=policy, faults="mtbf=1h", restart_limit=3))
    message = str(stopped.value)
    assert ("can practically never finish" in message) == judged, message
    assert ("stopped 3 times in a row" in message) != judged


def test_a_job_a_tier_may_evict_is_left_to_the_guard():
    frame = pd.DataFrame({"job_id": ["long"], "gpu_num": [8], "submit_time": [0], "duration": [3 * DAY],
                          "preemptible": [True]})
    with pytest.raises(NoProgressError, match="stopped 3 times in a row"):
        simulate(load_trace(frame, nodes=1), SimConfig(faults="mtbf=1h", restart_limit=3))
