"""GPU sharing in the engine and the sharing policies, with a fixed slowdown so times can be hand-computed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pytest
from conftest import make_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.colocation.schema import PAIR_COLUMNS, SINGLE_COLUMNS
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.policies.sharing import completion_times

SHARING = ["srtf-ars", "srtf-wrs", "sjf-ffs", "sjf-bsbf", "lucid"]


@dataclass
class FixedColocation:
    """Every pair runs at ``speed``; every job needs ``memory`` MiB per GPU."""

    speed: float = 0.5
    memory: float = 1000.0
    source: str = "fixed test model"
    lookups: int = field(default=0)
    single: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SINGLE_COLUMNS))  # nothing measured:
    pair: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_COLUMNS))  # lucid scores all 0

    def pair_speeds(self, a, a_gpus, b, b_gpus):
        self.lookups += 1
        return self.speed, self.speed

    def memory_mib(self, w, gpus):
        return self.memory

    def solo_util(self, w, gpus):
        return 50.0

    def solo_mem_util(self, w, gpus):
        return 30.0

    def fallback_counts(self):
        return {"exact": self.lookups}


def run(rows, policy, speed=0.5, vc_nodes=None, observers=(), **cfg):
    trace = make_trace(rows, vc_nodes or {"a": 1})
    trace.frame["model"], trace.frame["dataset"], trace.frame["batchsize"], trace.frame["amp"] = "M", "D", 32, 0
    result = simulate(trace, SimConfig(policy=policy, **cfg), observers, colocation=FixedColocation(speed))
    return result.jobs.set_index("job_id"), result.summary


def span(jobs, i):
    return (jobs.at[f"j{i}", "start_time"], pytest.approx(jobs.at[f"j{i}", "end_time"]))


def test_a_partner_slows_a_running_job_and_its_leaving_speeds_it_up_again():
    # j1 cannot get idle GPUs and shares j0's at t=10: both at half speed; j1 ends at 70,
    # j0 has then done 10 + 30 of its 100 s and finishes the last 60 alone, at 130
    jobs, summary = run([("a", 8, 0, 100), ("a", 8, 10, 30)], "sjf-ffs")
    assert span(jobs, 0) == (0, 130) and span(jobs, 1) == (10, 70)
    assert jobs.at["j0", "shared_seconds"] == pytest.approx(60) and jobs.at["j1", "shared_seconds"] == pytest.approx(60)
    assert jobs.at["j0", "mean_speed"] == pytest.approx(100 / 130) and jobs.at["j1", "mean_speed"] == pytest.approx(0.5)
    assert summary["shared_gpu_fraction"] == pytest.approx(60 / 130)
    assert summary["colocation"] == "fixed test model"


def test_jobs_share_only_while_their_memory_fits():
    jobs, _ = run([("a", 8, 0, 100), ("a", 8, 10, 30)], "sjf-ffs", gpu_memory=1500)
    assert span(jobs, 1) == (100, 130)  # 1000 + 1000 MiB > 1500: j1 waits
    assert jobs["shared_seconds"].sum() == 0


def test_wise_sharing_shares_when_it_lowers_the_average_completion_time():
    # j0 (8 GPUs, 100 s) runs; j1 and j2 (4 GPUs each, 20 s) arrive; at speed 0.9 sharing pays:
    # t_con(20, 100, 1/0.9, 1/0.9) = 22.2 + (22.2 + 80) = 124.4 < t_seq = 100 + 120 = 220
    jobs, _ = run([("a", 8, 0, 100), ("a", 4, 10, 20), ("a", 4, 10, 20)], "srtf-wrs", speed=0.9, vc_nodes={"a": 2})
    # 2 nodes: j1 and j2 get the idle node exclusively; nothing needs to share
    assert span(jobs, 1) == (10, 30) and span(jobs, 2) == (10, 30)
    jobs, _ = run([("a", 8, 0, 100), ("a", 4, 10, 20), ("a", 4, 10, 20)], "srtf-wrs", speed=0.9)
    # 1 node: SRTF preempts j0 (90 s left > 20 s) for j1 and j2, then j0 (pending, 90 + 40 s) may share
    # with either 4-GPU job: t_con(130, 20, ξ, ξ) = 22.2 + (22.2 + 110) < t_seq = 20 + 150 → it shares
    assert span(jobs, 1) == (10, pytest.approx(10 + 20 / 0.9)) and span(jobs, 2)[1] == pytest.approx(10 + 20 / 0.9)
    # j0 restores for 40 s (paid at full rate) from 10, j1/j2 leave at 32.2, its 90 s of work end at 140
    assert jobs.at["j0", "preemptions"] == 1 and span(jobs, 0) == (0, 140)
    assert jobs.at["j0", "shared_seconds"] == pytest.approx(20 / 0.9)


def test_wise_sharing_refuses_when_the_slowdown_costs_more_than_waiting():
    # speed 0.5: t_con(100, 100, 2, 2) = 400 > t_seq = 300 → j1 waits for j0
    jobs, _ = run([("a", 8, 0, 100), ("a", 8, 0, 100), ("a", 8, 50, 100)], "srtf-wrs", speed=0.5)
    assert span(jobs, 0) == (0, 100) and span(jobs, 1) == (100, 200) and span(jobs, 2) == (200, 300)
    assert jobs["shared_seconds"].sum() == 0
    # the aggressive rule shares anyway: j0 and j1 both at half speed until 200
    jobs, _ = run([("a", 8, 0, 100), ("a", 8, 0, 100)], "srtf-ars", speed=0.5)
    assert span(jobs, 0) == (0, 200) and span(jobs, 1) == (0, 200)


def test_completion_time_formulas():
    assert completion_times(100, 100, 2, 2) == (400, 300)
    t_con, t_seq = completion_times(20, 100, 1 / 0.9, 1 / 0.9)
    assert t_con == pytest.approx(20 / 0.9 + 20 / 0.9 + 80) and t_seq == 220


class SharingGuard(Observer):
    """Capacity and memory at every start, and each job's progress integrated independently."""

    def __init__(self, max_jobs: int, gpu_memory: float) -> None:
        self.max_jobs, self.gpu_memory = max_jobs, gpu_memory
        self.progress: dict[str, float] = {}
        self._segment: dict[str, tuple[float, float, float]] = {}  # job → (since, speed, overhead still owed)

    def _close(self, job: Job, now: float) -> None:
        since, speed, owed = self._segment.pop(job.job_id)
        ran = now - since
        self.progress[job.job_id] = self.progress.get(job.job_id, 0.0) + max(0.0, ran - owed) * speed

    def on_start(self, job, now):
        for node, ids in job.allocation:
            for i in ids:
                assert len(node.gpus[i]) <= self.max_jobs
                assert node.memory_used(i) <= self.gpu_memory + 1e-9
        self._segment[job.job_id] = (now, job.speed, job.overhead_left)

    def on_speed(self, job, now):
        if job.job_id in self._segment:
            since, _, owed = self._segment[job.job_id]
            self._close(job, now)
            self._segment[job.job_id] = (now, job.speed, max(0.0, owed - (now - since)))

    def on_preempt(self, job, now):
        self._close(job, now)

    on_restart = on_move = on_preempt

    def on_finish(self, job, now):
        self._close(job, now)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 300), st.integers(1, 300)),
                     min_size=1, max_size=20),
       policy=st.sampled_from(SHARING), speed=st.sampled_from([0.3, 0.6, 0.95]),
       gpu_memory=st.sampled_from([1500.0, 2500.0]))
