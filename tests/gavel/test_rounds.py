"""Gavel's round mechanism as a policy of the engine: invariants (hypothesis) and the mid-round behaviour we chose."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcluster.api import simulate
from simcluster.cluster import VirtualCluster
from simcluster.policies import POLICIES
from simcluster.policies.gavel import RoundPolicy
from simcluster.policies.gavel.mechanism import Mechanism
from simcluster.policies.gavel.rounds import Rounds
from simcluster.presets import resolve_config
from tests.gavel.conftest import make_trace, small_table
from tests.shapes import Audit

TABLE = small_table()
ROUND_POLICIES = [n for n in POLICIES.names() if issubclass(POLICIES.get(n), RoundPolicy)]


def run(rows, policy="fifo_perf", cluster="fast:1,slow:1", weights=None, observers=(), preset=None, **config):
    settings = resolve_config(preset=preset, overrides={"policy": policy, "cluster": cluster, **config})
    result = simulate(make_trace(rows, weights), settings, observers=observers, throughputs=TABLE)
    return result.jobs, result.timeline, result.summary


jobs_strategy = st.lists(
    st.tuples(st.sampled_from(["A", "B", "C"]), st.sampled_from([1, 1, 1, 2]), st.integers(50, 5000),
              st.floats(0, 3000, allow_nan=False)),
    min_size=1, max_size=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=jobs_strategy, policy=st.sampled_from(ROUND_POLICIES), preset=st.sampled_from([None, "gavel"]),
       counts=st.tuples(st.integers(2, 4), st.integers(2, 4)), round_seconds=st.sampled_from([60.0, 360.0]))
def test_every_policy_in_both_modes_keeps_capacity_finishes_each_job_once_and_does_all_its_work(
        rows, policy, preset, counts, round_seconds):
    audit = Audit(one_type=True)
    frame, timeline, _ = run(rows, policy, f"fast:{counts[0]},slow:{counts[1]}", observers=[audit],
                                   preset=preset, round_seconds=round_seconds)
    assert audit.most_busy["fast"] <= counts[0] and audit.most_busy["slow"] <= counts[1]
    assert (timeline["busy_gpus"] <= sum(counts)).all()
    assert len(frame) == len(rows) and frame["job_id"].is_unique and frame["end_time"].notna().all()
    assert sorted(audit.finished.values()) == [1] * len(rows)
    assert (frame["end_time"] >= frame["submit_time"]).all()
    assert audit.work_left_at_finish < 1e-6


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
    frame, _, _ = run([("A", 2, 5000, 0.0), ("B", 2, 3000, 0.0)], policy="max_min_fairness_packed",
                            cluster="fast:2")
    assert (frame["shared_seconds"] > 0).all()
    assert frame["end_time"].notna().all()


DEFERRED = {"realloc_interval": 1920.0, "midround_release": False}


def start_of(frame, job):
    return frame.set_index("job_id").loc[job, "start_time"]


def test_a_new_job_waits_for_the_next_reset_only_when_asked():
    # A holds the fast GPU from t=0; B arrives at 10 while the slow GPU is idle; no reset before t=1920
    rows = [("A", 1, 40000, 0.0), ("C", 1, 100, 10.0)]
    ours, _, _ = run(rows, "max_min_fairness_perf", **DEFERRED)
    waits, _, _ = run(rows, "max_min_fairness_perf", new_jobs_wait=True, **DEFERRED)
    assert start_of(ours, "j1") == 360.0  # the next round, on the idle GPU
    assert start_of(waits, "j1") == 2160.0  # the first round after 1920 s


def test_gavels_reset_clock_does_not_count_from_a_reset_at_time_zero():
    rows = [("A", 1, 40000, 0.0), ("C", 1, 100, 10.0)]
    frame, _, _ = run(rows, "max_min_fairness_perf", new_jobs_wait=True, reset_rule="gavel", **DEFERRED)
    assert start_of(frame, "j1") == 360.0


def test_with_gavels_clock_an_idle_cluster_waits_for_the_next_arrival_then_resets():
    # A (500 → 600 s) starts the interval at 500; B arrives at 1000 outside the allocation
    rows = [("C", 1, 100, 500.0), ("C", 1, 100, 1000.0), ("C", 1, 100, 3000.0)]
    gavel, _, _ = run(rows, "max_min_fairness_perf", new_jobs_wait=True, reset_rule="gavel", **DEFERRED)
    ticking, _, _ = run(rows, "max_min_fairness_perf", new_jobs_wait=True, **DEFERRED)
    assert start_of(gavel, "j1") == 3000.0  # time jumps to the next arrival, which may reset (≥ 1920 s)
    assert start_of(ticking, "j1") == 2440.0  # rounds tick from 1000 s; the first one past 2420 s resets
    # with no arrival left, Gavel's clock forces the reset at once
    last, _, _ = run(rows[:2], "max_min_fairness_perf", new_jobs_wait=True, reset_rule="gavel", **DEFERRED)
    assert start_of(last, "j1") == 1000.0


def test_gavel_fills_the_fastest_type_first_for_gandiva_too():
    gavel = Mechanism(type_order="gavel")
    ours = Mechanism()
    for name, aware in [("gandiva", False), ("max_min_fairness", False), ("gavel_fifo", False),
                        ("max_min_fairness_perf", True), ("fifo_packed", True)]:
        policy = POLICIES.get(name)()
        assert ours.fills_fastest_first(policy) is aware, name
        assert gavel.fills_fastest_first(policy) is (aware or name == "gandiva"), name


class Context:
    throughputs = TABLE


def pair_state(mechanism=None):
    """White box: a VC's round state after a reset that gave the pair (A, C) 60 % of the fast GPU and C
    alone 10 %, both jobs arrived."""
    trace = make_trace([("A", 1, 350, 0.0), ("C", 1, 5000, 0.0)])
    vc = VirtualCluster("cluster", groups=[("fast", 1, 1, 0.0), ("slow", 1, 1, 0.0)])
    rounds = Rounds(vc, POLICIES.get("max_min_fairness_packed")(), mechanism or Mechanism())
    jobs = trace.make_jobs(TABLE)
    for job in jobs:
        rounds.arrive(job, Context())
    rounds.in_alloc[:2] = True
    rounds.X[1] = [0.1, 0.0]
    rounds.alloc = {(0, 1): np.array([0.6, 0.0])}
    return rounds


def test_the_partner_of_a_finished_pair_keeps_the_pair_share_until_the_next_reset():
    # A finishes 200 s after the reset: the pair leaves the allocation, C's share, time received and
    # deficit take in the pair's
    rounds = pair_state()
    rounds.received = {(0, 1): np.array([180.0 + 150.0, 180.0])}  # R/2 + 150 s shared on fast
    rounds.deficit = {(0, 1): np.array([20.0, 0.0])}
    del rounds.active[0]
    rounds._retire_pairs(0)
    assert rounds.alloc == {} and rounds.received == {} and rounds.deficit == {}
    assert rounds.X[1].tolist() == pytest.approx([0.7, 0.0])
    assert rounds.G[1].tolist() == pytest.approx([180.0 + 150.0, 180.0])
    assert rounds.Dm[1].tolist() == pytest.approx([20.0, 0.0])


def test_with_gavels_rule_a_finished_jobs_pair_share_lapses():
    rounds = pair_state(Mechanism(pair_share_on_finish="drop"))
    del rounds.active[0]
    rounds._retire_pairs(0)
    assert rounds.alloc == {} and rounds.X[1].tolist() == pytest.approx([0.1, 0.0])


def test_gavel_preset_runs_a_packed_policy_whose_pairs_outlive_a_partner():
    # the crash of issue 15: with deferred reallocation a finished job's pair used to be restarted
    rows = [("A", 1, 350, 0.0), ("C", 1, 5000, 0.0), ("B", 1, 20000, 0.0), ("B", 1, 900, 400.0)]
    for policy in ("max_min_fairness_packed", "gandiva", "fifo_packed"):
        frame, _, _ = run(rows, policy, cluster="fast:1", preset="gavel")
        assert len(frame) == 4 and frame["end_time"].notna().all(), policy
