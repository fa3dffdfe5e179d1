"""The allocation LPs on instances small enough to solve by hand."""

from __future__ import annotations

import numpy as np
import pytest

from simcluster.config import SimConfig
from simcluster.policies import POLICIES
from simcluster.policies.gavel import AllocationInput
from simcluster.policies.gavel.finish_time_fairness import finish_time_fair
from simcluster.policies.gavel.lp import isolated_allocation, max_min, proportional_throughput
from simcluster.policies.gavel.min_total_duration import bisect_makespan, min_makespan


def inp(T, capacity, *, scale=None, weight=None, remaining=None, age=None, pairs=None, pair_tput=None):
    T = np.asarray(T, float)
    n = len(T)
    out = AllocationInput(list(range(n)), T, np.asarray(scale or [1.0] * n, float),
                          np.asarray(weight or [1.0] * n, float), np.asarray(remaining or [100.0] * n, float),
                          np.asarray(age or [0.0] * n, float), np.asarray(capacity, float))
    if pairs is not None:
        out.pairs, out.pair_throughput = np.asarray(pairs), np.asarray(pair_tput, float)
    return out


def test_weights_split_one_gpu_in_proportion():
    # one GPU, weights 1 and 3: s_i x_i / w_i equal and x_1 + x_2 = 1 → 1/4 and 3/4
    a = POLICIES.get("max_min_fairness")().allocate(inp([[1.0], [1.0]], [1], weight=[1, 3]))
    assert a.single.ravel() == pytest.approx([0.25, 0.75], abs=1e-6)


def test_a_four_gpu_job_gets_the_gpu_time_of_a_one_gpu_job_whatever_the_policy_form():
    # 8 equal GPUs, a 1-GPU and a 4-GPU job, both twice as fast on "fast": equal GPU time (s × time) in
    # both forms — the 1-GPU job all of its time, the 4-GPU job a quarter (4 × 1/4 = 1 × 1), well under
    # load: 3 + 1 jobs wanting 7 GPUs on 4 fast + 4 slow ones.
    T = [[2.0, 1.0]] * 3 + [[2.0, 1.0]]
    problem = inp(T, [2, 2], scale=[1, 1, 1, 4])
    for name in ("max_min_fairness", "max_min_fairness_perf"):
        a = POLICIES.get(name)().allocate(problem)
        gpu_time = a.single.sum(axis=1) * problem.scale
        assert gpu_time == pytest.approx([gpu_time[0]] * 4, rel=1e-6), name


def test_the_normaliser_is_the_proportional_share_whatever_the_scale_factor():
    problem = inp([[4.0, 1.0], [4.0, 1.0]], [1, 3], scale=[1, 4])
    assert proportional_throughput(problem).tolist() == [1.75, 1.75]


def test_aware_max_min_puts_each_job_where_it_is_comparatively_fast():
    # fast and slow GPU, one each.  A: 3 vs 1 it/s, B: 1 vs 2.  Proportional share = half of each type:
    # X_A = 2, X_B = 1.5.  A alone on fast: 3/2 = 1.5; B alone on slow: 2/1.5 = 4/3; B can never beat
    # 4/3 (its time is at most 1 and slow is its best normalised type) → t* = 4/3, A keeps fast.
    problem = inp([[3.0, 1.0], [1.0, 2.0]], [1, 1])
    coef = problem.throughput / proportional_throughput(problem)[:, None]
    allocation, t = max_min(problem, coef)
    assert t == pytest.approx(4 / 3, rel=1e-6)
    assert allocation.single == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]), abs=1e-6)
    policy = POLICIES.get("max_min_fairness_perf")()
    assert policy.allocate(problem).single == pytest.approx(allocation.single, abs=1e-6)


def test_agnostic_max_min_spreads_time_by_type_size():
    a = POLICIES.get("max_min_fairness")().allocate(inp([[3.0, 1.0], [1.0, 2.0]], [1, 1]))
    assert a.single == pytest.approx(np.full((2, 2), 0.5), abs=1e-6)


