"""The round-based mechanism: invariants (hypothesis) and the mid-round behaviour we chose."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.config import SimConfig
from simcluster.hetero.policies import HETERO_POLICIES
from simcluster.hetero.run import simulate_hetero
from tests.hetero.conftest import make_trace, small_table

TABLE = small_table()


def run(rows, policy="fifo_perf", cluster="fast:1,slow:1", audit=None, weights=None, **config):
    return simulate_hetero(make_trace(rows, weights), SimConfig(policy=policy, cluster=cluster, **config),
                           audit=audit, table=TABLE)


jobs_strategy = st.lists(
    st.tuples(st.sampled_from(["A", "B", "C"]), st.sampled_from([1, 1, 1, 2]), st.integers(50, 5000),
              st.floats(0, 3000, allow_nan=False)),
    min_size=1, max_size=10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(HETERO_POLICIES.names()),
       counts=st.tuples(st.integers(2, 4), st.integers(2, 4)), round_seconds=st.sampled_from([60.0, 360.0]))
def test_capacity_is_never_exceeded_every_job_finishes_once_and_steps_are_conserved(rows, policy, counts, round_seconds):
    audit: list = []
    frame, timeline, summary = run(rows, policy, f"fast:{counts[0]},slow:{counts[1]}", audit,
                                   round_seconds=round_seconds)
    for _, busy, milli, fullest in audit:
        assert busy[0] <= counts[0] and busy[1] <= counts[1]
        assert max(fullest) <= 1000
        assert milli[0] <= 1000 * counts[0] and milli[1] <= 1000 * counts[1]
    assert (timeline["busy_gpus"] <= sum(counts)).all()
    assert len(frame) == len(rows) and frame["job_id"].is_unique and summary["unfinished"] == 0
    assert (frame["end_time"] >= frame["submit_time"]).all()
    assert np.allclose(frame["steps_done"], frame["total_steps"], rtol=1e-9, atol=1e-6)


def test_a_gpu_freed_mid_round_goes_to_the_waiting_job_at_once():
    # one GPU; A needs 100 s (4 it/s × 100 s = 400 iterations), B waits and starts at 100 s, not at 360 s
    frame, _, _ = run([("A", 1, 400, 0.0), ("B", 1, 200, 0.0)], cluster="fast:1")
    assert frame.set_index("job_id").loc["j0", "end_time"] == 100.0
    assert frame.set_index("job_id").loc["j1", "start_time"] == 100.0
    assert frame.set_index("job_id").loc["j1", "end_time"] == 200.0


def test_an_arrival_takes_an_idle_gpu_at_once():
    frame, _, _ = run([("A", 1, 4000, 0.0), ("C", 1, 100, 30.0)], cluster="fast:1,slow:1")
    row = frame.set_index("job_id").loc["j1"]
    assert row["start_time"] == 30.0 and row["end_time"] == 130.0


def test_rounds_time_share_one_gpu_between_two_jobs():
    # max-min fairness on one GPU: the two jobs alternate round by round
    frame, _, summary = run([("C", 1, 720, 0.0), ("C", 1, 720, 0.0)], policy="max_min_fairness", cluster="fast:1")
    assert summary["preemptions"] >= 1
    assert sorted(frame["end_time"]) == [1080.0, 1440.0]


def test_the_partner_of_a_finished_pair_runs_on_at_its_solo_speed():
    # one fast GPU; A and C share it at 3.5 and 0.8 it/s (the LP prefers that: normalised 1.75 and 1.6 vs 1
    # time-slicing).  A (350 iterations) ends at 100 s; C has done 80 of 200 and runs on alone at 1 it/s.
    frame, _, _ = run([("A", 1, 350, 0.0), ("C", 1, 200, 0.0)], policy="max_min_fairness_packed", cluster="fast:1")
    ends = frame.set_index("job_id")["end_time"]
    assert ends["j0"] == 100.0
    assert abs(ends["j1"] - 220.0) < 1e-6
    assert frame.set_index("job_id").loc["j1", "shared_seconds"] == 100.0


def test_packed_policy_pairs_jobs_and_reports_sharing():
    frame, _, summary = run([("A", 1, 3000, 0.0), ("B", 1, 2000, 0.0), ("C", 1, 2000, 0.0)],
                            policy="max_min_fairness_packed", cluster="fast:1")
    assert frame["shared_seconds"].sum() > 0
    assert "colocation" in summary and summary["shared_gpu_fraction"] > 0
    assert 0 < summary["gpu_utilization"] <= 1.0 + 1e-9


def test_priority_weights_are_honoured():
    # two identical jobs on one GPU under max-min fairness: the one with weight 3 finishes first
    frame, _, _ = run([("C", 1, 3600, 0.0), ("C", 1, 3600, 0.0)], policy="max_min_fairness", cluster="fast:1",
                      weights=[1.0, 3.0])
    ends = frame.set_index("job_id")["end_time"]
    assert ends["j1"] < ends["j0"]


def test_gavel_reallocation_interval_is_available():
    rows = [("A", 1, 4000, 0.0), ("B", 1, 3000, 10.0), ("C", 1, 3000, 20.0)]
    _, _, every = run(rows, policy="max_min_fairness_perf")
    _, _, gavel = run(rows, policy="max_min_fairness_perf", realloc_interval=1920.0)
    assert gavel["allocations"] <= every["allocations"]


def test_multi_gpu_jobs_of_equal_scale_share_their_gpus():
    # two 2-GPU jobs on two fast GPUs: (A, B) at scale 2 share at 5.0 and 3.0 it/s (normalised 5/3.5 + 3/... > 1)
    frame, _, summary = run([("A", 2, 5000, 0.0), ("B", 2, 3000, 0.0)], policy="max_min_fairness_packed",
                            cluster="fast:2")
    assert (frame["shared_seconds"] > 0).all()
    assert summary["unfinished"] == 0
