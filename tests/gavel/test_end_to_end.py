"""Every Gavel policy on t100 (4 V100 + 4 P100 + 4 K80), and the command line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from simcluster.api import simulate
from simcluster.cli import app
from simcluster.config import SimConfig
from simcluster.policies import POLICIES
from simcluster.policies.gavel import RoundPolicy
from simcluster.presets import resolve_config
from simcluster.traces import load_trace

CLUSTER = "v100:4,p100:4,k80:4"
GAVEL_POLICIES = [name for name in POLICIES.names() if issubclass(POLICIES.get(name), RoundPolicy)]


@pytest.fixture(scope="module")
def t100_results(gavel_traces):
    trace = load_trace(gavel_traces / "t100.trace")
    return {name: simulate(trace, SimConfig(policy=name, cluster=CLUSTER)) for name in GAVEL_POLICIES}


def test_every_policy_finishes_every_job(t100_results):
    for name, result in t100_results.items():
        assert len(result.jobs) == 100 and "unfinished_jobs" not in result.summary and result.jobs["end_time"].notna().all(), name
        assert set(result.jobs.columns) >= {"job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time",
                                            "duration", "queue", "jct"}
        assert set(result.timeline.columns) >= {"time", "busy_gpus", "running_jobs", "pending_jobs"}
        assert result.summary["per_vc"]["cluster"]["jobs"] == 100
        done = result.jobs["steps_done"] / result.jobs["total_steps"]
        assert ((done - 1).abs() < 1e-6).all(), name  # every iteration of every job was run
        assert 0 < result.summary["gpu_utilization"] <= 1 + 1e-9


@pytest.fixture(scope="module")
def t100_gavel_preset(gavel_traces):
    trace = load_trace(gavel_traces / "t100.trace")
    return {name: simulate(trace, resolve_config(preset="gavel", overrides={"policy": name, "cluster": CLUSTER}))
            for name in GAVEL_POLICIES}


# Average JCT (s) of Gavel's own simulator on t100 (stanford-futuredata/gavel at its published HEAD,
# simulate_scheduler_with_trace.py -c 4:4:4 --seed 0, its defaults; run for issue 15), and the tolerance
# the preset is held to.  fifo: Gavel's FIFO bugs are not reproduced (README).
GAVEL_T100 = {"max_min_fairness": (31_286, 0.05), "max_min_fairness_perf": (18_003, 0.05),
              "max_min_fairness_packed": (11_947, 0.05), "gandiva": (18_947, 0.05),
              "finish_time_fairness_perf": (18_352, 0.10), "min_total_duration_perf": (45_555, 0.10),
              "max_sum_throughput_perf": (19_475, 0.10), "gavel_fifo": (31_988, 0.12)}


def test_the_gavel_preset_runs_every_policy_to_the_end(t100_gavel_preset):
    for name, result in t100_gavel_preset.items():
        assert len(result.jobs) == 100 and "unfinished_jobs" not in result.summary and result.jobs["end_time"].notna().all(), name
        assert result.summary["config"]["preset"] == "gavel"


def test_the_gavel_preset_lands_near_gavels_own_simulator(t100_gavel_preset):
    for name, (theirs, tolerance) in GAVEL_T100.items():
        ours = t100_gavel_preset[name].summary["avg_jct"]
        assert abs(ours / theirs - 1) <= tolerance, f"{name}: {ours:,.0f} s vs Gavel's {theirs:,} s"


def test_heterogeneity_awareness_and_packing_lower_average_jct(t100_results):
    jct = {name: r.summary["avg_jct"] for name, r in t100_results.items()}
    assert jct["max_min_fairness_perf"] < jct["max_min_fairness"]
    assert jct["max_min_fairness_packed"] < jct["max_min_fairness_perf"]
    assert jct["fifo_perf"] < jct["gavel_fifo"]


def test_cli_runs_a_gavel_trace_and_prints_the_summary(gavel_traces, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--trace", str(gavel_traces / "t100.trace"), "--cluster", CLUSTER,
                                      "--policy", "max_min_fairness_perf", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "max_min_fairness_perf" in result.output and "lease extensions" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 100 and summary["placement"] == "rounds"


def test_cli_reports_bad_input_with_a_nonzero_exit(tmp_path, gavel_traces):
    bad = tmp_path / "bad.trace"
    bad.write_text("Nope\tc\td\t--x\t0\t5\t1\t1\t-1\t0\n")
    result = CliRunner().invoke(app, ["run", "--trace", str(bad), "--cluster", CLUSTER, "--policy", "fifo"])
    assert result.exit_code == 2 and "line 1" in result.output and "job_type" in result.output
    missing = CliRunner().invoke(app, ["run", "--trace", str(gavel_traces / "t100.trace"), "--policy", "fifo"])
    assert missing.exit_code == 2 and "--cluster" in missing.output


def test_cli_synthesises_and_checks_a_gavel_style_trace(tmp_path, gavel_traces):
    path = tmp_path / "g.trace"
    made = CliRunner().invoke(app, ["trace", "synth", "--style", "gavel", "--jobs", "30", "--jobs-per-hour", "5",
                                    "--out", str(path)])
    assert made.exit_code == 0, made.output
    checked = CliRunner().invoke(app, ["trace", "check", str(path)])
    assert checked.exit_code == 0 and "30 valid jobs" in checked.output


def test_policies_lists_the_gavel_family():
    result = CliRunner().invoke(app, ["policies", "--json"])
    listed = json.loads(result.output)
    assert "max_min_fairness_packed" in listed and "gavel_fifo" in listed and "fifo" in listed


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf", "tiresias", "qssf", "lucid", "srtf-wrs", "sjf-ffs"])
@pytest.mark.parametrize("placement", ["consolidate", "fastest-free"])
def test_every_classic_policy_runs_a_gavel_trace_on_a_heterogeneous_cluster(gavel_traces, policy, placement):
    trace = load_trace(gavel_traces / "t100.trace")
    result = simulate(trace, SimConfig(policy=policy, placement=placement, cluster=CLUSTER, estimator="oracle"))
    jobs = result.jobs
    assert len(jobs) == 100 and jobs["end_time"].notna().all() and result.summary["placement"] == placement
    assert ((jobs["steps_done"] / jobs["total_steps"] - 1).abs() < 1e-6).all()
    assert set(result.summary["gpu_seconds_per_type"]) == {"v100", "p100", "k80"}


def test_a_venus_trace_runs_under_a_gavel_policy_inside_each_vc():
    from simcluster.traces.synth import SynthSpec, synthesize

    trace = synthesize(SynthSpec(jobs=40, nodes=4, vcs=2, seed=3))
    result = simulate(trace, SimConfig(policy="max_min_fairness_perf"))
    assert result.summary["placement"] == "rounds" and result.summary["jobs"] == 40
    assert set(result.summary["per_vc"]) == set(trace.vc_nodes)  # each VC its own allocation, not merged
    assert simulate(trace, SimConfig(policy="fifo")).summary["placement"] == "consolidate"


def test_trace_check_names_a_job_type_missing_from_the_table(tmp_path, gavel_traces):
    bad = tmp_path / "bad.trace"
    bad.write_text("Nope\tc\td\t--x\t0\t5\t1\t1\t-1\t0\n")
    result = CliRunner().invoke(app, ["trace", "check", str(bad)])
    assert result.exit_code == 2 and "line 1" in result.output and "job_type" in result.output


def test_lucid_pairs_only_jobs_the_throughput_table_lets_share(gavel_traces):
    from types import SimpleNamespace

    from simcluster.policies.lucid import can_share
    from simcluster.throughputs import PAIR_FLOOR, load_throughputs

    table = load_throughputs()
    jobs = load_trace(gavel_traces / "t100.trace").make_jobs(table)
    for partner in jobs[1:]:
        partner.allocation = ((SimpleNamespace(gpu_type="v100"), [0]),)
    worst = {p.index: min(table.pair_factor(jobs[0].speeds.key, p.speeds.key, "v100"),
                          table.pair_factor(p.speeds.key, jobs[0].speeds.key, "v100")) for p in jobs[1:]}
    verdicts = {p.index: can_share(jobs[0], p, table) for p in jobs[1:]}
    assert {i for i, ok in verdicts.items() if not ok} == {i for i, f in worst.items() if f <= PAIR_FLOOR} != set()
    assert any(verdicts.values())
    assert can_share(jobs[0], jobs[1], None)  # no table (Venus workloads): the colocation model decides