def test_packing_pays_when_paired_throughputs_sum_above_one():
    # one GPU, two jobs at 1 it/s alone and 0.8 each together: alone each gets 1/2 → normalised 1;
    # packed the pair runs all the time → 0.8 / 0.5 = 1.6 each
    problem = inp([[1.0], [1.0]], [1], pairs=[[0, 1]], pair_tput=[[[0.8, 0.8]]])
    a = POLICIES.get("max_min_fairness_packed")().allocate(problem)
    assert a.pair[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert a.single.sum() == pytest.approx(0.0, abs=1e-6)
    # pairs that slow each other down more than time-slicing are never used
    bad = inp([[1.0], [1.0]], [1], pairs=[[0, 1]], pair_tput=[[[0.4, 0.4]]])
    b = POLICIES.get("max_min_fairness_packed")().allocate(bad)
    assert b.pair.sum() == pytest.approx(0.0, abs=1e-6)
    assert b.single.ravel() == pytest.approx([0.5, 0.5], abs=1e-6)


def test_makespan_on_one_gpu_is_the_total_work():
    # 100 and 300 iterations at 1 it/s on one GPU: x = 1/4, 3/4 and makespan 400 s
    allocation, makespan = min_makespan(inp([[1.0], [1.0]], [1], remaining=[100, 300]), None)
    assert makespan == pytest.approx(400.0, rel=1e-6)
    assert allocation.single.ravel() == pytest.approx([0.25, 0.75], abs=1e-6)


def test_makespan_is_bound_by_the_longest_job_when_gpus_are_plenty():
    _, makespan = min_makespan(inp([[1.0], [1.0]], [2], remaining=[100, 300]), None)
    assert makespan == pytest.approx(300.0, rel=1e-6)


def test_makespan_uses_heterogeneity():
    # fast: A 2, B 1 it/s; slow: both 1.  200 iterations each.  A fast, B slow → 100 s and 200 s; better:
    # B also takes part of fast?  B gains nothing there (1 it/s both) → makespan 200 with A anywhere ≤ 200.
    _, makespan = min_makespan(inp([[2.0, 1.0], [1.0, 1.0]], [1, 1], remaining=[200, 200]), None)
    assert makespan == pytest.approx(200.0, rel=1e-6)


def test_finish_time_fairness_on_complementary_jobs():
    # A: 4 vs 1 it/s, B: 1 vs 4; isolated (half of each type) both get 2.5 it/s → 40 s for 100
    # iterations.  A on fast and B on slow finish in 25 s: ρ = 25/40 = 0.625 for both.
    allocation, rho, _ = finish_time_fair(inp([[4.0, 1.0], [1.0, 4.0]], [1, 1]), None)
    assert rho == pytest.approx(0.625, rel=2e-3)
    assert allocation.single == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]), abs=1e-3)


def test_isolated_gives_each_job_an_equal_slice():
    x = isolated_allocation(inp([[1.0, 1.0]] * 4, [2, 2]))
    assert x == pytest.approx(np.full((4, 2), 0.5))
    # a job whose slices add up to more than all of its time is capped at it; the others keep theirs
    # (Gavel's IsolatedPolicy): the 2-GPU job keeps half of each type, 1 GPU of each
    x = isolated_allocation(inp([[1.0, 1.0]] * 2, [2, 2], scale=[1, 2]))
    assert x[0] == pytest.approx([0.5, 0.5]) and x[1] == pytest.approx([0.5, 0.5])


def test_fifo_perf_takes_the_fastest_type_with_room_in_arrival_order():
    a = POLICIES.get("fifo_perf")().allocate(inp([[4.0, 1.0], [4.0, 1.0], [4.0, 1.0]], [1, 1]))
    assert a.single.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]


@pytest.mark.parametrize("name", ["max_sum_throughput_perf", "min_total_duration_perf", "finish_time_fairness_perf",
                                  "isolated", "gandiva", "gavel_fifo", "fifo_packed", "min_total_duration_packed",
                                  "finish_time_fairness_packed", "finish_time_fairness", "min_total_duration"])
