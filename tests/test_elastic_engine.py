"""Elastic jobs in the engine: progress in their own unit, re-timed at their stages' ends, resized while they run.

The unit tests drive the engine with small scripted policies and jobs of :class:`StagedWork` (linear in GPUs,
one rate per stage) whose every time can be worked out by hand; the tests on shared data run Pollux's policies
on Pollux's workloads on several cluster shapes and against the artifact's published results.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest

from simcluster.api import load_trace, simulate
from simcluster.config import SimConfig
from simcluster.elastic.state import ElasticState, StagedWork
from simcluster.engine import Simulation
from simcluster.engine.life import _after_elastic_stop
from simcluster.job import Job, JobState
from simcluster.metrics import Observer
from simcluster.paths import shared_data_dir
from simcluster.presets import resolve_config
from simcluster.run import resolve_run
from simcluster.sdk import Policy
from simcluster.testing import policy_problems

Action = Callable[[Any, Any, dict[str, Job]], None]  # (ctx, vc, jobs by id)


class Scripted(Policy):
    """An elastic policy that does what its script says at given times (and nothing else)."""

    elastic = True

    def __init__(self, script: dict[float, Action], config: SimConfig | None = None) -> None:
        super().__init__(config)
        self.script = script
        self.seen: list[tuple[float, int]] = []  # (time, stage of job a) at each pass

    def schedule(self, vc, ctx) -> None:
        jobs = {j.job_id: j for j in [*vc.pending, *vc.running]}
        if "a" in jobs:
            self.seen.append((ctx.now, jobs["a"].elastic.stage))
        action = self.script.get(ctx.now)
        if action is not None:
            action(ctx, vc, jobs)
        later = [t for t in self.script if t > ctx.now]
        if later:
            ctx.wake_at(min(later))


@dataclass(frozen=True)
class BatchWork(StagedWork):
    """StagedWork whose rate is also proportional to the batch (a number; None: 1)."""

    def rate(self, layout, batch, stage) -> float:
        return super().rate(layout, batch, stage) * (batch or 1)


def elastic_job(index: int, job_id: str, gpus: int, work: StagedWork, duration: float = 100.0,
                submit: float = 0.0) -> Job:
    job = Job(index=index, job_id=job_id, vc="a", gpu_num=gpus, submit_time=submit, duration=duration)
    job.elastic = ElasticState(work, work.total / duration, None, gpus)
    return job


def run(jobs: list[Job], script: dict[float, Action], nodes: int = 2, **settings: Any) -> Scripted:
    policy = Scripted(script, SimConfig(gpus_per_node=4, **settings))
    Simulation(jobs, resolve_run(config=policy.config, cluster={"a": nodes}), policy=policy).run()
    return policy


def start(job_id: str, node: int, gpus: int, **options: Any) -> Action:
    return lambda ctx, vc, jobs: ctx.start_on(jobs[job_id], [(vc.nodes[node], gpus)], **options)


TWO_STAGES = StagedWork(100.0, (40.0, 100.0), (2.0, 1.0))  # 2 then 1 unit per GPU-second


def test_a_stage_end_re_times_the_job_with_no_policy_timer():
    job = elastic_job(0, "a", 2, TWO_STAGES)
    run([job], {0.0: start("a", 0, 2, delay=5.0)})
    # 5 s of restart, 40 units at 4/s, 60 units at 2/s
    assert job.end_time == pytest.approx(45.0)
    assert [s.stage for s in job.elastic.segments] == [0, 1]
    assert job.overhead_total == pytest.approx(5.0) and job.busy_time == pytest.approx(45.0)
    assert job.elastic.gpu_seconds == pytest.approx(90.0)
    assert job.elastic.progress_at(job, 45.0) == pytest.approx(100.0)


def test_the_run_restart_delay_is_owed_at_a_start_when_the_policy_gives_none():
    job = elastic_job(0, "a", 2, TWO_STAGES)
    run([job], {0.0: start("a", 0, 2)}, restart_delay=7.0)
    assert job.end_time == pytest.approx(47.0)


def test_a_resize_keeps_the_progress_charges_its_delay_and_re_times():
    job = elastic_job(0, "a", 2, TWO_STAGES)
    grow = {0.0: start("a", 0, 2, delay=5.0),
            8.0: lambda ctx, vc, jobs: ctx.resize(jobs["a"], [(vc.nodes[0], 4)], delay=2.0)}
    run([job], grow)
    # at 8: 12 units done (3 s at 4/s); 28 more at 8/s after 2 s of delay: stage 0 ends at 13.5; 60 at 4/s: 28.5
    assert job.end_time == pytest.approx(28.5)
    assert job.elastic.resizes == 1 and job.gpu_num == 4
    assert job.overhead_total == pytest.approx(7.0)
    assert job.elastic.gpu_seconds == pytest.approx(2 * 8 + 4 * 20.5)


def test_a_change_of_batch_alone_costs_no_delay_and_is_no_resize():
    job = elastic_job(0, "a", 2, BatchWork(100.0, (100.0,), (1.0,)))
    faster = {0.0: start("a", 0, 2, delay=0.0),
              10.0: lambda ctx, vc, jobs: ctx.resize(jobs["a"], [(vc.nodes[0], 2)], batch=2)}
    run([job], faster)
    assert job.end_time == pytest.approx(10.0 + 80.0 / 4)  # 20 units by 10 s, then 4/s
    assert job.elastic.resizes == 0 and job.overhead_total == 0.0


def test_resize_many_lets_jobs_swap_nodes_and_one_resize_alone_cannot():
    a, b = elastic_job(0, "a", 4, TWO_STAGES), elastic_job(1, "b", 4, TWO_STAGES)
    begin = lambda ctx, vc, jobs: (ctx.start_on(jobs["a"], [(vc.nodes[0], 4)], delay=0.0),
                                   ctx.start_on(jobs["b"], [(vc.nodes[1], 4)], delay=0.0))
    swap = lambda ctx, vc, jobs: ctx.resize_many({jobs["a"]: [(vc.nodes[1], 4)], jobs["b"]: [(vc.nodes[0], 4)]})
    run([a, b], {0.0: begin, 2.0: swap}, restart_delay=1.0)
    assert a.elastic.resizes == b.elastic.resizes == 1
    assert [node.index for node, _ in a.allocation] == [] and a.state is JobState.FINISHED
    assert a.end_time == pytest.approx(b.end_time) == pytest.approx(2.0 + 1.0 + (40 - 16) / 8 + 60 / 4)
    with pytest.raises(AssertionError):  # the engine's own check: node 1's GPUs are b's
        a2, b2 = elastic_job(0, "a", 4, TWO_STAGES), elastic_job(1, "b", 4, TWO_STAGES)
        one = lambda ctx, vc, jobs: ctx.resize(jobs["a"], [(vc.nodes[1], 4)])
        run([a2, b2], {0.0: begin, 2.0: one})


def test_whole_second_epochs_end_on_whole_seconds_and_one_rounded_back_comes_after_that_instants_pass():
    work = StagedWork(100.0, (60.2, 100.0), (1.0, 1.0))  # on one GPU: stage 0 ends at 60.2 s
    job = elastic_job(0, "a", 1, work)
    policy = run([job], {0.0: start("a", 0, 1, delay=0.0), 60.0: lambda ctx, vc, jobs: None},
                 progress_rounding="seconds")
    assert job.end_time == 100.0
    assert (60.0, 0) in policy.seen  # the pass at 60 saw stage 0: the end rounded back to 60 came after it
    assert [s.start for s in job.elastic.segments] == [0.0, 60.0]
    exact = elastic_job(0, "a", 1, work)
    policy = run([exact], {0.0: start("a", 0, 1, delay=0.0), 60.0: lambda ctx, vc, jobs: None})
    assert exact.end_time == pytest.approx(100.0) and exact.elastic.segments[1].start == pytest.approx(60.2)


def test_a_stopped_job_goes_back_to_the_stage_its_progress_is_in_and_owes_no_unfinished_restart():
    job = elastic_job(0, "a", 1, StagedWork(100.0, (10.0, 20.0, 100.0), (1.0, 1.0, 1.0)))
    job.elastic.stage, job.work_left = 2, 95.0  # a failure left it at progress 5
    job.overhead_left, job.overhead_total = 12.0, 30.0  # 10 s of an unfinished restart + a stop's 2 s
    _after_elastic_stop(job, 2.0)
    assert job.elastic.stage == 0 and job.overhead_left == 2.0 and job.overhead_total == 20.0


def test_an_elastic_policy_needs_jobs_with_scaling_models():
    job = Job(index=0, job_id="a", vc="a", gpu_num=1, submit_time=0, duration=10)
    with pytest.raises(ValueError, match="resizes jobs while they run: job a has no scaling model"):
        Simulation([job], resolve_run(config=SimConfig(), cluster={"a": 1}), policy=Scripted({}))
    trace = load_trace(pd.DataFrame({"submit_time": [0], "gpu_num": [1], "duration": [10]}), nodes=1)
    with pytest.raises(ValueError, match="needs jobs with scaling models"):
        simulate(trace, SimConfig(policy="optimus"))


# --- deadlines and declined jobs -------------------------------------------------------------------------------

class DeclinesBigJobs(Policy):
    """FIFO that turns away jobs of more than 4 GPUs (an admission control)."""

    def schedule(self, vc, ctx) -> None:
        for job in vc.pending:
            if job.gpu_num > 4:
                ctx.decline(job)
            elif not ctx.try_start(job):
                break


def test_declined_jobs_miss_their_deadlines_and_best_effort_jobs_are_not_counted():
    frame = pd.DataFrame({"submit_time": [0, 0, 10, 20], "gpu_num": [2, 8, 2, 1], "duration": [100, 50, 50, 10],
                          "deadline": [150, 500, 30, ""]})
    result = simulate(load_trace(frame, nodes=1), SimConfig(policy=DeclinesBigJobs))
    summary, jobs = result.summary, result.jobs
    assert (summary["jobs_with_deadline"], summary["deadlines_met"], summary["declined"]) == (3, 1, 1)
    assert summary["deadline_satisfaction"] == pytest.approx(1 / 3)
    assert jobs["declined"].tolist() == [False, True, False, False]
    assert math.isnan(jobs.loc[1, "end_time"]) and summary["jobs"] == 3 and "stopped_at" not in summary


def test_drawn_deadlines_follow_the_seed_and_keep_the_traces_own():
    frame = pd.DataFrame({"submit_time": [0, 0, 10], "gpu_num": [1, 1, 1], "duration": [100, 50, 50],
                          "deadline": [150, "", ""]})
    trace = load_trace(frame, nodes=1)
    drawn = [simulate(trace, SimConfig(deadlines="1,2", seed=seed)).jobs["deadline"].tolist() for seed in (1, 1, 2)]
    assert drawn[0] == drawn[1] != drawn[2] and drawn[0][0] == 150.0
    assert 50 <= drawn[0][1] <= 100 and 60 <= drawn[0][2] <= 110
    with pytest.raises(ValueError, match="deadlines"):
        SimConfig.from_settings({"deadlines": "2,1"})


# --- Pollux's policies on Pollux's workloads -------------------------------------------------------------------

WORKLOADS = shared_data_dir() / "pollux" / "workloads"
needs_workloads = pytest.mark.skipif(not WORKLOADS.is_dir(), reason=f"no Pollux workloads in {WORKLOADS}")
SMALL = WORKLOADS / "0.5" / "workload-3.csv"
ELASTIC_POLICIES = ("tiresias-pollux", "optimus", "pollux")


class Capacity(Observer):
    """At every start and resize: no node over its GPUs, and the job's GPU count is its allocation's."""

    def __init__(self) -> None:
        self.changes = 0

    def check(self, job: Job, now: float) -> None:
        self.changes += 1
        assert job.gpu_num == sum(len(ids) for _, ids in job.allocation) > 0
        for node, _ in job.allocation:
            assert node.up and node.used <= node.gpu_count
            assert sum(len(ids) for ids in node.jobs.values()) == node.used

    on_start = on_resize = check


def pollux_workload(rows: list[tuple[float, str, int, int]], tmp_path, **options: Any):
    path = tmp_path / "workload.csv"
    path.write_text("name,time,application,num_replicas,batch_size\n"
                    + "".join(f"{app}-{i},{t:g},{app},{g},{b}\n" for i, (t, app, g, b) in enumerate(rows)))
    return load_trace(path, **options)


MIX = [(0.0, "cifar10", 8, 2048), (10.0, "ncf", 1, 32768), (20.0, "cifar10", 4, 4096), (30.0, "ncf", 1, 32768),
       (500.0, "cifar10", 2, 2048), (510.0, "ncf", 1, 32768)]


@needs_workloads
@pytest.mark.parametrize("policy", ELASTIC_POLICIES)
@pytest.mark.parametrize("shape", ["two VCs", "GPU types", "8-GPU nodes", "node failures"])
def test_pollux_policies_run_on_every_cluster_shape(policy, shape, tmp_path):
    settings: dict[str, Any] = {"policy": policy}
    if shape == "8-GPU nodes":
        trace = pollux_workload(MIX, tmp_path, nodes=2, gpus_per_node=8)
        settings["gpus_per_node"] = 8
    else:
        trace = pollux_workload(MIX, tmp_path, nodes=4)
    if shape == "two VCs":  # the same jobs, half of them in a second VC of two nodes
        trace.frame["vc"] = ["a", "b"] * 3
        trace.vc_nodes = {"a": 2, "b": 2}
        trace.cluster = None
        settings["gpus_per_node"] = 4
    elif shape == "GPU types":
        settings |= {"cluster": "t4:8,v100:8", "gpus_per_node": 4}
    elif shape == "node failures":
        settings |= {"node_mtbf": 3000.0, "node_repair": 300.0, "checkpoint_interval": 60.0, "seed": 3,
                     "on_no_progress": "abandon"}
    capacity = Capacity()
    result = simulate(trace, SimConfig(**settings), [capacity])
    jobs = result.jobs
    finished = jobs["end_time"].notna()
    assert finished.all() or shape == "node failures"
    assert capacity.changes >= finished.sum()
    assert (jobs.loc[finished, "progress"] > 0).all() and (jobs["progress_unit"] == "statistical progress").all()
    assert result.allocations is not None and set(result.allocations["job_id"]) <= set(jobs["job_id"])
    assert 0 < result.summary["cluster_efficiency"] <= result.summary["gpu_utilization"] * 64
    if shape == "two VCs":
        assert set(result.summary["per_vc"]) == {"a", "b"}
    if shape == "node failures":
        assert result.summary["node_failures"] > 0


@needs_workloads
@pytest.mark.parametrize("policy", ["tiresias-pollux", "optimus"])
def test_pollux_baselines_equal_the_artifacts_published_results_job_for_job(policy):
    published = shared_data_dir().parent / "peers_results"  # (not shipped: the numbers are in the artifact)
    artifact = _published(policy, "0.5", "workload-3")
    if artifact is None:
        pytest.skip(f"the artifact's published results are not here ({published})")
    jobs = simulate(load_trace(SMALL), resolve_config("pollux-artifact", overrides={"policy": policy})).jobs
    ours = dict(zip(jobs["job_id"], jobs["jct"], strict=True))
    assert ours == pytest.approx(artifact, abs=1e-6)


def _published(policy: str, load: str, name: str) -> dict[str, float] | None:
    """The artifact's JCTs of one workload (petuum/adaptdl osdi21-artifact, simulator/results-jobload), where a
    checkout of it is at hand."""
    folder = {"tiresias-pollux": "tiresias"}.get(policy, policy)
    for root in (shared_data_dir().parent.parent / "peers" / "adaptdl" / "simulator", ):
        path = root / "results-jobload" / f"{folder}-{load}" / "summary.json"
        if path.is_file():
            return json.loads(path.read_text())["jcts"][name]
    return None


@needs_workloads
def test_pollux_keeps_the_artifacts_average_on_a_small_workload():
    artifact = _published("pollux", "0.5", "workload-3")
    if artifact is None:
        pytest.skip("the artifact's published results are not here")
    jobs = simulate(load_trace(SMALL), resolve_config("pollux-artifact")).jobs
    theirs = sum(artifact.values()) / len(artifact)
    assert jobs["jct"].mean() == pytest.approx(theirs, rel=0.10)  # one trace: the authors allow ±5 % on 8


@needs_workloads
def test_the_true_model_setting_gives_the_scheduler_the_measurements():
    config = SimConfig(policy="pollux", policy_settings={"true_model": True})
    result = simulate(load_trace(SMALL), config)
    assert result.summary["policy_settings"]["true_model"] is True and result.jobs["end_time"].notna().all()


# --- the conformance kit on elastic policies --------------------------------------------------------------------

class ResizesWaitingJobs(Policy):
    """Resizes a job that does not run."""

    elastic = True

    def schedule(self, vc, ctx) -> None:
        for job in vc.pending:
            ctx.resize(job, [(vc.nodes[0], 1)])
            ctx.start_on(job, [(vc.nodes[0], 1)])


class GrowsOntoBusyGPUs(Policy):
    """Starts every job on one GPU, then gives each all the GPUs of the first node."""

    elastic = True

    def schedule(self, vc, ctx) -> None:
        for job in vc.pending:
            if not ctx.try_start(job):
                break
        for job in vc.running:
            ctx.resize(job, [(vc.nodes[0], vc.nodes[0].gpu_count)])


class BatchesFixedSizeJobs(Policy):
    """Gives a batch to jobs of a plain trace."""

    def schedule(self, vc, ctx) -> None:
        for job in vc.pending:
            if job.gpu_num <= vc.free_gpus:
                plan = []
                left = job.gpu_num
                for node in vc.nodes:
                    take = min(node.free_gpus, left)
                    if take:
                        plan.append((node, take))
                        left -= take
                ctx.start_on(job, plan, batch=64)


@needs_workloads
def test_the_kit_says_in_words_when_an_elastic_policy_resizes_a_job_that_does_not_run():
    report = policy_problems(ResizesWaitingJobs)
    assert "resize-not-running" in report.broken()
    assert "which does not run in this VC (it is pending)" in str(report)


@needs_workloads
def test_the_kit_says_in_words_when_a_resize_asks_for_gpus_that_are_not_free():
    report = policy_problems(GrowsOntoBusyGPUs)
    assert "more-gpus-than-free" in report.broken()
    assert "resized job" in str(report) and "idle GPUs of node" in str(report)


def test_the_kit_says_in_words_when_a_policy_gives_a_batch_to_a_job_that_is_not_elastic():
    report = policy_problems(BatchesFixedSizeJobs)
    assert "not-elastic" in report.broken() and "the job is not elastic" in str(report)


@needs_workloads
def test_the_report_draws_each_elastic_jobs_gpu_count_over_time(tmp_path):
    from simcluster.experiments.report import write_report
    from simcluster.results import write_run

    trace = pollux_workload(MIX, tmp_path, nodes=4)
    result = simulate(trace, SimConfig(policy="optimus"))
    counts = result.allocations
    assert counts is not None and (counts.groupby("job_id")["gpus"].diff().fillna(1) != 0).all()  # changes only
    assert (counts.groupby("job_id")["gpus"].last() == 0).all()  # every job gives its GPUs back at its end
    folder = write_run(tmp_path / "run", result.tables(), result.summary)
    assert (folder / "allocations.csv").is_file()
    out = tmp_path / "report"
    write_report([folder], out)
    assert (out / "gpus-1.png").is_file() and "GPUs per job" in (out / "report.html").read_text()
