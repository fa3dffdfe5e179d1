"""A simulated-time horizon (--until) and the no-progress guard under node failures, on crafted traces."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.engine import NoProgressError
from simcluster.experiments.sweep import build_grid, parse_sets, read_runs, run_sweep
from simcluster.traces import JobLog
from simcluster.traces.synth import SynthSpec, save_trace, synthesize


def trace_of(rows: list[tuple], vc_nodes: dict[str, int]) -> JobLog:
    """rows: (vc, gpu_num, submit_time, duration) in trace order; submit times from 1000."""
    frame = pd.DataFrame(rows, columns=["vc", "gpu_num", "submit_time", "duration"])
    frame["submit_time"] += 1000
    frame.insert(0, "job_id", [f"j{i}" for i in range(len(rows))])
    frame["user"] = "u"
    return JobLog("test", frame, vc_nodes)


# one 8-GPU node: j0 runs [0, 100]; j1 runs [100, 400]; j2 waits behind j1; j3 arrives after the horizon
HORIZON_ROWS = [("a", 8, 0, 100), ("a", 8, 0, 300), ("a", 8, 50, 10), ("a", 8, 500, 10)]


# --- --until -----------------------------------------------------------------------------------------------

def test_a_horizon_stops_the_run_and_reports_the_jobs_not_finished():
    result = simulate(trace_of(HORIZON_ROWS, {"a": 1}), SimConfig(policy="fifo", until=250))
    jobs = result.jobs.set_index("job_id")
    assert list(jobs.index) == ["j0", "j1", "j2"]  # j3 was never submitted
    assert jobs.loc["j0", "end_time"] == 1100
    running, waiting = jobs.loc["j1"], jobs.loc["j2"]
    assert pd.isna(running["end_time"]) and pd.isna(running["jct"]) and running["busy_time"] == 150
    assert pd.isna(waiting["start_time"]) and waiting["queue"] == 200  # waited from 50 to the horizon at 250
    s = result.summary
    assert (s["stopped_at"], s["unfinished_jobs"], s["unsubmitted_jobs"], s["abandoned_jobs"]) == (1250, 2, 1, [])
    assert (s["jobs"], s["avg_jct"], s["makespan"]) == (1, 100.0, 250.0)  # figures over finished jobs
    assert s["gpu_utilization"] == pytest.approx((100 + 150) / 250)  # the running job's GPU time counts


def test_what_happens_at_the_horizon_itself_still_happens():
    result = simulate(trace_of(HORIZON_ROWS, {"a": 1}), SimConfig(policy="fifo", until=100))
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["j0", "end_time"] == 1100  # finished at t = 100: finished
    assert jobs.loc["j1", "start_time"] == 1100  # and the scheduler's pass at t = 100 started j1


def test_a_horizon_beyond_the_last_completion_changes_nothing():
    trace = trace_of(HORIZON_ROWS, {"a": 1})
    whole = simulate(trace, SimConfig(policy="fifo"))
    horizon = simulate(trace, SimConfig(policy="fifo", until=10**6))
    pd.testing.assert_frame_equal(horizon.jobs, whole.jobs)
    assert horizon.summary["unfinished_jobs"] == 0 and horizon.summary["avg_jct"] == whole.summary["avg_jct"]
    assert "unfinished_jobs" not in whole.summary  # only a run given a horizon (or abandoning jobs) says so


def test_the_cli_writes_unfinished_jobs_with_an_empty_end_time(tmp_path):
    trace = save_trace(synthesize(SynthSpec(jobs=200, nodes=4, vcs=2, seed=1)), tmp_path / "t")
    result = CliRunner().invoke(app, ["run", "--trace", str(trace), "--policy", "srtf", "--until", "20000",
                                      "--out", str(tmp_path / "r"), "--quiet"])
    assert result.exit_code == 0, result.output
    jobs = pd.read_csv(tmp_path / "r" / "jobs.csv")
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert jobs["end_time"].isna().sum() == summary["unfinished_jobs"] > 0
    assert summary["jobs"] + summary["unfinished_jobs"] + summary["unsubmitted_jobs"] == 200
    assert summary["config"]["until"] == 20000


# --- no progress under node failures ------------------------------------------------------------------------

# a 2-node job of 10^6 s with no periodic checkpoints, nodes failing every 200 s on average: hopeless
HOPELESS = [("a", 16, 0, 10**6), ("a", 1, 0, 50)]
FAILING = {"node_mtbf": 200.0, "node_repair": 10.0, "checkpoint_interval": 0.0, "restart_limit": 5}


def test_a_job_evicted_again_and_again_without_progress_stops_the_run_with_a_clear_message():
    with pytest.raises(NoProgressError) as stopped:
        simulate(trace_of(HOPELESS, {"a": 2}), SimConfig(policy="fifo", **FAILING))
    message = str(stopped.value)
    assert "job j0 (16 GPUs on 2 node(s)) was evicted 5 times in a row" in message
    assert "beyond 0 of 1,000,000 s" in message and "--restart-limit 5" in message


def test_abandoning_such_a_job_reports_it_unfinished_and_lets_the_others_finish():
    result = simulate(trace_of(HOPELESS, {"a": 2}), SimConfig(policy="fifo", on_no_progress="abandon", **FAILING))
    jobs = result.jobs.set_index("job_id")
    assert pd.isna(jobs.loc["j0", "end_time"]) and jobs.loc["j0", "restarts"] == 5
    assert jobs.loc["j1", "end_time"] > 0
    assert result.summary["abandoned_jobs"] == ["j0"] and result.summary["unfinished_jobs"] == 1


def test_checkpointed_progress_resets_the_count():
    # checkpoints every 20 s against failures every 200 s per node: most runs keep progress
    config = SimConfig(policy="fifo", **{**FAILING, "checkpoint_interval": 20.0, "restart_limit": 3})
    result = simulate(trace_of([("a", 16, 0, 2000)], {"a": 2}), config)
    assert result.jobs["restarts"].iloc[0] > 3 and result.jobs["end_time"].notna().all()


def test_the_guard_is_off_with_a_limit_of_zero():
    config = SimConfig(policy="fifo", until=5000, **{**FAILING, "restart_limit": 0})
    result = simulate(trace_of(HOPELESS, {"a": 2}), config)
    hopeless = result.jobs.set_index("job_id").loc["j0"]
    assert hopeless["restarts"] > 5 and pd.isna(hopeless["end_time"])  # still trying at the horizon


def test_the_cli_says_so_with_exit_code_2_even_when_quiet(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    rows = "\n".join(f"j{i},a,{g},{1000 + s},{d},u" for i, (_, g, s, d) in enumerate(HOPELESS))
    (folder / "cluster_full_log.csv").write_text(f"job_id,vc,gpu_num,submit_time,duration,user\n{rows}\n")
    (folder / "vc_config.csv").write_text("vc,num\na,2\n")
    result = CliRunner().invoke(app, ["run", "--trace", str(folder), "--node-mtbf", "200", "--node-repair", "10",
                                      "--restart-limit", "5", "--quiet", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "no progress under node failures: job j0" in result.output
    assert not (tmp_path / "r").exists()


def test_a_sweep_records_such_a_run_as_failed_and_goes_on(tmp_path):
    specs = build_grid(["synth:jobs=60,nodes=2,vcs=1,seed=1"], ["fifo"], [0],
                       parse_sets(["node_mtbf=300,0", "restart_limit=2"]))
    outcome = run_sweep(specs, tmp_path, workers=2)
    runs = read_runs(tmp_path / "runs.csv").set_index("node_mtbf")
    assert outcome.failed == 1 and "no progress under node failures" in runs.loc[300, "error"]
    assert runs.loc[0, "status"] == "ok"
