"""Every policy on every cluster shape: homogeneous VCs, a heterogeneous VC, heterogeneous VCs, GPU fractions.

On random small traces (hypothesis), for each policy × shape: no GPU holds more than it can, no GPU type is
busier than it has GPUs, each job runs only on types it can run on (one type at a time under Gavel's round
policies), every job finishes exactly once having done all its work, and the same run twice gives the same
results.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.cluster_spec import ClusterSpec, NodeGroup
from simcluster.config import SimConfig
from simcluster.job import Job, TypeSpeeds
from simcluster.policies import POLICIES
from simcluster.policies.gavel import RoundPolicy
from simcluster.throughputs import ThroughputTable
from simcluster.traces import JobLog, Trace
from simcluster.traces.hetero import FRAME_COLUMNS, HeteroTrace
from tests.gavel.conftest import small_table
from tests.shapes import Audit

TABLE = small_table()  # job types A, B, C on GPU types 'fast' and 'slow'
# lucid trains its models: one example below; elastic policies need jobs with scaling models (test_elastic_engine)
POLICY_NAMES = [p for p in POLICIES.names() if p != "lucid" and not POLICIES.get(p).elastic]
SHAPES = ("homogeneous VCs", "heterogeneous VC", "heterogeneous VCs", "GPU fractions")


class TypedJobLog(JobLog):
    """A job log whose jobs run at their index's speeds: fast only, twice as fast on fast, or 1× anywhere."""

    SPEEDS = (TypeSpeeds({"fast": 1.0}), TypeSpeeds({"fast": 1.0, "slow": 0.5}), None)

    def make_jobs(self, throughputs: ThroughputTable | None = None) -> list[Job]:
        jobs = super().make_jobs(throughputs)
        for job in jobs:
            job.speeds = self.SPEEDS[job.index % 3]
        return jobs


def shape(name: str, rows: list[tuple[int, int, int, int]]) -> tuple[Trace, SimConfig, dict[str, int]]:
    """A trace of ``rows`` (kind, GPUs, submit time, duration) on the shape, its settings, its GPUs per type."""
    if name == "heterogeneous VC":  # Gavel's job types on 2 fast + 4 slow GPUs in nodes of 2
        frame = pd.DataFrame([(f"j{i}", "ABC"[kind % 3], min(g, 2), 1000, 10.0 * d + 1, 1.0 + kind % 2, -1.0,
                               float(t), "", i + 1) for i, (kind, g, t, d) in enumerate(rows)], columns=FRAME_COLUMNS)
        trace = HeteroTrace("test", frame, "gavel")
        return trace, SimConfig(cluster="fast:2,slow:4", gpus_per_node=2), {"fast": 2, "slow": 4}
    if name == "GPU fractions":  # openb-style pods: quarters, halves and whole GPUs, some only on t4
        frame = pd.DataFrame([(f"p{i}", "unknown", 1 if kind % 4 else min(g, 2), (250, 500, 1000, 500)[kind % 4],
                               float(d + 1), 1.0, -1.0, float(t), "t4" if kind % 5 == 0 else "", i + 2)
                              for i, (kind, g, t, d) in enumerate(rows)], columns=FRAME_COLUMNS)
        cluster = ClusterSpec((NodeGroup("cluster", "t4", 2, 2), NodeGroup("cluster", "v100", 1, 2)), "test")
        return HeteroTrace("test", frame, "openb", cluster, True), SimConfig(), {"t4": 4, "v100": 2}
    frame = pd.DataFrame([(f"j{i}", "ab"[kind % 2], g if kind % 2 == 0 else min(g, 4), t, d)
                          for i, (kind, g, t, d) in enumerate(rows)],
                         columns=["job_id", "vc", "gpu_num", "submit_time", "duration"])
    frame["user"] = "u"
    frame = frame.sort_values("submit_time", kind="stable").reset_index(drop=True)
    if name == "homogeneous VCs":
        return JobLog("test", frame, {"a": 2, "b": 1}), SimConfig(gpus_per_node=4), {"gpu": 12}
    # two VCs of typed nodes of 4 GPUs: a has fast and slow, b slow and fast; typed jobs (TypedJobLog)
    cluster = ClusterSpec((NodeGroup("a", "fast", 1, 4), NodeGroup("a", "slow", 1, 4),
                           NodeGroup("b", "fast", 1, 4), NodeGroup("b", "slow", 1, 4)), "test")
    frame["gpu_num"] = frame["gpu_num"].clip(upper=4)  # every job fits on one type of its VC
    trace = TypedJobLog("test", frame, {"a": 2, "b": 2}, cluster=cluster)
    return trace, SimConfig(gpus_per_node=4), {"fast": 8, "slow": 8}


rows_strategy = st.lists(st.tuples(st.integers(0, 29), st.sampled_from([1, 1, 2, 4, 8]), st.integers(0, 600),
                                   st.integers(1, 500)), min_size=1, max_size=14)


