"""Pollux's cores without the engine: the goodput model and its fit, the agent's batch choice, the cluster-wide
allocation, and the simulator's Optimus+Oracle and two-queue Tiresias."""

from __future__ import annotations

import collections
import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.elastic.goodput import (
    GoodputFunction,
    GradParams,
    PerfParams,
    SpeedupFunction,
    _Loss,
    accum_time,
    fit_perf_params,
    log_optim_time,
    network_time,
)
from simcluster.elastic.pollux_alloc import (
    AllocJob,
    is_feasible,
    objective,
    optimize_allocation,
    restart_factor,
)
from simcluster.elastic.pollux_apps import load_pollux_apps
from simcluster.elastic.pollux_baselines import (
    OptimusJob,
    TiresiasTwoQueue,
    free_gpus,
    optimus_allocate,
    optimus_step_time,
    packed_layout,
    place,
)
from simcluster.elastic.pollux_job import PolluxJobModel
from simcluster.paths import shared_data_dir

TRUE = PerfParams(0.02, 0.0005, 0.15, 0.01, 0.04, 0.004, 2.0)


def observations(params: PerfParams, configs: list[tuple[int, int, int]]) -> tuple[np.ndarray, ...]:
    nodes, replicas, atomic = (np.array(c, dtype=float) for c in zip(*configs, strict=True))
    accum = accum_time(params, atomic)
    optim = np.exp(log_optim_time(params, accum, network_time(params, nodes, replicas)))
    return nodes, replicas, atomic, accum, optim


def test_the_fit_agrees_with_pollux_own_fit() -> None:
    """Reference parameters computed by the authors' goodput.py (autograd's gradient, scipy 1.5) on the same
    observations: step and sync times of five configurations."""
    nodes, replicas, atomic = [1, 1, 2, 4, 1], [1, 2, 8, 16, 4], [64, 128, 256, 200, 300]
    step = np.array([0.1, 0.2, 0.5, 0.6, 0.4])
    sync = np.array([0.0005, 0.02, 0.2, 0.3, 0.05])
    fitted = fit_perf_params(nodes, replicas, atomic, step - sync, step)
    pollux = [0.02466, 0.00118, 0.08752, 0.02184, 0.03596, 0.0, 1.14597]
    np.testing.assert_allclose(fitted, pollux, atol=1e-5)


def test_unidentifiable_parameters_are_pinned_as_pollux_pins_them() -> None:
    nodes, replicas, atomic, accum, optim = observations(TRUE, [(1, 1, 128)])
    fitted = fit_perf_params(nodes, replicas, atomic, accum, optim)
    assert fitted.alpha_c == pytest.approx(accum[0] / 2)  # one batch size seen: half the compute is fixed
    assert fitted.alpha_r == pytest.approx(1e-8) and fitted.beta_r == pytest.approx(1e-8)
    assert fitted.alpha_n >= 1.1 * fitted.alpha_r  # the prior: across nodes is slower


