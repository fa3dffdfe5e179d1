"""The engine's cheaper start and preemption keep what the plain work gives (issue 55 item 2, the engine's cost).

- a run's end made in one step (:class:`~simcluster.engine.events.Due`) comes out of SimPy's queue, on both
  kernels, where an event given :func:`~simcluster.engine.events.succeed_at` would;
- a node's allocation and release, with the VC's bookkeeping inlined (one XOR per bucket, a whole node's idle
  list handed over without a copy), leave every bucket, count and free list as a fresh count of the nodes gives,
  on VCs of one and of several GPU types, with nodes going down and up and a watcher of free counts;
- a preemption's cause is one record per (overhead, moving), and each job still counts its own preemptions;
- a job's remaining time and work without the builtin ``min`` equal the formula with it, and its states by
  module name are the enum's members.
"""

from __future__ import annotations

import random

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.cluster import NO_LIMIT, Node, Pool, VirtualCluster
from simcluster.config import SimConfig
from simcluster.engine.events import LATE, NORMAL, URGENT, Due, succeed_at
from simcluster.engine.kernel import make_kernel
from simcluster.engine.simulation import Simulation
from simcluster.job import FINISHED, PENDING, RUNNING, Job, JobState
from simcluster.run import resolve_run


def _fired_order(kernel_name: str, seed: int, use_due: bool) -> list[tuple[int, float]]:
    """Which of a few dozen events (random delays and priorities, made in one order) fire when."""
    rng = random.Random(seed)
    env = simpy.Environment()
    kernel, _ = make_kernel(env, kernel_name)
    fired: list[tuple[int, float]] = []
    last = None
    for k in range(40):
        delay, priority = rng.choice([0, 1, 2.5, 7]), rng.choice([URGENT, NORMAL, LATE])

        def note(_event: simpy.Event, k: int = k) -> None:
            fired.append((k, env.now))

        if use_due:
            last = Due(env, delay, priority, note)
        else:
            last = env.event()
            last.callbacks.append(note)
            succeed_at(env, last, delay, priority)
    stop = env.timeout(10)
    kernel.run(stop)
    assert last is not None and last.processed
    return fired


@pytest.mark.parametrize("kernel_name", ["fast", "reference"])
@pytest.mark.parametrize("seed", range(5))
def test_a_due_event_fires_where_an_event_given_succeed_at_fires(kernel_name: str, seed: int) -> None:
    assert _fired_order(kernel_name, seed, use_due=True) == _fired_order(kernel_name, seed, use_due=False)


def _fresh_buckets(pool: Pool) -> list[int]:
    buckets = [0] * len(pool.buckets)
    for position, node in enumerate(pool.nodes):
        if node.up:
            buckets[node.gpu_count - node.used] |= 1 << position
    return buckets


def _check_counts(vc: VirtualCluster) -> None:
    """Every pool's buckets and counts, and the VC's and the cluster's, as a fresh count of the nodes gives."""
    for pool in {id(p): p for p in (vc, *vc.pools.values())}.values():
        assert pool.buckets == _fresh_buckets(pool)
        assert pool.free_gpus == sum(n.gpu_count - n.used for n in pool.nodes if n.up)
    for node in vc.nodes:
        held = sorted(i for ids in node.jobs.values() for i in ids)
        assert node.free_ids == sorted(set(range(node.gpu_count)) - set(held))
        assert node.used == len(held)
        assert node.bucket == (node.gpu_count - node.used if node.up else None)
    assert vc.used_gpus == vc.totals.used == sum(n.used for n in vc.nodes)


def _job(index: int, gpus: int) -> Job:
    return Job(index=index, job_id=str(index), vc="v", gpu_num=gpus, submit_time=0, duration=10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), typed=st.booleans())
def test_allocations_and_releases_keep_every_bucket_and_count_as_a_fresh_count(seed: int, typed: bool) -> None:
    rng = random.Random(seed)
    groups = [("v100", 3, 4, 0.0), ("k80", 2, 4, 0.0)] if typed else None  # (several pools, or the VC its own)
    vc = VirtualCluster("v", nodes=5, gpus_per_node=4, groups=groups)
    changes = vc.watch_free()
    held: list[tuple[Job, Node]] = []
    for step in range(60):
        changes.clear()
        up_with_room = [n for n in vc.nodes if n.up and n.free_gpus]
        roll = rng.random()
        if held and roll < 0.4:
            job, node = held.pop(rng.randrange(len(held)))
            node.release(job)
            assert changes == [node.index] and vc.unplaceable == NO_LIMIT
        elif roll < 0.5:
            node = rng.choice(vc.nodes)
            if node.up and not node.jobs:
                node.set_up(False)
            elif not node.up:
                node.set_up(True)
        elif up_with_room:
            node = rng.choice(up_with_room)
            count = rng.choice([node.free_gpus, rng.randint(1, node.free_gpus)])  # whole or part of its idle GPUs
            vc.unplaceable = 3
            idle = list(node.free_ids)
            job = _job(step, count)
            taken = node.allocate(job, count)
            assert taken == idle[:count] and node.jobs[job] == taken
            assert changes == [node.index] and vc.unplaceable == 3  # (a take frees nothing)
            held.append((job, node))
        _check_counts(vc)


