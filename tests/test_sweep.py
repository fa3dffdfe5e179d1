"""Sweeps: the grid, runs.csv, resume, failures, interrupts, VC splitting, paths, notes, and Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import ray
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.experiments.backends import RayBackend
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
from simcluster.scope import reader, settings_read
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
        build_grid(["synth:jobs=5"], ["fifo", "srtf"], [0], parse_sets(["quantom=60"]))
    with pytest.raises(SweepError, match="must be a time"):
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
        files = {p.name for p in (tmp_path / "runs" / run_id).iterdir()}
        assert files == {"jobs.csv", "timeline.csv", "users.csv", "summary.json", ".simcluster.json"}


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


# --- paths, formats, ids, columns ---------------------------------------------------------------------

def test_every_path_reaches_the_workers_absolute(tmp_path, monkeypatch):
    save_trace(synthesize(SynthSpec(jobs=40, nodes=2, vcs=1, seed=1)), tmp_path / "data" / "trace")
    (tmp_path / "data" / "est.csv").write_text("job_id,priority\n")
    monkeypatch.chdir(tmp_path / "data")
    specs = build_grid(["trace"], ["fifo"], [0], parse_sets(["estimates=est.csv"]))
    assert specs[0].trace == str(tmp_path / "data" / "trace")
    assert specs[0].config.estimates == str(tmp_path / "data" / "est.csv")
    monkeypatch.chdir(tmp_path)  # a worker elsewhere: the relative names would not be found
    outcome = run_sweep(specs, Path("out"), workers=1)
    assert outcome.failed == 0 and (tmp_path / "out" / "runs" / specs[0].run_id / "summary.json").is_file()


def test_a_missing_file_setting_stops_the_sweep_before_it_starts(tmp_path):
    with pytest.raises(SweepError, match="setting 'estimates': .*nope.csv: no such file"):
        build_grid([SMALL], ["qssf"], [0], parse_sets([f"estimates={tmp_path / 'nope.csv'}"]))


def test_a_trace_given_as_a_csv_file_takes_its_vc_config_from_the_option(tmp_path):
    folder = save_trace(synthesize(SynthSpec(jobs=40, nodes=2, vcs=2, seed=1)), tmp_path / "trace")
    (folder / "vc_config.csv").rename(tmp_path / "vcs.csv")
    log = str(folder / "cluster_full_log.csv")
    runner = CliRunner()
    missing = runner.invoke(app, ["sweep", "--trace", log, "--out", str(tmp_path / "a"), "-q"])
    assert missing.exit_code == 2 and "--vc-config" in missing.output
    given = runner.invoke(app, ["sweep", "--trace", log, "--vc-config", str(tmp_path / "vcs.csv"),
                                "--out", str(tmp_path / "b"), "-q"])
    assert given.exit_code == 0, given.output
    assert read_runs(tmp_path / "b" / "runs.csv")["jobs"].tolist() == [40]


def test_running_a_finished_sweep_again_in_another_format_rewrites_its_runs(tmp_path):
    run_sweep(build_grid([SMALL], ["fifo"], [0]), tmp_path, workers=1)
    again = run_sweep(build_grid([SMALL], ["fifo"], [0], fmt="parquet"), tmp_path, workers=1)
    assert (again.ran, again.skipped) == (1, 0)
    folder = tmp_path / "runs" / read_runs(tmp_path / "runs.csv")["run_id"][0]
    files = {p.name for p in folder.iterdir()}
    assert files >= {"jobs.parquet", "timeline.parquet", "users.parquet", "summary.json"}
    assert not any(f.endswith(".csv") for f in files)
    assert run_sweep(build_grid([SMALL], ["fifo"], [0], fmt="parquet"), tmp_path, workers=1).skipped == 1


def test_a_run_whose_settings_changed_under_the_same_id_is_run_again(tmp_path):
    run_sweep(build_grid([SMALL], ["fifo"], [0]), tmp_path, workers=1)
    again = run_sweep(build_grid([SMALL], ["fifo"], [0], base=SimConfig(gpus_per_node=4)), tmp_path, workers=1)
    assert (again.ran, again.skipped) == (1, 0)


def test_long_run_ids_are_the_same_in_every_process():
    command = ("from simcluster.experiments.sweep import build_grid, parse_sets;"
               "print(build_grid(['synth:jobs=10,nodes=2'], ['fifo'], [0], parse_sets(['thresholds=' + '/'.join("
               "str(3600 + i) for i in range(40))]))[0].run_id)")
    ids = {subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
    assert len(ids) == 1 and len(ids.pop().strip()) <= 150


def test_set_placement_fills_the_one_placement_column(tmp_path):
    run_sweep(build_grid([SMALL], ["fifo"], [0], parse_sets(["placement=random,consolidate"])), tmp_path, workers=2)
    header = (tmp_path / "runs.csv").read_text().splitlines()[0].split(",")
    assert header.count("placement") == 1
    assert sorted(read_runs(tmp_path / "runs.csv")["placement"]) == ["consolidate", "random"]


# --- notes: settings a policy does not read, seeds that change nothing --------------------------------------

def test_a_set_key_the_policy_does_not_read_and_a_deterministic_seed_are_noted_once(tmp_path):
    specs = build_grid([SMALL], ["fifo", "qssf"], [1, 2], parse_sets(["estimator=oracle,history"]))
    outcome = run_sweep(specs, tmp_path, workers=2)
    runs = read_runs(tmp_path / "runs.csv").set_index("run_id")
    assert [n for n in outcome.notes if n.startswith("--set estimator")] == [
        "--set estimator: not read by fifo; their runs that differ only in estimator give the same results"]
    fifo = runs[runs["policy"] == "fifo"]
    assert fifo["notes"].str.contains("estimator not read").all()
    assert fifo["notes"].str.contains("seed not read: same results for every seed").all()
    assert not runs[runs["policy"] == "qssf"]["notes"].fillna("").str.contains("estimator").any()
    assert sum("fifo on" in n and "seeds 1, 2 give identical results" in n for n in outcome.notes) == 1


def test_seeds_that_change_the_results_get_no_note(tmp_path):
    specs = build_grid([SMALL], ["fifo"], [1, 2], parse_sets(["placement=random", "spread_penalty=1"]))
    outcome = run_sweep(specs, tmp_path, workers=2)
    assert not any("seeds" in n for n in outcome.notes)
    assert read_runs(tmp_path / "runs.csv")["avg_jct"].nunique() == 2


OTHER_VALUES = {
    "placement": "random", "until": 5000.0, "spread_penalty": 0.5, "node_mtbf": 20000.0, "node_repair": 60.0,
    "checkpoint_interval": 100.0, "restart_limit": 1, "on_no_progress": "abandon", "preempt_overhead_small": 5.0,
    "preempt_overhead_large": 5.0, "quantum": 300.0, "thresholds": (600.0,), "promote_knob": 2.0,
    "estimator": "history", "retrain_interval": 600.0, "gpu_memory": 2048.0, "max_jobs_per_gpu": 3,
    "cluster": "v100:8", "round_seconds": 60.0, "realloc_interval": 100.0, "midround_release": False,
    "profiler_nodes": 1, "profile_seconds": 60.0, "profiler_factor": 0.25, "lucid_sharing": "never",
    "share_load_quantile": 0.9, "pair_priority_ratio": 1.0, "max_score_sum": 1, "packing_thresholds": (0.5, 0.6),
    "seed": 7,
}


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "qssf", "tiresias"])
def test_a_setting_said_not_to_be_read_leaves_the_results_unchanged(policy):
    trace = load_trace_arg("synth:jobs=150,nodes=4,vcs=2,seed=5")
    base = SimConfig(policy=policy)
    expected = simulate(trace, base).jobs
    # settings whose ignoring is an error (e.g. --cluster on an event-driven policy) are refused, not run
    unread = [k for k in OTHER_VALUES if k not in settings_read(base) and not reader(k).error]
    assert {"quantum", "seed", "estimator"} & set(unread) or policy in ("qssf", "tiresias")
    for key in unread:
        changed = simulate(trace, SimConfig(**{**base.as_dict(), key: OTHER_VALUES[key]})).jobs
        pd.testing.assert_frame_equal(changed, expected, obj=f"{policy} with {key}={OTHER_VALUES[key]!r}")


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


def test_the_parent_of_a_split_synthetic_run_never_draws_the_whole_trace(monkeypatch):
    from simcluster.experiments import split

    spec = build_grid(["synth:jobs=300,nodes=8,vcs=3,seed=7"], ["fifo"], [0])[0]
    trace = load_trace_arg(spec.trace)
    parts = [execute_part(spec, vc) for vc in reversed(list(trace.vc_nodes))]  # in the workers
    whole = simulate(trace, spec.config)

    def refuse(*args, **kwargs):
        raise AssertionError("the parent loaded the whole trace")

    monkeypatch.setattr(split, "load_trace_arg", refuse)
    assert split.vcs_of(spec) == list(trace.vc_nodes)
    merged = merge_results(spec, parts)
    pd.testing.assert_frame_equal(merged.jobs, whole.jobs)
    assert (merged.summary["trace_format"], merged.summary["trace_sizing"]) == ("synthetic", trace.sizing)


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


def test_ray_workers_load_a_plugin_policy_from_its_file(tmp_path, local_ray):
    plugin = tmp_path / "plugins" / "biggest.py"
    plugin.parent.mkdir()
    plugin.write_text("from simcluster.sdk import Policy, start_in_order_until_blocked\n\n"
                      "class Biggest(Policy):\n    \"Most GPUs first.\"\n"
                      "    def pending_key(self, job):\n        return (-job.gpu_num, job.index)\n"
                      "    schedule = staticmethod(start_in_order_until_blocked)\n")
    specs = build_grid([SMALL], ["fifo", str(plugin)], [0])
    outcome = run_sweep(specs, tmp_path / "s", backend="ray")
    assert (outcome.ran, outcome.failed) == (2, 0)
    summary = json.loads((tmp_path / "s" / "runs" / specs[1].run_id / "summary.json").read_text())
    assert summary["policy_source"]["location"] == str(plugin)


def test_ray_records_failures_and_resumes(tmp_path, local_ray):
    specs = build_grid([SMALL], ["fifo", "qssf"], [0], failing_for_qssf(tmp_path))
    first = run_sweep(specs, tmp_path / "s", backend="ray")
    assert (first.ran, first.failed) == (2, 1)
    again = run_sweep(specs, tmp_path / "s", backend="ray")
    assert (again.skipped, again.ran, again.failed) == (1, 1, 1)


def _descendants_named(title: str) -> list[int]:
    """PIDs of this process's descendants whose command line starts with ``title`` (Linux /proc)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = []
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        if ancestor == os.getpid():
            try:
                if (Path("/proc") / str(pid) / "cmdline").read_bytes().startswith(title.encode()):
                    found.append(pid)
            except OSError:
                continue
    return found


