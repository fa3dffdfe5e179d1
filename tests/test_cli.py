from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from simcluster.cli import app, main

runner = CliRunner()


def test_run_without_arguments_uses_the_embedded_trace_and_writes_the_results_contract(tmp_path):
    out = tmp_path / "default"
    result = runner.invoke(app, ["run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    jobs = pd.read_csv(out / "jobs.csv")
    for col in ("job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time", "duration", "queue", "jct",
                "preemptions", "restarts"):
        assert col in jobs.columns
    summary = json.loads((out / "summary.json").read_text())
    for key in ("policy", "placement", "jobs", "avg_jct", "avg_queue", "p50_jct", "p99_jct", "p99_queue",
                "makespan", "gpu_utilization", "sim_cpu_seconds", "load_cpu_seconds", "per_vc"):
        assert key in summary
    assert summary["policy"] == "fifo" and summary["jobs"] == len(jobs) == 2000
    assert set(summary["per_vc"]) == set(jobs["vc"])
    timeline = pd.read_csv(out / "timeline.csv")
    assert list(timeline.columns) == ["time", "busy_gpus", "shared_gpus", "running_jobs", "pending_jobs"]
    assert timeline["time"].is_monotonic_increasing


def test_a_leading_option_means_run_and_json_is_machine_readable(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--policy", "sjf", "--out", str(tmp_path / "r"), "--json", "--format", "parquet"])
    assert exited.value.code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["policy"] == "sjf"
    assert len(pd.read_parquet(tmp_path / "r" / "jobs.parquet")) == summary["jobs"]


def test_unknown_policy_is_refused_with_the_choices(tmp_path):
    result = runner.invoke(app, ["run", "--policy", "lifo", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "unknown policy 'lifo'; choose one of: fifo" in result.stderr
    assert not (tmp_path / "x").exists()


def test_trace_synth_is_seeded_and_loadable(tmp_path):
    for name in ("a", "b"):
        result = runner.invoke(app, ["trace", "synth", "--jobs", "300", "--nodes", "8", "--vcs", "2", "--seed", "5",
                                     "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    a = (tmp_path / "a" / "cluster_full_log.csv").read_text()
    assert a == (tmp_path / "b" / "cluster_full_log.csv").read_text()
    check = runner.invoke(app, ["trace", "check", str(tmp_path / "a")])
    assert check.exit_code == 0 and "300 valid jobs" in check.stdout


def test_the_embedded_default_trace_is_what_synth_makes(tmp_path):
    from simcluster.paths import DEFAULT_TRACE

    runner.invoke(app, ["trace", "synth", "--jobs", "2000", "--nodes", "32", "--vcs", "4", "--load", "0.7",
                        "--seed", "0", "--out", str(tmp_path / "d")])
    assert (tmp_path / "d" / "cluster_full_log.csv").read_text() == (DEFAULT_TRACE / "cluster_full_log.csv").read_text()


def test_cluster_runs_every_policy_and_says_it_merges_the_traces_vcs(tmp_path):
    result = runner.invoke(app, ["run", "--cluster", "v100:32,k80:32", "--policy", "srtf", "--out", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "x" / "summary.json").read_text())
    assert summary["gpus"] == 64 and summary["cluster"]["k80"]["gpus"] == 32
    assert any("merged into one VC 'cluster'" in w for w in summary["warnings"])


def test_a_setting_the_policy_does_not_read_is_a_warning_printed_and_kept_in_the_summary(tmp_path):
    result = runner.invoke(app, ["run", "--quantum", "30", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    line = "--quantum 30 is ignored: fifo does not read it (read by tiresias, tiresias-gittins)"
    assert line in " ".join(result.stderr.split())
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["warnings"] == [line]


def test_gavels_round_policies_run_under_node_failures_and_finish_every_job():
    from simcluster.api import simulate
    from simcluster.config import SimConfig
    from simcluster.traces.synth import SynthSpec, synthesize

    trace = synthesize(SynthSpec(jobs=200, nodes=4, vcs=2, seed=3))
    result = simulate(trace, SimConfig(policy="max_min_fairness", node_mtbf=400_000, node_repair=600,
                                       checkpoint_interval=600))
    assert result.summary["node_failures"] > 0 and result.jobs["end_time"].notna().all()
    assert result.summary["warnings"] == []
