"""The waiting queue's inlined push and remove, and the kept-order walk's identity fast path (issue 55 item 2),
held to the plain rule: a queue is its jobs sorted by (key, trace index), per GPU count alike; a walk over a kept
order decides as the walk over (key, job) pairs."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from simcluster.job import Job
from simcluster.policies import quota
from simcluster.policies.running_order import RunningOrder
from simcluster.queue import JobQueue


def make_job(index: int, gpus: int, key: tuple[int, float]) -> Job:
    return Job(index=index, job_id=str(index), vc="v", gpu_num=gpus, submit_time=key[1], duration=100,
               priority=key[0])


def queue_key(job: Job) -> tuple[int, float]:
    """Tiresias' kind of key: (a level, the submit time), with ties."""
    return (job.priority, job.submit_time)


def check_plain(queue: JobQueue, waiting: dict[int, Job], sized: bool) -> None:
    """The queue against its plain model: every waiting job by (key, index); per GPU count the same order."""
    plain = sorted(waiting.values(), key=lambda j: (queue_key(j), j.index))
    assert list(queue) == plain and len(queue) == len(plain) and bool(queue) == bool(plain)
    assert queue.first() is (plain[0] if plain else None)
    if plain:
        assert queue.first_entry() == (queue_key(plain[0]), plain[0].index)
    assert all(job in queue for job in plain)
    if sized:
        runs = queue.runs_by_size(float("inf"))
        assert {size: jobs[first:] for size, (_, jobs, first) in runs.items()} == \
            {g: [j for j in plain if j.gpu_num == g] for g in {j.gpu_num for j in plain}}
        assert all(entries[first:] == [(queue_key(j), j.index) for j in jobs[first:]]
                   for entries, jobs, first in runs.values())
        for gpus in (0, 1, 3, 8):
            assert queue.none_fits(gpus) == (not any(j.gpu_num <= gpus for j in plain))


# an operation: push a new job (GPUs, queue, submit time), remove the head, or remove the n-th waiting job
ops = st.lists(st.one_of(
    st.tuples(st.just("push"), st.sampled_from([1, 2, 4, 8]), st.integers(0, 3), st.integers(0, 30)),
    st.tuples(st.just("head")),
    st.tuples(st.just("remove"), st.integers(0, 1000))), max_size=120)


@settings(max_examples=150, deadline=None)
@given(ops=ops, sized_from=st.integers(0, 60))
def test_queue_push_and_remove_keep_the_plain_order(ops, sized_from):
    """Pushes in and out of order (a requeued job goes in the middle), removals of the head and of others, the
    per-GPU-count index asked for part-way: after each step the queue is its jobs sorted by (key, index)."""
    queue, waiting, sized = JobQueue(key=queue_key), {}, False
    for step, op in enumerate(ops):
        if step == sized_from:
            sized = True
        if op[0] == "push":
            job = make_job(step, op[1], (op[2], float(op[3])))
            queue.push(job)
            waiting[job.index] = job
        elif waiting:
            job = queue.first() if op[0] == "head" else sorted(waiting.values(), key=lambda j: j.index)[
                op[1] % len(waiting)]
            queue.remove(job)
            del waiting[job.index]
        check_plain(queue, waiting, sized)


def test_a_long_fifo_drains_past_the_compaction_in_order():
    """Thousands of head removals cross the point where the removed heads are dropped (1,024 of them): the queue
    keeps its order and its per-GPU-count index through it, with pushes in the middle meanwhile."""
    queue, waiting = JobQueue(key=queue_key), {}
    for i in range(3000):
        job = make_job(i, 1 + i % 3, (0, float(i)))
        queue.push(job)
        waiting[i] = job
    queue.runs_by_size(8)  # (builds the index)
    for n in range(2500):
        job = queue.first()
        queue.remove(job)
        del waiting[job.index]
        if n % 500 == 0:
            late = make_job(10_000 + n, 2, (0, float(2600 + n % 7)))  # (ahead of later jobs: an insertion)
            queue.push(late)
            waiting[late.index] = late
            check_plain(queue, waiting, sized=True)
    check_plain(queue, waiting, sized=True)


walk_job = st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 2), st.integers(0, 15))
jobs_in_walk = st.lists(walk_job, max_size=60)
# running jobs: a few (the kept walk steps through them as pairs) or more than quota.SMALL_ORDER (it jumps)
running_in_walk = st.one_of(jobs_in_walk, st.lists(walk_job, min_size=quota.SMALL_ORDER + 1, max_size=200))


@settings(max_examples=200, deadline=None)
@given(running=running_in_walk, waiting=jobs_in_walk, quota_gpus=st.integers(0, 600), pending_first=st.booleans())
def test_the_kept_walk_decides_as_the_pairs_walk_with_or_without_the_identity_map(running, waiting, quota_gpus,
                                                                                  pending_first):
    """The kept-order walk with the order's own identity (its searches skip the key map), with an identity it does
    not know (each search maps every key) and the walk over sorted (key, job) pairs: the same starts, the same
    preemptions, over orders small (walked as pairs) and big (walked by jumps)."""
    order, queue = RunningOrder(), JobQueue(key=queue_key)
    for i, (gpus, level, submit) in enumerate(running):
        job = make_job(i, gpus, (level, float(submit)))
        order.add(queue_key(job), job)
    for i, (gpus, level, submit) in enumerate(waiting, start=len(running)):
        queue.push(make_job(i, gpus, (level, float(submit))))
    vc = SimpleNamespace(pending=queue)
    kept = quota._walk_kept(vc, order, quota.same_key, pending_first, quota_gpus)  # type: ignore[arg-type]
    mapped = quota._walk_kept(vc, order, lambda key: key, pending_first, quota_gpus)  # type: ignore[arg-type]
    pairs = quota._walk_pairs(list(order.items()), queue.runs_by_size(quota_gpus), pending_first, quota_gpus,
                              quota.gpu_count) if queue else ([], [])
    assert [j.index for j in kept[1]] == [j.index for j in mapped[1]] == [j.index for j in pairs[1]]
    assert sorted(j.index for j in kept[0]) == sorted(j.index for j in mapped[0]) == \
        sorted(j.index for j in pairs[0])