def test_the_loss_gradient_is_exact() -> None:
    nodes, replicas, atomic, accum, optim = observations(TRUE, [(1, 1, 64), (1, 4, 128), (2, 8, 128), (3, 12, 32)])
    optim = optim * np.array([1.1, 0.9, 1.05, 1.0])  # away from the optimum, where every term moves
    loss = _Loss(nodes, replicas, atomic, accum, optim)
    for point in (np.array([0.05, 0.001, 0.2, 0.02, 0.1, 0.01, 1.7]), np.array(TRUE) * 1.3):
        _, gradient = loss(point)
        for i in range(7):
            step = np.zeros(7)
            step[i] = 1e-7 * max(abs(point[i]), 1e-3)
            numeric = (loss(point + step)[0] - loss(point - step)[0]) / (2 * step[i])
            assert gradient[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_the_best_batch_is_the_best_of_the_candidates_and_respects_the_per_gpu_range() -> None:
    goodput = GoodputFunction(TRUE, GradParams(1.0, 50.0), 128)
    for nodes, replicas in ((1, 1), (1, 4), (2, 8), (4, 16)):
        best, atomic, accum = goodput.optimize(nodes, replicas, 4096, (32, 512), accumulation=True)
        assert 32 <= atomic <= 512 and replicas * atomic * (accum + 1) <= 4096 * 1.02
        smallest = max(128, 32 * replicas)  # the first of the 50 candidate batches
        start_accum = 1 if replicas == 1 and smallest > 128 else 0
        start = goodput(nodes, replicas, int(np.ceil(smallest / replicas / (start_accum + 1))), start_accum)
        assert float(start) <= best * (1 + 1e-9)


def test_efficiency_falls_with_the_batch_and_is_one_at_the_start() -> None:
    goodput = GoodputFunction(TRUE, GradParams(1.0, 4.0), 128)
    values = [float(goodput.efficiency(b)) for b in (128, 256, 1024, 4096)]
    assert values[0] == 1.0 and values == sorted(values, reverse=True)


def test_a_speedup_is_relative_to_its_base() -> None:
    fn = SpeedupFunction(GoodputFunction(TRUE, GradParams(1.0, 50.0), 128), 4096, (32, 512), base=(1, 2))
    assert fn(1, 2) == pytest.approx(1.0) and fn(0, 0) == 0.0 and fn(1, 1) < 1.0


# ----------------------------------------------------------------------------- the agent
@pytest.fixture(scope="module")
def apps():  # type: ignore[no-untyped-def]
    path = shared_data_dir() / "pollux" / "apps"
    if not path.is_dir():
        pytest.skip(f"reference data not found at {path} (set SIMCLUSTER_DATA to the shared data folder)")
    return load_pollux_apps(path)


def test_a_new_job_runs_at_its_starting_batch_and_may_only_double_what_it_was_measured_on(apps) -> None:
    job = PolluxJobModel(apps["cifar10"])
    assert job.max_replicas() == 1 and job.speedup_fn(base=(1, 2))(1, 4) == 2.0
    assert job.choose_batch((1,)) == (128, 0) and job.choose_batch((4, 4)) == (32, 0)
    step, sync = apps["cifar10"].step_times((1,), 128)
    sqr, var = apps["cifar10"].grad_stats(128, 0)
    job.observe((1,), 128, step, sync, sqr, var)
    assert job.max_replicas() == 2 and job.goodput_fn() is not None
    step, sync = apps["cifar10"].step_times((2,), 128)
    job.observe((2,), 128, step, sync, sqr, var)
    assert job.max_replicas() == 4 and len(job.profile) == 2
    atomic, accum = job.choose_batch((2, 2))
    assert apps["cifar10"].min_local_bsz <= atomic <= apps["cifar10"].max_local_bsz
    assert 4 * atomic * (accum + 1) <= apps["cifar10"].max_batch_size


def test_ncf_keeps_its_fixed_batch_on_one_gpu(apps) -> None:
    job = PolluxJobModel(apps["ncf"], fixed_batch=32768, replica_cap=1)
    assert job.max_replicas() == 1 and job.choose_batch((1,)) == (16384, 1)


def test_the_true_model_reads_the_measurements(apps) -> None:
    job = PolluxJobModel(apps["cifar10"], true_model=True, growth_limit=False)
    speedup = job.speedup_fn()
    assert speedup(1, 1) == pytest.approx(1.0) and speedup(1, 4) > 1.5 and job.max_replicas() == 64
    atomic, accum = job.choose_batch((4,))
    assert job.best_goodput(1, 4) == pytest.approx(apps["cifar10"].goodput((4,), atomic, accum, 0))


# ----------------------------------------------------------------------------- the allocation
def test_the_restart_penalty_is_the_share_of_life_left_after_one_more_restart() -> None:
    assert restart_factor(270, 0) == pytest.approx(0.9)
    assert restart_factor(570, 1) == pytest.approx(0.9)
    assert restart_factor(10, 5) == 0.0


def concave(power: float, across: float = 1.2):  # type: ignore[no-untyped-def]
    return lambda n, r: 0.0 if r == 0 else r ** power / (across if n > 1 else 1.0)


def exhaustive(jobs: list[AllocJob], node_gpus: list[int]) -> float:
    rows = [[r for r in itertools.product(*(range(g + 1) for g in node_gpus)) if sum(r) <= j.max_replicas]
            for j in jobs]
    return max(objective(jobs, choice, node_gpus) for choice in itertools.product(*rows)
               if is_feasible(jobs, choice, node_gpus))


def test_the_allocation_is_near_the_exhaustive_optimum_on_small_clusters() -> None:
    rng = random.Random(11)
    ratios = []
    for _ in range(60):
        node_gpus = rng.choice([[2, 2], [4], [3, 3], [4, 4], [2, 2, 2]])
        jobs = [AllocJob(f"j{k}", concave(rng.uniform(0.3, 1.0), rng.uniform(1.0, 1.5)),
                         max_replicas=rng.randint(1, sum(node_gpus)), restart_factor=rng.uniform(0.5, 1.0))
                for k in range(rng.randint(1, 3))]
        rows = optimize_allocation(jobs, node_gpus)
        assert is_feasible(jobs, rows, node_gpus)
        ratios.append(objective(jobs, rows, node_gpus) / exhaustive(jobs, node_gpus))
    assert min(ratios) > 0.9 and np.mean(np.isclose(ratios, 1.0)) > 0.85


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.2, 1.0), st.integers(1, 16), st.floats(0.0, 1.0), st.integers(0, 8)),
                min_size=1, max_size=12),
       st.sampled_from([[4] * 4, [4] * 16, [8] * 3, [2, 4, 8]]))
