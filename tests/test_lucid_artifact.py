"""The Lucid artifact's semantics, each an option of its own, on crafted traces (the lucid-artifact preset's parts)."""

from __future__ import annotations

import pytest
from conftest import make_trace
from test_lucid import FixedScores, simulation
from test_sharing import FixedColocation

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.engine import Simulation, without_borrowed
from simcluster.errors import TraceError
from simcluster.job import Job, Workload
from simcluster.models.labels import LabelledScores
from simcluster.models.throughput import HOUR, SubmissionSeries, ThroughputForecaster
from simcluster.policies.lucid import PROFILER, check_lucid_config
from simcluster.presets import get_preset
from simcluster.run import resolve_run

# --- backfilling while sharing ------------------------------------------------------------------------
# VC of one node: j0 (4 GPUs) runs; j1 (8 GPUs, shortest so first in the queue) cannot start; j2 (4 GPUs,
# a "Heavy" model that may not pair) could use the 4 idle GPUs.
BLOCKED = [(4, 0, 1000, "Small"), (8, 10, 100, "Small"), (4, 10, 5000, "Heavy")]
SCORES = {"Small": 0, "Heavy": 2}


def test_while_sharing_a_job_that_cannot_start_does_not_hold_back_those_behind_it():
    jobs, _, _ = simulation(BLOCKED, scores=SCORES, profiler_nodes=0)
    assert jobs["j2"].start_time == 10  # backfilled onto the idle GPUs


def test_without_sharing_the_first_job_that_cannot_start_blocks_the_queue():
    jobs, _, _ = simulation(BLOCKED, scores=SCORES, profiler_nodes=0, lucid_sharing="never")
    assert jobs["j2"].start_time == 1100  # after j1 (1000-1100), strict priority order


def test_backfilling_while_sharing_can_be_turned_off():
    jobs, _, _ = simulation(BLOCKED, scores=SCORES, profiler_nodes=0, backfill_while_sharing=False)
    assert jobs["j2"].start_time == 1100


# --- prescient adaptive sharing: the rate rule ----------------------------------------------------------
@pytest.mark.parametrize(("submissions", "high"), [(12, False), (13, True)])
def test_the_rate_rule_shares_only_above_two_submissions_per_ten_minutes(submissions, high):
    series = SubmissionSeries(0, [submissions / HOUR] * HOUR)  # the last hour: 12 is 2 per bin, on the line
    forecaster = ThroughputForecaster(series, min_rate=2.0)
    assert forecaster.high(HOUR * 600) is high  # before any training: the last hour again


def test_the_quantile_rule_is_still_there():
    series = SubmissionSeries(0, [1.0] * HOUR)
    forecaster = ThroughputForecaster(series, quantile=0.5)
    assert forecaster.min_rate is None and forecaster.high(HOUR * 600)  # 6 ≥ the median of the hours seen (6)


class Forecast:
    """A forecaster stub that always forecasts ``per_hour`` submissions for the next hour."""

    live, model = False, None

    def __init__(self, per_hour: float, min_rate: float) -> None:
        self.forecaster = ThroughputForecaster(SubmissionSeries(0), min_rate=min_rate)
        self.per_hour = per_hour

    def high(self, now: float) -> bool:
        return self.forecaster._is_high(self.per_hour)

    def report(self) -> dict:
        return {}


@pytest.mark.parametrize(("per_hour", "paired"), [(12.0, 0), (30.0, 1)])
def test_lucid_pairs_only_while_the_forecast_rate_is_above_the_threshold(per_hour, paired):
    jobs = [Job(index=i, job_id=f"j{i}", vc="a", gpu_num=8, submit_time=t, duration=1000, user="u",
                workload=Workload("Small", "D", 32, 0)) for i, t in enumerate((0, 10))]
    resolved = resolve_run(config=SimConfig(policy="lucid", estimator="oracle", profiler_nodes=0),
                           cluster={"a": 1}, colocation=FixedColocation(0.8))
    sim = Simulation(jobs, resolved)
    sim.policy.packing, sim.policy.forecaster = FixedScores({"Small": 0}), Forecast(per_hour, 2.0)
    sim.run()
    assert sim.policy.counts["paired"] == paired