def test_sharing_respects_capacity_and_memory_and_conserves_work(rows, policy, speed, gpu_memory):
    rows = [("a", g, t, d) for g, t, d in sorted(rows, key=lambda r: r[1])]
    guard = SharingGuard(2, gpu_memory)
    jobs, _ = run(rows, policy, speed=speed, vc_nodes={"a": 2}, observers=[guard], gpu_memory=gpu_memory)
    assert len(jobs) == len(rows)
    for job_id, row in jobs.iterrows():
        # the job's progress, integrated over its speed segments, is exactly its duration
        assert guard.progress.get(job_id, 0.0) == pytest.approx(row["duration"], abs=1e-6)
        assert row["end_time"] >= row["start_time"] >= row["submit_time"]
        assert row["busy_time"] >= row["duration"] + row["overhead"] - 1e-6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 8, 16]), st.integers(0, 300), st.integers(1, 300)),
                     min_size=1, max_size=25),
       policy=st.sampled_from(["srtf-ars", "srtf-wrs", "sjf-ffs", "sjf-bsbf"]), max_jobs=st.sampled_from([2, 3]))
def test_nodes_passed_over_for_sharing_could_never_have_held_the_job(rows, policy, max_jobs):
    """Sharing placements only skip nodes that no partner cost could make a candidate: the same runs as
    when every node is weighed (only the number of slowdown lookups differs)."""
    from simcluster.policies import sharing

    rows = [("a", g, t, d) for g, t, d in sorted(rows, key=lambda r: r[1])]
    # slowdowns that differ by pair, so which partners a placement weighs shows in the results
    trace = make_trace(rows, {"a": 3})
    trace.frame["model"], trace.frame["dataset"], trace.frame["amp"] = "M", "D", 0
    trace.frame["batchsize"] = [16 * (1 + i % 3) for i in range(len(rows))]

    def results():
        model = FixedColocation(0.6, memory=500.0)
        model.pair_speeds = lambda a, na, b, nb: (0.5 + 0.1 * (a.batchsize // 16), 0.9 - 0.1 * (b.batchsize // 16))
        return simulate(trace, SimConfig(policy=policy, max_jobs_per_gpu=max_jobs), colocation=model).jobs

    pruned = results()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sharing, "may_share_on", lambda node, need, max_jobs: True)
        weighed = results()
    pd.testing.assert_frame_equal(pruned, weighed)