def test_every_allocation_keeps_pollux_constraints(specs, node_gpus) -> None:  # type: ignore[no-untyped-def]
    jobs, used = [], [0] * len(node_gpus)
    for k, (power, cap, factor, current) in enumerate(specs):
        node = k % len(node_gpus)
        take = min(current, node_gpus[node] - used[node], cap)
        used[node] += take
        row = tuple(take if i == node else 0 for i in range(len(node_gpus))) if take else ()
        jobs.append(AllocJob(f"j{k}", concave(power), max_replicas=cap, restart_factor=factor, current=row))
    rows = optimize_allocation(jobs, node_gpus)
    assert is_feasible(jobs, rows, node_gpus)
    assert len(rows) == len(jobs) and all(len(r) == len(node_gpus) for r in rows)


def test_a_job_whose_restart_would_cost_its_whole_life_keeps_its_gpus() -> None:
    jobs = [AllocJob("old", concave(0.9), max_replicas=4, restart_factor=0.0, current=(2, 0)),
            AllocJob("new", concave(0.9), max_replicas=4, restart_factor=1.0)]
    rows = optimize_allocation(jobs, [4, 4])
    assert rows[0] == (2, 0) and sum(rows[1]) > 0


def test_one_gpu_each_before_more_for_anyone_under_the_harmonic_mean() -> None:
    jobs = [AllocJob(f"j{k}", concave(0.95), max_replicas=8) for k in range(4)]
    rows = optimize_allocation(jobs, [2, 2])
    assert [sum(r) for r in rows] == [1, 1, 1, 1]


# ----------------------------------------------------------------------------- Optimus and Tiresias
def test_gpus_are_placed_on_the_node_with_most_free_first_earliest_on_ties() -> None:
    free = free_gpus({0: 4, 1: 4, 2: 4}, {"a": [0, 0, 0, 0], "b": [1]})
    assert 0 not in free  # a full node is not in the count at all (a Counter difference)
    assert place(5, free) == [2, 2, 2, 2, 1] and free[1] == 2
    assert packed_layout(10) == (4, 4, 2)


def test_optimus_gives_one_gpu_each_then_the_largest_fall_in_remaining_time(apps) -> None:
    jobs = {"c": OptimusJob(apps["cifar10"], 2048, 0, 2048 // 32), "n": OptimusJob(apps["ncf"], 32768, 0, 1)}
    out = optimus_allocate(jobs, {i: 4 for i in range(2)}, {})
    assert len(out["n"]) == 1 and len(out["c"]) == 7  # ncf cannot grow; cifar10 takes the rest
    assert collections.Counter(out["c"] + out["n"]) == {0: 4, 1: 4}
    assert optimus_step_time(jobs["c"], 1) > optimus_step_time(jobs["c"], 7)
    again = optimus_allocate(jobs, {i: 4 for i in range(2)}, out)
    assert again == out  # unchanged counts keep their GPUs


def test_tiresias_demotes_after_16_gpu_hours_and_lets_smaller_jobs_pass() -> None:
    policy = TiresiasTwoQueue()
    nodes = {0: 4, 1: 4}
    requests = {"big": 8, "small": 2}
    first = policy.allocate(0, requests, nodes, {})
    assert len(first["big"]) == 8 and "small" not in first  # first come, first served; small does not fit
    second = policy.allocate(2 * 3600, requests, nodes, first)  # big ran 16 GPU-hours: demoted
    assert policy.queue1 == ["big"] and policy.queue0 == ["small"]
    assert len(second["small"]) == 2 and "big" not in second  # big no longer fits beside small: preempted
    requests["tiny"] = 1
    third = policy.allocate(2 * 3600 + 60, requests, nodes, second)
    assert len(third["tiny"]) == 1 and "big" not in third


def test_the_two_queue_tiresias_places_new_jobs_like_optimus() -> None:
    policy = TiresiasTwoQueue()
    out = policy.allocate(0, {"a": 3, "b": 4, "c": 1}, {0: 4, 1: 4}, {})
    assert out == {"a": [0, 0, 0], "b": [1, 1, 1, 1], "c": [0]}