def test_a_ray_sweep_survives_a_killed_worker_and_keeps_rays_messages_in_its_log(tmp_path, local_ray, capfd):
    killed: list[int] = []

    def kill_one_worker() -> None:  # a worker of our own Ray instance, mid-run
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for pid in _descendants_named("ray::execute_run"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    outcome = run_sweep(build_grid(["synth:jobs=4000,nodes=16,vcs=2,seed=3"], ["srtf"], [0]), tmp_path, backend="ray",
                        split_vcs="never")
    killer.join()
    printed = capfd.readouterr()
    assert killed and outcome.failed == 0  # Ray ran the task again
    log = (tmp_path / "ray.log").read_text()
    assert "Connecting to existing Ray cluster" in log and "worker died" in log.lower()
    for noise in ("(raylet)", "worker died", "Ray cluster", "INFO", "WARNING"):
        assert noise not in printed.out + printed.err


def test_the_cli_prints_our_progress_and_where_rays_messages_are(tmp_path, local_ray, capfd):
    result = CliRunner().invoke(app, ["sweep", "--trace", SMALL, "--backend", "ray", "--out", str(tmp_path / "s")])
    printed = capfd.readouterr()
    assert result.exit_code == 0, result.output
    assert f"Ray's own messages: {tmp_path / 's' / 'ray.log'}" in result.output
    assert "Ray" not in printed.out.replace("Ray's own messages", "") + printed.err


def test_the_ray_backend_reports_a_cluster_it_cannot_reach_and_where_rays_log_is(tmp_path):
    with pytest.raises(SweepError, match=r"could not connect to Ray at 127.0.0.1:1 in 3 s \(Ray's messages: .*ray.log"):
        RayBackend("127.0.0.1:1", log=tmp_path / "ray.log", start_timeout=3)


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
