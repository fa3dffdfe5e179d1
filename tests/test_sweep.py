"""Sweeps: the grid, runs.csv, resume, failures, interrupts, VC splitting, and the same results on Ray."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import ray
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.experiments.split import execute_part, merge_results, splittable
from simcluster.experiments.sweep import (
    TIMING_COLUMNS,
    SweepError,
    SweepListener,
    build_grid,
    load_trace_arg,
    parse_sets,
    read_runs,
    run_sweep,
)
from simcluster.traces.synth import SynthSpec, save_trace, synthesize

SMALL = "synth:jobs=120,nodes=6,vcs=3,seed=4"


def results_of(path: Path) -> pd.DataFrame:
    """runs.csv without the timing columns, which differ from run to run."""
    return read_runs(path / "runs.csv").drop(columns=list(TIMING_COLUMNS))


# --- the grid -------------------------------------------------------------------------------------

def test_set_values_take_the_type_of_the_settings_default():
    sets = parse_sets(["quantum=60,120", "placement=consolidate,random", "thresholds=3600/7200,18000",
                       "max_jobs_per_gpu=3"])
    assert sets["quantum"] == [("60", 60.0), ("120", 120.0)]
    assert sets["placement"] == [("consolidate", "consolidate"), ("random", "random")]
    assert sets["thresholds"] == [("3600/7200", (3600.0, 7200.0)), ("18000", (18000.0,))]
    assert sets["max_jobs_per_gpu"] == [("3", 3)]


def test_an_unknown_setting_is_an_error_that_lists_the_valid_keys():
    with pytest.raises(SweepError, match="unknown setting 'quantom'.*valid keys: .*quantum"):
        parse_sets(["quantom=60"])
    with pytest.raises(SweepError, match="must be a number"):
        parse_sets(["quantum=fast"])
    with pytest.raises(SweepError, match="use --policy"):
        parse_sets(["policy=fifo"])


def test_the_grid_is_the_cross_product_with_readable_run_ids():
    specs = build_grid([SMALL], ["fifo", "sjf"], [1, 2], parse_sets(["quantum=60,120"]))
    assert len(specs) == 8
    assert specs[0].run_id == "synth-jobs120-nodes6-vcs3-seed4-fifo-seed1-quantum=60"
    assert specs[0].config.quantum == 60.0 and specs[0].row()["quantum"] == "60"


def test_an_unknown_policy_stops_the_sweep_before_it_starts():
    with pytest.raises(SweepError, match="nosuch"):
        build_grid([SMALL], ["nosuch"], [0])


def test_a_bad_trace_stops_the_sweep_and_writes_nothing(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "cluster_full_log.csv").write_text("job_id,vc,gpu_num,submit_time,duration\nj1,vc0,1,0,-4\n")
    (bad / "vc_config.csv").write_text("vc,num\nvc0,1\n")
    with pytest.raises(SweepError, match="cluster_full_log.csv.*duration"):
        run_sweep(build_grid([str(bad)], ["fifo"], [0]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- running, resuming, failing ----------------------------------------------------------------------

def test_a_sweep_writes_a_run_folder_per_run_and_one_runs_csv(tmp_path):
    outcome = run_sweep(build_grid([SMALL], ["fifo", "sjf"], [1, 2]), tmp_path, workers=2)
    runs = read_runs(tmp_path / "runs.csv")
    assert outcome.ran == 4 and outcome.failed == 0
    assert list(runs["run_id"]) == sorted(runs["run_id"])
    assert set(runs["status"]) == {"ok"} and (runs["jobs"] == 120).all()
    for run_id in runs["run_id"]:
        assert {p.name for p in (tmp_path / "runs" / run_id).iterdir()} == {"jobs.csv", "timeline.csv",
                                                                             "summary.json", ".simcluster.json"}


def test_a_rerun_skips_finished_runs_and_redoes_missing_ones(tmp_path):
    specs = build_grid([SMALL], ["fifo", "sjf"], [1, 2])
    run_sweep(specs, tmp_path, workers=2)
    first = results_of(tmp_path)
    again = run_sweep(specs, tmp_path, workers=2)
    assert (again.ran, again.skipped) == (0, 4)
    (tmp_path / "runs" / specs[1].run_id / "summary.json").unlink()
    third = run_sweep(specs, tmp_path, workers=2)
    assert (third.ran, third.skipped) == (1, 3)
    pd.testing.assert_frame_equal(results_of(tmp_path), first)


def failing_for_qssf(tmp_path):
    """Settings that fail qssf mid-run (its estimates file lacks the trace's jobs); fifo never reads them."""
    estimates = tmp_path / "estimates.csv"
    estimates.write_text("job_id,priority\nno-such-job,100\n")
    return parse_sets([f"estimates={estimates}", "estimator=file"])


def test_a_failed_run_is_recorded_with_its_error_and_the_others_finish(tmp_path):
    outcome = run_sweep(build_grid([SMALL], ["fifo", "qssf"], [0], failing_for_qssf(tmp_path)), tmp_path / "s",
                        workers=2)
    runs = read_runs(tmp_path / "s" / "runs.csv").set_index("policy")
    assert outcome.failed == 1
    assert runs.loc["fifo", "status"] == "ok"
    assert runs.loc["qssf", "status"] == "failed"
    assert "no estimate for job" in runs.loc["qssf", "error"]
    failed_id = runs.loc["qssf", "run_id"]
    assert not (tmp_path / "s" / "runs" / failed_id).exists()
    assert "Traceback" in (tmp_path / "s" / "failed" / f"{failed_id}.txt").read_text()


class _Interrupt(SweepListener):
    def run_finished(self, row):
        raise KeyboardInterrupt


def test_an_interrupted_sweep_keeps_finished_runs_and_resumes(tmp_path):
    specs = build_grid([SMALL], ["fifo", "sjf", "srtf"], [1, 2])
    with pytest.raises(KeyboardInterrupt):
        run_sweep(specs, tmp_path, workers=1, listener=_Interrupt())
    runs = read_runs(tmp_path / "runs.csv")
    assert len(runs) >= 1 and set(runs["status"]) == {"ok"}
    for run_id in runs["run_id"]:
        assert (tmp_path / "runs" / run_id / "summary.json").is_file()
    resumed = run_sweep(specs, tmp_path, workers=2)
    assert resumed.skipped == len(runs) and resumed.ran == 6 - len(runs)
    assert len(read_runs(tmp_path / "runs.csv")) == 6
    assert not list((tmp_path / "runs").glob(".*"))  # no half-written folder left behind


def test_the_cli_sweep_reports_bad_settings_with_exit_code_2(tmp_path):
    result = CliRunner().invoke(app, ["sweep", "--trace", SMALL, "--set", "quantom=1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "unknown setting 'quantom'" in result.output
    assert not (tmp_path / "o").exists()


def test_the_cli_sweep_runs_the_grid(tmp_path):
    trace = save_trace(synthesize(SynthSpec(jobs=60, nodes=4, vcs=2, seed=2)), tmp_path / "trace")
    result = CliRunner().invoke(app, ["sweep", "--trace", str(trace), "--policy", "fifo,sjf", "--seed", "1",
                                      "--out", str(tmp_path / "o"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert list(read_runs(tmp_path / "o" / "runs.csv")["run_id"]) == ["trace-fifo-seed1", "trace-sjf-seed1"]


# --- one run's VCs in parallel ------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf"])
def test_simulating_vcs_apart_and_merging_gives_the_whole_run(policy):
    spec = build_grid(["synth:jobs=300,nodes=8,vcs=3,seed=7"], [policy], [0])[0]
    assert splittable(spec.config)
    trace = load_trace_arg(spec.trace)
    whole = simulate(trace, spec.config)
    merged = merge_results(spec, [execute_part(spec, vc) for vc in reversed(list(trace.vc_nodes))])
    pd.testing.assert_frame_equal(merged.jobs, whole.jobs)
    pd.testing.assert_frame_equal(merged.timeline, whole.timeline)
    for key in ("sim_cpu_seconds",):
        merged.summary.pop(key), whole.summary.pop(key)
    assert merged.summary == whole.summary


def test_policies_that_learn_across_vcs_are_never_split():
    for policy in ("qssf", "tiresias-gittins", "srtf-wrs", "tiresias"):
        assert not splittable(build_grid([SMALL], [policy], [0])[0].config)
    assert not splittable(build_grid([SMALL], ["fifo"], [0], parse_sets(["placement=random"]))[0].config)
    assert not splittable(build_grid([SMALL], ["fifo"], [0], parse_sets(["node_mtbf=86400"]))[0].config)


def test_a_split_sweep_writes_the_same_runs_csv(tmp_path):
    specs = build_grid([SMALL], ["fifo", "srtf"], [1])
    run_sweep(specs, tmp_path / "whole", workers=2, split_vcs="never")
    run_sweep(specs, tmp_path / "split", workers=2, split_vcs="always")
    pd.testing.assert_frame_equal(results_of(tmp_path / "split"), results_of(tmp_path / "whole"))
    whole = pd.read_csv(tmp_path / "whole" / "runs" / specs[1].run_id / "jobs.csv")
    split = pd.read_csv(tmp_path / "split" / "runs" / specs[1].run_id / "jobs.csv")
    pd.testing.assert_frame_equal(split, whole)


# --- Ray: must run in CI (a failure to start Ray fails these tests, it does not skip them) ----------------

@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_and_the_local_pool_give_the_same_runs_csv(tmp_path, local_ray):
    specs = build_grid([SMALL], ["fifo", "sjf"], [1, 2])
    local = run_sweep(specs, tmp_path / "local", backend="local", workers=2)
    remote = run_sweep(specs, tmp_path / "ray", backend="ray")
    assert local.failed == remote.failed == 0 and remote.ran == 4
    pd.testing.assert_frame_equal(results_of(tmp_path / "ray"), results_of(tmp_path / "local"))


def test_ray_records_failures_and_resumes(tmp_path, local_ray):
    specs = build_grid([SMALL], ["fifo", "qssf"], [0], failing_for_qssf(tmp_path))
    first = run_sweep(specs, tmp_path / "s", backend="ray")
    assert (first.ran, first.failed) == (2, 1)
    again = run_sweep(specs, tmp_path / "s", backend="ray")
    assert (again.skipped, again.ran, again.failed) == (1, 1, 1)


def test_a_sweep_runs_gavel_policies_on_a_heterogeneous_trace(tmp_path):
    runner = CliRunner()
    trace = tmp_path / "g.trace"
    made = runner.invoke(app, ["trace", "synth", "--style", "gavel", "--jobs", "30", "--jobs-per-hour", "20",
                               "--out", str(trace)])
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["sweep", "--trace", str(trace), "--policy", "max_min_fairness,fifo_perf",
                                 "--set", "cluster=v100:8+k80:8", "--out", str(tmp_path / "sw"), "-q"])
    assert result.exit_code == 0, result.output
    runs = results_of(tmp_path / "sw")
    assert list(runs["status"]) == ["ok", "ok"] and (runs["jobs"] == 30).all()
    assert set(runs["policy"]) == {"max_min_fairness", "fifo_perf"}