def test_a_whole_node_taken_hands_over_its_idle_list_and_gets_it_back() -> None:
    vc = VirtualCluster("v", nodes=2, gpus_per_node=4)
    node, job = vc.nodes[0], _job(0, 4)
    idle = node.free_ids
    assert node.allocate(job, 4) is idle and node.free_ids == []
    node.release(job)
    assert node.free_ids == [0, 1, 2, 3] and vc.free_gpus == 8 and vc.buckets[4] == 0b11


def _two_job_run(policy: str = "fifo") -> tuple[Simulation, list[Job]]:
    jobs = [Job(index=i, job_id=str(i), vc="a", gpu_num=g, submit_time=0, duration=100)
            for i, g in enumerate([1, 8, 16, 2])]
    sim = Simulation(jobs, resolve_run(config=SimConfig(policy=policy), cluster={"a": 4}))
    for job in jobs:
        sim._enqueue(job, sim.cluster.vcs["a"])
    return sim, jobs


def test_a_preemptions_cause_is_one_record_per_overhead_and_each_job_counts_its_own() -> None:
    sim, jobs = _two_job_run()
    vc = sim.cluster.vcs["a"]
    causes = []
    original = sim.interrupt
    sim.interrupt = lambda job, cause, vc=None: (causes.append(cause), original(job, cause, vc))  # type: ignore[method-assign]
    for _ in range(2):
        for job in jobs:
            assert sim.try_start_in(vc, job)
        for job in jobs:
            sim.preempt(job, vc)
        assert sim.try_start_in(vc, jobs[0])
        sim.preempt(jobs[0], vc, moving=True)
    small, large = sim.config.preemption_overhead(1), sim.config.preemption_overhead(16)
    by_job = dict(zip(jobs, causes[:4], strict=True))
    assert by_job[jobs[0]] is by_job[jobs[1]] is by_job[jobs[3]]  # 1, 8 and 2 GPUs: one overhead, one record
    assert by_job[jobs[0]].overhead == small and by_job[jobs[2]].overhead == large
    assert causes[4].moving and causes[4] is causes[9] and causes[4] is not by_job[jobs[0]]
    assert [j.preemptions for j in jobs] == [2, 2, 2, 2] and jobs[0].migrations == 2
    assert all(j.state is PENDING and not j.allocation for j in jobs) and vc.free_gpus == vc.total_gpus
    assert jobs[2].overhead_total == 2 * large and jobs[0].overhead_total == 4 * small  # (a move owes it too)


def test_a_started_job_is_timed_by_a_due_event_that_finishes_it() -> None:
    sim, jobs = _two_job_run()
    vc = sim.cluster.vcs["a"]
    assert sim.try_start_in(vc, jobs[0])
    run_end = jobs[0].run_end
    assert isinstance(run_end, Due) and run_end.triggered and len(run_end.callbacks) == 1
    run_end.callbacks[0](run_end)
    assert jobs[0].state is FINISHED and jobs[0].end_time == sim.clock() and vc.free_gpus == vc.total_gpus


@settings(max_examples=200, deadline=None)
@given(overhead=st.sampled_from([0.0, 5.0, 12.5, 30.0]), ran=st.sampled_from([0.0, 3.0, 5.0, 12.5, 40.0]),
       speed=st.sampled_from([1.0, 0.5, 0.3]), running=st.booleans())
def test_remaining_time_and_work_equal_the_formula_with_min(overhead: float, ran: float, speed: float,
                                                             running: bool) -> None:
    job = _job(0, 1)
    job.work_left, job.overhead_left, job.speed, job.run_started_at = 80.0, overhead, speed, 10.0
    job.state = JobState.RUNNING if running else JobState.PENDING
    now = 10.0 + ran
    paid = min(ran, overhead)
    expected_left = overhead + 80.0 - ((paid + (ran - paid) * speed) if running else 0.0)
    expected_work = 80.0 - (ran - paid) * speed if running else 80.0
    assert job.remaining_at(now) == expected_left
    assert job.work_left_at(now) == expected_work


def test_the_states_by_module_name_are_the_enums_members() -> None:
    assert (PENDING, RUNNING, FINISHED) == (JobState.PENDING, JobState.RUNNING, JobState.FINISHED)
    job = _job(0, 1)
    assert job.state is PENDING
    job.start(0.0)
    assert job.state is RUNNING
    job.finish(5.0)
    assert job.state is FINISHED