def test_every_policy_respects_the_base_constraints(name):
    rng = np.random.default_rng(3)
    T = rng.uniform(0.5, 4.0, (6, 3))
    pairs = np.array([[0, 1], [2, 3], [1, 4]])
    problem = inp(T, [2, 1, 2], remaining=list(rng.uniform(50, 500, 6)), age=list(rng.uniform(0, 100, 6)),
                  pairs=pairs, pair_tput=T[pairs].transpose(0, 2, 1) * 0.7)
    a = POLICIES.get(name)().allocate(problem)
    per_job = a.single.sum(axis=1).copy()
    for p, (i, k) in enumerate(pairs):
        per_job[i] += a.pair[p].sum()
        per_job[k] += a.pair[p].sum()
    assert (per_job <= 1 + 1e-6).all()
    assert (a.single.sum(axis=0) + a.pair.sum(axis=0) <= problem.capacity + 1e-6).all()
    assert (a.single >= -1e-9).all() and (a.pair >= -1e-9).all()


def test_finish_time_fairness_gives_the_heavier_job_the_earlier_finish():
    # one GPU, two equal jobs; weight 3 must reach a smaller ρ than weight 1
    problem = inp([[1.0], [1.0]], [1], weight=[1, 3])
    allocation, _, _ = finish_time_fair(problem, None)
    assert allocation.single[1, 0] > allocation.single[0, 0]
    assert allocation.single.sum() == pytest.approx(1.0, abs=1e-6)


CENTRAL = SimConfig(lp_solution="central")


def test_a_central_solution_splits_a_tie_where_a_vertex_takes_a_side():
    # two identical jobs, one GPU: every split maximises total throughput; a vertex gives it all to one job,
    # the interior point (Gavel's ECOS) halves it
    problem = inp([[1.0], [1.0]], [1])
    vertex = POLICIES.get("max_sum_throughput_perf")().allocate(problem)
    central = POLICIES.get("max_sum_throughput_perf")(CENTRAL).allocate(problem)
    assert sorted(vertex.single.ravel()) == pytest.approx([0.0, 1.0], abs=1e-6)
    assert central.single.ravel() == pytest.approx([0.5, 0.5], abs=1e-4)


def test_max_sum_throughput_sums_raw_iterations_per_second():
    # one GPU; A runs 10 it/s, B 1 it/s: the paper's objective gives the GPU to A (a sum of speed-ups would tie)
    a = POLICIES.get("max_sum_throughput_perf")().allocate(inp([[10.0], [1.0]], [1]))
    assert a.single.ravel() == pytest.approx([1.0, 0.0], abs=1e-6)


def test_central_max_min_keeps_the_least_and_spreads_the_rest():
    problem = inp([[3.0, 1.0], [1.0, 2.0]], [1, 1])
    vertex = POLICIES.get("max_min_fairness_perf")().allocate(problem)
    central = POLICIES.get("max_min_fairness_perf")(CENTRAL).allocate(problem)
    norm = problem.throughput / proportional_throughput(problem)[:, None]
    assert (norm * central.single).sum(axis=1).min() == pytest.approx((norm * vertex.single).sum(axis=1).min(),
                                                                       rel=1e-5)


def test_gavels_bisection_finds_the_makespan_within_five_percent_and_favours_no_job():
    # 100 and 300 iterations at 1 it/s on one GPU: least makespan 400 s
    problem = inp([[1.0], [1.0]], [1], remaining=[100, 300])
    allocation, makespan, solves = bisect_makespan(problem, None, central=True)
    assert 400.0 <= makespan <= 400.0 * 1.05 and solves > 5
    # both jobs finish before the makespan found: the slack is shared, not given to one job as a vertex would
    slack = allocation.single.ravel() * makespan - np.array([100, 300])
    assert (slack > 1e-3).all()
    policy = POLICIES.get("min_total_duration_perf")(SimConfig(makespan_search="bisection"))
    policy.allocate(problem)
    assert policy.solves == solves