# --- the profiler partition ------------------------------------------------------------------------------
def test_the_profiler_can_take_its_nodes_out_of_named_vcs():
    # VC "a" has 2 nodes and gives one to the profiler: its two 8-GPU jobs run one after the other
    rows = [(8, 0, 1000, "Small"), (8, 0, 1000, "Small")]
    jobs, _, _ = simulation(rows, vc_nodes=2, lucid_sharing="never", profiler_nodes=1,
                                 profiler_from_vcs="a", profiler_factor=0.5)
    assert [j.start_time for j in jobs.values()] == [0, 1000]
    result = simulate(make_trace([("a", 1, 0, 100)], {"a": 2}),
                      SimConfig(policy="lucid", profiler_nodes=1, profiler_from_vcs="a", lucid_sharing="never"),
                      colocation=FixedColocation(0.9))
    assert result.summary["gpus"] == 16  # the cluster did not grow: one node moved from "a" to the profiler


def test_a_vc_cannot_give_nodes_it_does_not_have():
    with pytest.raises(ValueError, match="'b', which the trace does not have"):
        without_borrowed({"a": 2}, {"b": 1}, "lucid")
    with pytest.raises(ValueError, match="takes 3 nodes from VC 'a', which has 2"):
        without_borrowed({"a": 2}, {"a": 3}, "lucid")
    with pytest.raises(ValueError, match="names 1 VCs, one per node, but --profiler-nodes is 2"):
        check_lucid_config(SimConfig(profiler_nodes=2, profiler_from_vcs="a"))


def test_short_only_profiling_keeps_just_the_jobs_done_within_the_window():
    # as the artifact's separate profiling pass: the 100 s job finishes on the profiler, the long one goes
    # straight to its VC at submission, with all its work to do
    jobs, starts, policy = simulation([(1, 0, 100, "Small"), (1, 0, 1000, "Small")], lucid_sharing="never",
                                      profiler_nodes=1, profile_seconds=200, profiler_mode="short-only")
    assert [(j, where, t) for j, where, t in starts.starts] == [("j0", PROFILER, 0), ("j1", "a", 0)]
    assert jobs["j1"].end_time == 1000 and policy.counts["profiled_beside"] == 1


def test_a_job_that_finds_the_profiler_queue_full_goes_to_its_vc_unprofiled():
    # one profiler node: j0 profiles, j1 and j2 wait (2 > limit 1 once j2 is queued), so j3 skips profiling
    rows = [(8, 0, 1000, "Small"), (8, 1, 1000, "Small"), (8, 2, 1000, "Small"), (8, 3, 1000, "Small")]
    _, starts, policy = simulation(rows, vc_nodes=2, lucid_sharing="never", profiler_nodes=1, profiler_factor=1.0,
                                   profiler_queue_limit=1)
    assert [where for j, where, _ in starts.starts if j == "j3"] == ["a"]
    assert policy.counts["profiler_busy"] == 1
    assert next(where for j, where, _ in starts.starts if j == "j2") == PROFILER


# --- inputs from files ---------------------------------------------------------------------------------
def labels_file(tmp_path, rows):
    path = tmp_path / "labels.csv"
    path.write_text("model,dataset,batchsize,amp,label\n" + "".join(f"{m},D,32,0,{lab}\n" for m, lab in rows))
    return str(path)


@pytest.mark.parametrize(("heavy_label", "paired"), [(0, 1), (2, 0), (None, 0)])
def test_sharing_scores_can_come_from_a_labels_file(tmp_path, heavy_label, paired):
    rows = [("Small", 1)] + ([("Heavy", heavy_label)] if heavy_label is not None else [])
    _, _, policy = simulation([(8, 0, 1000, "Small"), (8, 10, 1000, "Heavy")], profiler_nodes=0,
                              sharing_labels=labels_file(tmp_path, rows))
    assert policy.counts["paired"] == paired  # 1 + 0 ≤ 2 pairs, 1 + 2 does not, no label never does
    if heavy_label is None:
        assert policy.packing.evaluate_for("lucid")["unlabelled_workloads"] == 1


def test_a_labels_file_with_a_bad_label_is_refused_naming_the_line(tmp_path):
    with pytest.raises(TraceError, match=r"labels.csv.*line 3.*not a label 0, 1 or 2"):
        LabelledScores(labels_file(tmp_path, [("Small", 0), ("Heavy", 5)]))


def test_the_authors_labels_are_found_by_name(venus_sept):
    scores = LabelledScores("lucid")
    assert scores.score(Workload("BERT", "SQuAD", 32, 0), gpus=1) == 2 and len(scores.labels) > 50