def run(name: str, rows, policy: str, **extra):
    trace, config, capacity = shape(name, rows)
    audit = Audit(one_type=issubclass(POLICIES.get(policy), RoundPolicy))
    config = SimConfig(**{**config.as_dict(), "policy": policy, **extra})
    result = simulate(trace, config, [audit], throughputs=TABLE if isinstance(trace, HeteroTrace) else None)
    return result, audit, capacity


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_strategy, policy=st.sampled_from(POLICY_NAMES), name=st.sampled_from(SHAPES),
       placement=st.sampled_from(["consolidate", "fastest-free", "random"]))
def test_every_policy_on_every_shape_keeps_capacity_and_finishes_each_job_once(rows, policy, name, placement):
    result, audit, capacity = run(name, rows, policy, placement=placement, seed=2)
    jobs = result.jobs
    assert len(jobs) == len(rows) and jobs["job_id"].is_unique and jobs["end_time"].notna().all()
    assert sorted(audit.finished.values()) == [1] * len(rows)
    assert audit.work_left_at_finish < 1e-6
    assert all(audit.most_busy[t] <= n for t, n in capacity.items()), (audit.most_busy, capacity)
    assert (jobs["start_time"] >= jobs["submit_time"]).all() and (jobs["end_time"] >= jobs["start_time"]).all()
    again, _, _ = run(name, rows, policy, placement=placement, seed=2)
    pd.testing.assert_frame_equal(again.jobs, jobs)


@pytest.mark.parametrize("name", SHAPES)
def test_lucid_runs_on_every_shape(name):
    rows = [(k, (1, 2, 1, 4)[k % 4], 20 * k, 100 + 37 * k) for k in range(12)]
    result, audit, capacity = run(name, rows, "lucid", estimator="oracle", profiler_nodes=0)
    assert result.jobs["end_time"].notna().all() and sorted(audit.finished.values()) == [1] * 12
    assert all(audit.most_busy[t] <= n for t, n in capacity.items())


def test_a_job_spread_over_types_runs_at_its_slowest_gpu():
    # 2 fast + 2 slow GPUs in one VC, one 4-GPU job twice as fast on fast: consolidate spreads it over both
    # types, so it runs at the slow GPUs' speed, 0.5: 100 s of work take 200 s
    frame = pd.DataFrame({"job_id": ["j0"], "vc": ["a"], "gpu_num": [4], "submit_time": [0], "duration": [100],
                          "user": ["u"]})
    cluster = ClusterSpec((NodeGroup("a", "fast", 1, 2), NodeGroup("a", "slow", 1, 2)), "test")

    class Log(TypedJobLog):
        SPEEDS = (TypeSpeeds({"fast": 1.0, "slow": 0.5}),)

    result = simulate(Log("test", frame, {"a": 2}, cluster=cluster), SimConfig(gpus_per_node=2))
    assert result.jobs["end_time"].tolist() == [200.0]
    assert result.jobs[["seconds_fast", "seconds_slow"]].values.tolist() == [[200.0, 200.0]]
    assert result.summary["gpu_seconds_per_type"] == {"fast": 400.0, "slow": 400.0}


def test_fastest_free_puts_a_job_on_its_fastest_type_with_room_and_consolidate_does_not_look():
    # one VC: slow nodes first, then fast; a 2-GPU job twice as fast on fast
    frame = pd.DataFrame({"job_id": ["j0"], "vc": ["a"], "gpu_num": [2], "submit_time": [0], "duration": [100],
                          "user": ["u"]})
    cluster = ClusterSpec((NodeGroup("a", "slow", 1, 2), NodeGroup("a", "fast", 1, 2)), "test")

    class Log(TypedJobLog):
        SPEEDS = (TypeSpeeds({"fast": 1.0, "slow": 0.5}),)

    trace = Log("test", frame, {"a": 2}, cluster=cluster)
    aware = simulate(trace, SimConfig(gpus_per_node=2, placement="fastest-free"))
    agnostic = simulate(trace, SimConfig(gpus_per_node=2, placement="consolidate"))
    assert aware.jobs["end_time"].tolist() == [100.0] and agnostic.jobs["end_time"].tolist() == [200.0]


def test_cluster_merges_a_traces_vcs_into_one_and_says_so():
    trace, _, _ = shape("homogeneous VCs", [(0, 1, 0, 10), (1, 1, 5, 10)])
    result = simulate(trace, SimConfig(policy="srtf", cluster="v100:4,k80:4"))
    assert set(result.jobs["vc"]) == {"cluster"} and result.summary["cluster"]["k80"]["gpus"] == 4
    assert any("merged into one VC 'cluster'" in w for w in result.summary["warnings"])


def test_a_job_that_fits_no_single_type_is_refused_by_a_round_policy_only():
    trace, _, _ = shape("homogeneous VCs", [(0, 6, 0, 10)])
    assert simulate(trace, SimConfig(policy="srtf", cluster="v100:4,k80:4")).jobs["end_time"].tolist() == [10.0]
    with pytest.raises(ValueError, match="needs 6 GPU\\(s\\) of one type it runs on"):
        simulate(trace, SimConfig(policy="max_min_fairness", cluster="v100:4,k80:4"))
