"""Invariants on random small traces, for every policy and placement."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import make_trace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.metrics import Observer
from simcluster.placement import PLACEMENTS
from simcluster.policies import POLICIES

VCS = {"a": 2, "b": 1}
FIXED_SIZE = [p for p in POLICIES.names() if not POLICIES.get(p).elastic]  # (elastic ones: test_elastic_engine.py)


class CapacityGuard(Observer):
    """Checks, at every start, that no GPU holds more than two jobs and node counts agree."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, float]] = []

    def on_start(self, job: Job, now: float) -> None:
        self.starts.append((job.job_id, now))
        assert sum(n for _, n in ((node, len(g)) for node, g in job.allocation)) == job.gpu_num
        for node, gpus in job.allocation:
            assert node.up
            assert node.used <= node.gpu_count
            assert sum(bool(holders) for holders in node.gpus) == node.used
            assert all(job in node.gpus[i] and len(node.gpus[i]) <= 2 for i in gpus)


jobs_strategy = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 3, 4, 8, 16]),
              st.integers(0, 500), st.integers(0, 400)),
    min_size=1, max_size=25,
).map(lambda rows: [(vc, min(g, VCS[vc] * 8), t, d) for vc, g, t, d in sorted(rows, key=lambda r: r[2])])

fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(rows, **cfg) -> tuple[pd.DataFrame, CapacityGuard]:
    guard = CapacityGuard()
    result = simulate(make_trace(rows, VCS), SimConfig(**cfg), [guard])
    return result.jobs, guard


@fast
@given(rows=jobs_strategy, policy=st.sampled_from(FIXED_SIZE), placement=st.sampled_from(PLACEMENTS.names()))
def test_every_job_starts_after_submission_and_finishes_exactly_once(rows, policy, placement):
    jobs, guard = run(rows, policy=policy, placement=placement, seed=3)
    assert len(jobs) == len(rows) and jobs["job_id"].is_unique
    assert len(guard.starts) >= len(rows)  # every start was checked against capacity
    assert (jobs["start_time"] >= jobs["submit_time"]).all()
    assert (jobs["end_time"] >= jobs["start_time"]).all()
    assert (jobs["jct"] >= jobs["duration"]).all()
    assert np.allclose(jobs["jct"], jobs["queue"] + jobs["busy_time"])
    # work is conserved: busy time is the duration plus the overheads charged (more while slowed by sharing)
    if POLICIES.get(policy).shares_gpus:
        assert (jobs["busy_time"] >= jobs["duration"] + jobs["overhead"] - 1e-6).all()
    else:
        assert (jobs["busy_time"] == jobs["duration"] + jobs["overhead"]).all()


@fast
@given(rows=jobs_strategy, placement=st.sampled_from(PLACEMENTS.names()))
def test_fifo_starts_the_jobs_of_a_vc_in_submit_order(rows, placement):
    jobs, _ = run(rows, policy="fifo", placement=placement)
    for _, vc_jobs in jobs.groupby("vc"):
        assert vc_jobs["start_time"].is_monotonic_increasing  # jobs table is in trace order


@fast
@given(rows=jobs_strategy)
def test_non_preemptive_policies_never_preempt(rows):
    for policy in ("fifo", "sjf"):
        jobs, _ = run(rows, policy=policy)
        assert (jobs["preemptions"] == 0).all()
        assert (jobs["end_time"] - jobs["start_time"] == jobs["duration"]).all()


@fast
@given(rows=jobs_strategy)
def test_srtf_busy_time_is_duration_plus_preemption_overheads(rows):
    jobs, _ = run(rows, policy="srtf")
    overhead = jobs["preemptions"] * jobs["gpu_num"].map(lambda g: 40 if g <= 8 else 60)
    assert (jobs["busy_time"] == jobs["duration"] + overhead).all()


@fast
@given(rows=jobs_strategy, policy=st.sampled_from(FIXED_SIZE), seed=st.integers(0, 5))
def test_node_failures_lose_work_but_every_job_still_finishes_once(rows, policy, seed):
    jobs, _ = run(rows, policy=policy, seed=seed, node_mtbf=300, node_repair=50, checkpoint_interval=60)
    assert len(jobs) == len(rows)
    # failure times are random reals: compare up to rounding
    spent = jobs["duration"] + jobs["overhead"] + jobs["lost_work"]
    if POLICIES.get(policy).shares_gpus:
        assert (jobs["busy_time"] >= spent - 1e-6).all()
    else:
        assert np.allclose(jobs["busy_time"], spent)
    assert (jobs.loc[jobs["restarts"] == 0, "lost_work"] == 0).all()


@fast
@given(rows=jobs_strategy, policy=st.sampled_from(FIXED_SIZE), placement=st.sampled_from(PLACEMENTS.names()))
def test_same_trace_policy_and_seed_give_identical_results(rows, policy, placement):
    cfg = {"policy": policy, "placement": placement, "seed": 11, "node_mtbf": 500, "node_repair": 30}
    first, _ = run(rows, **cfg)
    again, _ = run(rows, **cfg)
    pd.testing.assert_frame_equal(first, again)
