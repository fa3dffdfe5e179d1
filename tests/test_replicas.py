"""Replicas: perturbed copies of a fixed trace (bootstrap of days or users, jitter, seeds), their intervals and
the paired differences of two policies on the same replicas."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simcluster.cli import app
from simcluster.experiments.replicas import (
    Interval,
    PerturbationError,
    interval,
    paired,
    parse_perturbation,
    perturb_trace,
    replica_config,
    verdict,
)
from simcluster.experiments.sweep import SweepError, build_grid, read_runs, run_sweep
from simcluster.experiments.uncertainty import posthoc_figures
from simcluster.traces.joblog import JobLog
from simcluster.traces.synth import SynthSpec, synthesize

runner = CliRunner()
SYNTH = "synth:jobs=120,nodes=2,vcs=1,seed=3"


def days_trace(days: int, rng: np.random.Generator, per_day: float = 20.0, sigma: float = 1.0) -> JobLog:
    """Jobs of i.i.d. days: Poisson(per_day) arrivals a day, durations LogNormal(6, sigma) s (mean exp(6 + σ²/2))."""
    counts = rng.poisson(per_day, days)
    day = np.repeat(np.arange(days), counts)
    submit = (day * 86400 + rng.integers(0, 86400, len(day))).astype(np.int64)
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(len(day))], "user": [f"u{i % 7}" for i in range(len(day))],
                          "vc": "cluster", "gpu_num": 1, "submit_time": submit,
                          "duration": np.maximum(1, np.rint(rng.lognormal(6.0, sigma, len(day)))).astype(np.int64)})
    return JobLog("days", frame.sort_values("submit_time", kind="stable").reset_index(drop=True), {"cluster": 1})


def test_the_95_percent_interval_of_avg_jct_covers_the_truth_in_at_least_90_of_100_repetitions():
    # No queueing (a job's JCT is its duration), so the truth is the mean of LogNormal(6, 1): exp(6.5).  Each
    # repetition draws a fresh 30-day trace and bootstraps its days, as `--perturb bootstrap` does.
    truth = float(np.exp(6.5))
    covered = 0
    for repetition in range(100):
        trace = days_trace(30, np.random.default_rng([7, repetition]))
        jobs = trace.frame.assign(jct=trace.frame["duration"].astype(float), queue=0.0)
        drawn = posthoc_figures({"run": jobs}, replicas=200, seed=repetition)["run"]["avg_jct"]
        found = interval(list(drawn.values()))
        covered += found.low <= truth <= found.high
    assert covered >= 90, covered


def test_the_bootstrap_by_replays_and_the_post_hoc_one_draw_the_same_days():
    trace = days_trace(10, np.random.default_rng(1))
    jobs = trace.frame.assign(jct=trace.frame["duration"].astype(float), queue=0.0)
    drawn = posthoc_figures({"run": jobs}, replicas=5, seed=4)["run"]["avg_jct"]
    made = parse_perturbation("bootstrap")
    for replica in range(5):
        copy = perturb_trace(trace, made, replica, seed=4)
        assert copy.frame["duration"].mean() == pytest.approx(drawn[replica])


def test_a_bootstrap_replica_keeps_each_days_jobs_together_with_their_times_of_day():
    trace = days_trace(8, np.random.default_rng(2))
    copy = perturb_trace(trace, parse_perturbation("bootstrap"), 3, seed=0)
    original = trace.frame.set_index("job_id")
    assert copy.frame["job_id"].is_unique and copy.frame["submit_time"].is_monotonic_increasing
    for job_id, submit in zip(copy.frame["job_id"], copy.frame["submit_time"]):
        source = original.loc[job_id.split("#")[0]]
        assert submit % 86400 == source["submit_time"] % 86400  # same time of day
    days = copy.frame["submit_time"] // 86400
    source_day = copy.frame["job_id"].str.split("#").str[0].map(original["submit_time"] // 86400)
    assert (pd.crosstab(days, source_day) > 0).sum(axis=1).max() == 1  # each slot holds one source day


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), replica=st.integers(0, 50), sigma=st.floats(0, 0.5), arrival=st.floats(0, 600))
def test_jitter_keeps_every_job_with_whole_seconds_and_moves_no_job_before_the_first(seed, replica, sigma, arrival):
    trace = days_trace(3, np.random.default_rng(seed))
    copy = perturb_trace(trace, parse_perturbation(f"jitter:sigma={sigma},arrival={arrival}"), replica, seed)
    assert sorted(copy.frame["job_id"]) == sorted(trace.frame["job_id"])
    assert copy.frame["submit_time"].min() >= trace.frame["submit_time"].min()
    assert copy.frame["duration"].dtype == np.int64 and (copy.frame["duration"] >= 1).all()
    if sigma == 0 and arrival == 0:
        pd.testing.assert_frame_equal(copy.frame, trace.frame)


def test_a_user_bootstrap_draws_whole_users_and_seeds_draw_the_runs_seed():
    trace = days_trace(5, np.random.default_rng(3))
    copy = perturb_trace(trace, parse_perturbation("bootstrap:by=user"), 1, seed=0)
    by_user = trace.frame.groupby("user").size()
    for user, jobs in copy.frame.groupby("user").size().items():
        assert jobs == by_user[user.split("#")[0]]
    seeds = parse_perturbation("seeds")
    assert perturb_trace(trace, seeds, 1, 0) is trace
    from simcluster.config import SimConfig

    assert len({replica_config(SimConfig(seed=5), seeds, i).seed for i in range(10)}) == 10


@pytest.mark.parametrize(("text", "problem"), [("boot", "must be one of"), ("jitter:by=user", "jitter takes"),
                                               ("bootstrap:by=week", "by must be day or user"),
                                               ("jitter:sigma=x", "must be a number")])
def test_a_bad_perturbation_says_what_is_wrong(text, problem):
    with pytest.raises(PerturbationError, match=problem):
        parse_perturbation(text)


def test_intervals_and_the_verdict_say_faster_only_when_the_interval_excludes_zero():
    faster = paired({i: 100.0 + i for i in range(20)}, {i: 150.0 + 2 * i for i in range(20)})
    assert faster.high < 0 and verdict("a", "b", faster).startswith("a is faster than b")
    tie = paired({i: 100.0 + (-1) ** i * 5 for i in range(20)}, {i: 100.0 for i in range(20)})
    assert "no difference in avg JCT can be told" in verdict("a", "b", tie)
    assert interval([1.0, np.nan, 3.0]) == Interval(2.0, np.sqrt(2.0), 1.05, 2.95, 2)


def test_replicas_join_the_grid_and_the_same_seed_gives_identical_figures(tmp_path):
    specs = build_grid([SYNTH], ["fifo", "srtf"], [0], replicas=3, perturb="bootstrap")
    assert [s.run_id.rsplit("-", 1)[1] for s in specs] == ["bootstrap0", "bootstrap1", "bootstrap2"] * 2
    first = run_sweep(specs, tmp_path / "a", workers=2)
    again = run_sweep(build_grid([SYNTH], ["fifo", "srtf"], [0], replicas=3, perturb="bootstrap"), tmp_path / "b",
                      backend="local", workers=1)
    figures = ["run_id", "avg_jct", "p99_jct", "makespan", "replica", "perturb"]
    pd.testing.assert_frame_equal(read_runs(first.runs_csv)[figures], read_runs(again.runs_csv)[figures])
    assert read_runs(first.runs_csv)["avg_jct"].nunique() > 2  # replicas differ
    other = run_sweep(build_grid([SYNTH], ["fifo"], [1], replicas=3, perturb="bootstrap"), tmp_path / "c", workers=1)
    assert read_runs(other.runs_csv)["avg_jct"].tolist() != read_runs(first.runs_csv)["avg_jct"].tolist()[:3]
    with pytest.raises(SweepError, match="--perturb needs --replicas"):
        build_grid([SYNTH], ["fifo"], [0], perturb="jitter")


def test_sweep_prints_intervals_and_the_paired_difference_and_report_shows_them(tmp_path):
    done = runner.invoke(app, ["sweep", "--trace", SYNTH, "--policy", "fifo,srtf", "--replicas", "4", "--out",
                               str(tmp_path / "sweep"), "--workers", "1"])
    assert done.exit_code == 0, done.output
    assert "Over replicas (bootstrap): mean, 95 % interval" in done.stdout and "paired replicas" in done.stdout
    differences = pd.read_csv(tmp_path / "sweep" / "differences.csv")
    assert differences[["first", "second", "n"]].values.tolist() == [["fifo", "srtf", 4]]
    report = runner.invoke(app, ["report", str(tmp_path / "sweep"), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    table = pd.read_csv(tmp_path / "report" / "comparison.csv")
    overall = table[table["vc"] == "all"].set_index("label")
    assert (overall["avg_jct_low"] <= overall["avg_jct"]).all() and (overall["avg_jct"] <= overall["avg_jct_high"]).all()
    assert (overall["avg_jct_replicas"] == 4).all()
    assert (tmp_path / "report" / "differences.csv").is_file() and "paired replicas" in report.stdout


def test_run_with_replicas_writes_a_sweep_folder_and_one_json_document(tmp_path):
    done = runner.invoke(app, ["run", "--trace", str(save(tmp_path)), "--policy",
                               "srtf", "--replicas", "3", "--perturb", "jitter", "--out", str(tmp_path / "out"),
                               "--json"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["runs"] == 3 and found["intervals"]["srtf"]["avg_jct"]["n"] == 3
    assert (tmp_path / "out" / "runs.csv").is_file() and (tmp_path / "out" / "replicas.csv").is_file()


def test_report_replicas_bootstraps_finished_runs_over_their_days(tmp_path):
    trace = save(tmp_path)
    for policy in ("fifo", "sjf"):
        assert runner.invoke(app, ["run", "--trace", str(trace), "--policy", policy, "--out",
                                   str(tmp_path / policy), "--quiet"]).exit_code == 0
    done = runner.invoke(app, ["report", str(tmp_path / "fifo"), str(tmp_path / "sjf"), "--out", str(tmp_path / "r"),
                               "--replicas", "30"])
    assert done.exit_code == 0, done.output
    assert "post-hoc bootstrap" in done.stdout
    differences = pd.read_csv(tmp_path / "r" / "differences.csv").set_index("figure")
    assert differences.loc["avg_jct", "n"] == 30 and {"p99_jct", "max_queue", "queue_over_4h"} <= set(differences.index)
    refused = runner.invoke(app, ["report", str(tmp_path / "fifo"), "--out", str(tmp_path / "r2"), "--replicas", "3",
                                  "--perturb", "jitter"])
    assert refused.exit_code == 2 and "need simulated replicas" in refused.output


def save(tmp_path):
    from simcluster.traces.synth import save_trace

    folder = tmp_path / "trace"
    if not folder.exists():
        save_trace(synthesize(SynthSpec(jobs=150, nodes=2, vcs=1, seed=2, load=0.9)), folder)
    return folder