def test_negative_estimates_can_be_replaced_as_the_artifact_does(tmp_path):
    path = tmp_path / "est.csv"
    path.write_text("job_id,priority\nj0,10\nj1,-50\nj2,600\n")
    order = lambda **cfg: list(simulate(make_trace([("a", 8, 0, 100)] * 3, {"a": 1}), SimConfig(
        policy="qssf", estimator="file", estimates=str(path), **cfg)).jobs.sort_values("start_time")["job_id"])
    # j0 starts first (newcomers go by GPU count, then trace order); then the queue goes by priority
    assert order() == ["j0", "j1", "j2"]  # -50 as it is: first
    assert order(negative_estimates=1000.0) == ["j0", "j2", "j1"]  # -50 → 1000 s: after 600 s


# --- the tie order that explains qssf's difference from the artifact ---------------------------------------
def test_qssf_breaks_equal_priorities_by_trace_order_or_by_a_tie_order_file(tmp_path):
    # j0 holds the node; j1 and j2 (same second, same GPUs, same estimate) wait; one can start at a time
    rows = [("a", 8, 0, 100), ("a", 8, 10, 50), ("a", 8, 10, 50)]
    estimates = tmp_path / "est.csv"
    estimates.write_text("job_id,priority\nj0,100\nj1,50\nj2,50\n")
    log = tmp_path / "artifact_log.csv"
    log.write_text("job_id,jct\nj0,1\nj2,1\nj1,1\n")  # the artifact's loader put j2 before j1
    run = lambda **cfg: simulate(make_trace(rows, {"a": 1}), SimConfig(
        policy="qssf", estimator="file", estimates=str(estimates), **cfg)).jobs.set_index("job_id")["start_time"]
    assert run()[["j1", "j2"]].tolist() == [100, 150]  # the trace's order (the order the cluster got them)
    assert run(tie_order=str(log))[["j1", "j2"]].tolist() == [150, 100]  # the log's order


def test_the_lucid_artifact_preset_sets_each_difference():
    preset = get_preset("lucid-artifact").settings
    assert preset["profiler_from_vcs"] == "vc8Gr,vcefl" and preset["profiler_mode"] == "short-only"
    assert preset["share_rule"] == "rate" and preset["share_min_rate"] == 2.0 and preset["backfill_while_sharing"]
    assert preset["sharing_labels"] == "lucid" and preset["negative_estimates"] == 1000.0
    check_lucid_config(SimConfig.from_settings(preset))


def test_a_relative_side_file_is_found_beside_the_trace(tmp_path):
    (tmp_path / "reference_estimates").mkdir()
    (tmp_path / "reference_estimates" / "est.csv").write_text("job_id,priority\nj0,100\nj1,5\nj2,50\n")
    trace = make_trace([("a", 8, 0, 100), ("a", 8, 10, 100), ("a", 8, 10, 10)], {"a": 1})
    trace.source = str(tmp_path / "cluster_log.csv")
    result = simulate(trace, SimConfig(policy="qssf", estimator="file", estimates="reference_estimates/est.csv"))
    assert result.summary["config"]["estimates"] == str(tmp_path / "reference_estimates" / "est.csv")
    assert result.jobs.set_index("job_id")["start_time"].to_dict() == {"j0": 0, "j1": 100, "j2": 200}


def test_the_qssf_artifact_preset_gives_the_artifacts_run_sh_figure(venus_sept):
    from simcluster.presets import resolve_config
    from simcluster.traces import load_trace

    result = simulate(load_trace(venus_sept / "cluster_full_log.csv"), resolve_config(preset="qssf-artifact"))
    # our run of the artifact: 15,479.3 s; the difference is the order of same-second jobs (see --tie-order)
    assert result.summary["avg_jct"] == pytest.approx(15548.9, abs=0.1)


def test_the_lucid_artifact_preset_lands_within_five_percent_of_the_artifact(venus_sept):
    from simcluster.presets import resolve_config
    from simcluster.traces import load_trace

    result = simulate(load_trace(venus_sept / "cluster_full_log.csv"), resolve_config(preset="lucid-artifact"))
    assert result.summary["avg_jct"] == pytest.approx(12885.9, rel=0.05)  # our run of the artifact: 12,885.9 s
    assert result.summary["gpus"] == 1080  # the profiler's two nodes came out of vc8Gr and vcefl
