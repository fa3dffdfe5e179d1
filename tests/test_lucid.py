"""The lucid policy's parts on crafted inputs: profiling partition, affine pairs, adaptive sharing."""

from __future__ import annotations

import math

import pytest
from conftest import make_trace
from test_sharing import FixedColocation

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.engine import Simulation
from simcluster.job import Job, Workload
from simcluster.metrics import Observer
from simcluster.policies.lucid import PROFILER, check_lucid_config
from simcluster.run import resolve_run

SMALL = Workload("Small", "D", 32, 0)
HEAVY = Workload("Heavy", "D", 32, 0)


class Starts(Observer):
    """Where (which partition) each job started, in order."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, str, float]] = []

    def on_start(self, job: Job, now: float) -> None:
        self.starts.append((job.job_id, job.queue_vc, now))


class FixedScores:
    """A packing model with a given score per model name."""

    def __init__(self, scores: dict[str, int]) -> None:
        self.scores, self.model = scores, None

    def score(self, workload: Workload, gpus: int, memory: float = 0.0) -> int:
        return self.scores[workload.model]

    def evaluate(self, **_: object) -> dict:
        return {}


def simulation(rows, scores=None, speed=0.8, memory=1000.0, vc_nodes=1, **cfg):
    """rows: (gpu_num, submit, duration, model); one VC 'a' of one node; oracle estimates."""
    jobs = [Job(index=i, job_id=f"j{i}", vc="a", gpu_num=g, submit_time=t, duration=d, user="u",
                workload=Workload(m, "D", 32, 0)) for i, (g, t, d, m) in enumerate(rows)]
    config = SimConfig(policy="lucid", estimator="oracle", **{"lucid_sharing": "always", **cfg})
    starts = Starts()
    resolved = resolve_run(config=config, cluster={"a": vc_nodes}, colocation=FixedColocation(speed, memory))
    sim = Simulation(jobs, resolved, [starts])
    if scores is not None:
        sim.policy.packing = FixedScores(scores)
    sim.run()
    return {j.job_id: j for j in jobs}, starts, sim.policy


def test_a_job_that_finishes_while_profiled_never_reaches_its_vc():
    jobs, starts, policy = simulation([(1, 0, 100, "Small"), (1, 0, 1000, "Small")], lucid_sharing="never",
                                      profiler_nodes=1, profile_seconds=300)
    assert [(j, where) for j, where, _ in starts.starts if j == "j0"] == [("j0", PROFILER)]
    assert jobs["j0"].end_time == 100
    # the long job is profiled for 300 s, then moves on with its progress: it ends at 1000, not 1300
    assert [(where, t) for j, where, t in starts.starts if j == "j1"] == [(PROFILER, 0), ("a", 300)]
    assert jobs["j1"].end_time == pytest.approx(1000)
    assert policy.counts["finished_while_profiling"] == 1 and policy.counts["profiled"] == 1


def test_jobs_too_big_for_the_profiler_skip_it_and_never_pair():
    jobs, starts, policy = simulation([(8, 0, 500, "Small"), (8, 10, 500, "Small")], scores={"Small": 0},
                                      profiler_nodes=1, profiler_factor=0.5)
    assert all(where == "a" for _, where, _ in starts.starts)
    assert policy.counts["skipped_profiling"] == 2 and not policy.counts["paired"]
    assert jobs["j1"].start_time == 500  # waited for the GPUs instead of pairing


def test_profiler_runs_least_gpu_first():
    _, starts, _ = simulation([(8, 0, 1000, "Small"), (4, 0, 1000, "Small"), (2, 0, 1000, "Small"),
                               (8, 0, 1000, "Small")], lucid_sharing="never", profiler_nodes=1, profiler_factor=1.0)
    profiled = [j for j, where, _ in starts.starts if where == PROFILER]
    assert profiled[:2] == ["j2", "j1"]  # 2 + 4 GPUs fit, 8 waits


def test_a_pair_forms_when_memory_fits_scores_allow_and_priorities_are_close():
    jobs, _, policy = simulation([(8, 0, 1000, "Small"), (8, 10, 1000, "Small")], scores={"Small": 1},
                                 profiler_nodes=0, speed=0.8)
    assert policy.counts["paired"] == 1
    assert jobs["j1"].start_time == 10 and jobs["j1"].shared_seconds > 0


@pytest.mark.parametrize("case", ["memory", "scores", "priority"])
def test_a_pair_is_refused(case):
    rows = [(8, 0, 1000, "Small"), (8, 10, 1000, "Heavy")]
    scores, memory = {"Small": 1, "Heavy": 1}, 1000.0
    if case == "memory":
        memory = 20_000.0  # two jobs of 20 GB do not fit in 24 GB
    elif case == "scores":
        scores["Heavy"] = 2  # 1 + 2 = 3 > 2
    else:
        rows[1] = (8, 10, 2001, "Heavy")  # priority 2001 × 8 > 2 × 1000 × 8
    jobs, _, policy = simulation(rows, scores=scores, memory=memory, profiler_nodes=0)
    assert policy.counts["paired"] == 0
    assert jobs["j1"].start_time == pytest.approx(1000)


def test_pairs_are_affine_same_gpu_count_only():
    jobs, _, policy = simulation([(8, 0, 1000, "Small"), (4, 10, 1000, "Small")], scores={"Small": 0},
                                 profiler_nodes=0)
    assert policy.counts["paired"] == 0  # a 4-GPU job may not pair with an 8-GPU one
    assert jobs["j1"].start_time == pytest.approx(1000)  # it waits for whole GPUs


class LowLoad:
    """A forecaster that always says the load is low (or high)."""

    live = False

    def __init__(self, high: bool) -> None:
        self._high = high
        self.model = None

    def high(self, now: float) -> bool:
        return self._high

    def report(self) -> dict:
        return {}


@pytest.mark.parametrize("high", [False, True])
def test_adaptive_sharing_pairs_only_under_high_forecast_load(high):
    jobs = [Job(index=i, job_id=f"j{i}", vc="a", gpu_num=8, submit_time=t, duration=1000, user="u", workload=SMALL)
            for i, t in enumerate((0, 10))]
    resolved = resolve_run(config=SimConfig(policy="lucid", estimator="oracle", profiler_nodes=0),
                           cluster={"a": 1}, colocation=FixedColocation(0.8))
    sim = Simulation(jobs, resolved)
    sim.policy.packing, sim.policy.forecaster = FixedScores({"Small": 0}), LowLoad(high)
    sim.run()
    assert sim.policy.counts["paired"] == (1 if high else 0)


def test_adaptive_sharing_follows_the_trace_load_forecast():
    # two busy days then a quiet one: the live forecaster learns the level and turns sharing off when quiet
    rows = [("a", 1, t, 50) for t in range(0, 2 * 86400, 60)] + [("a", 1, 2 * 86400 + t, 50) for t in range(0, 86400, 3000)]
    trace = make_trace(rows, {"a": 2})
    result = simulate(trace, SimConfig(policy="lucid", profiler_nodes=0, lucid_sharing="adaptive"),
                      colocation=FixedColocation(0.9))
    load = result.summary["lucid"]["throughput"]
    assert load["trainings"] >= 1 and 0.0 < load["high_fraction"] < 1.0
    assert load["mae"] < 30  # hourly counts are 60 (busy) and 1-2 (quiet)


def test_options_out_of_range_are_refused():
    with pytest.raises(ValueError, match="lucid-sharing"):
        check_lucid_config(SimConfig(lucid_sharing="sometimes"))
    with pytest.raises(ValueError, match="quantile"):
        check_lucid_config(SimConfig(share_load_quantile=2.0))


def test_lucid_summary_reports_its_parts_and_profiler_gpus_count_in_utilization():
    rows = [("a", 1, i * 50, 200 + 100 * (i % 7)) for i in range(60)]
    result = simulate(make_trace(rows, {"a": 1}), SimConfig(policy="lucid", profiler_nodes=1),
                      colocation=FixedColocation(0.9))
    s = result.summary
    assert s["gpus"] == 16 and list(s["per_vc"]) == ["a"]
    assert s["lucid"]["finished_while_profiling"] + s["lucid"]["profiled"] >= 60
    assert s["estimator"] == "ebm" and s["estimate_quality"]["jobs"] == 60
    assert not math.isnan(s["avg_jct"])


def test_a_profiler_factor_above_one_never_strands_a_job_bigger_than_the_partition():
    jobs, _, policy = simulation([(16, 0, 500, "Small")], lucid_sharing="never", profiler_nodes=1, vc_nodes=2,
                                      profiler_factor=4.0)
    assert jobs["j0"].end_time == 500 and policy.counts["skipped_profiling"] == 1


class ProfilerQueue(Observer):
    """Keeps the jobs waiting for the profiling partition by itself, and checks each arrival's admission
    against it: a job goes to the profiler only if at most ``limit`` jobs wait there."""

    def __init__(self, limit: int) -> None:
        self.limit, self.waiting, self.wrong, self.evicted_there = limit, set(), [], 0

    def on_submit(self, job: Job, now: float) -> None:  # (after the policy's admission, once the job is queued)
        if (job.queue_vc == PROFILER) != (len(self.waiting) <= self.limit):
            self.wrong.append((job.job_id, now, len(self.waiting)))
        if job.queue_vc == PROFILER:
            self.waiting.add(job)

    def on_start(self, job: Job, now: float) -> None:
        self.waiting.discard(job)

    def on_restart(self, job: Job, now: float) -> None:  # evicted by a node failure: it waits again, where it ran
        if job.queue_vc == PROFILER:
            self.waiting.add(job)
            self.evicted_there += 1


def test_jobs_evicted_from_the_profiler_count_among_those_waiting_for_it():
    # a busy profiler whose node fails: the evicted jobs queue there again, and arrivals see them waiting
    jobs = [Job(index=i, job_id=f"j{i}", vc="a", gpu_num=1, submit_time=20 * i, duration=600, user="u",
                workload=SMALL) for i in range(300)]
    config = SimConfig(policy="lucid", estimator="oracle", lucid_sharing="never", profiler_nodes=1,
                       profile_seconds=300, profiler_queue_limit=3, node_mtbf=3000, restart_limit=0, seed=1)
    admission = ProfilerQueue(limit=3)
    resolved = resolve_run(config=config, cluster={"a": 2}, colocation=FixedColocation(0.8, 1000.0))
    sim = Simulation(jobs, resolved, [admission])
    sim.run()
    assert admission.evicted_there > 0 and sim.policy.counts["profiler_busy"] > 0
    assert admission.wrong == []
