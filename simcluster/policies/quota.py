"""The quota walk shared by preemptive policies (srtf, tiresias, ...).

Running and pending jobs are walked in the policy's order, each handed its
GPU count out of the VC's quota while it lasts; a job that does not fit is
skipped and the walk goes on (the Helios/Lucid semantics).  Running jobs
left outside the quota are preempted; pending jobs inside it start if
placement succeeds.

Pending jobs come as one ordered stream per GPU count: the quota only
shrinks, so a stream whose jobs no longer fit is dropped whole instead of
being stepped through.  Running jobs come either as a :class:`RunningOrder` that the policy's run hooks keep
in order — then the walk jumps from one change to the next (a start, a preemption) and a pass that changes
nothing costs a few searches per GPU count — or as a list of (key, job) pairs, sorted at every call.  A policy
whose keys move as jobs run ranks its running jobs itself, as arrays, and walks them with :func:`walk_ranked`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from heapq import heapify, heappop, heapreplace
from operator import attrgetter
from typing import Any

import numpy as np

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.policies.base import SchedulingContext
from simcluster.policies.running_order import KeyMap, Position, RunningOrder, gpu_count, same_key
from simcluster.queue import SizedRun

_BY_INDEX = attrgetter("index")
# (the walks' default key map is the order's own identity, same_key: with it the order's searches skip the map)


def queue_streams(vc: VirtualCluster, max_gpus: float | None = None) -> dict[int, SizedRun]:
    """The VC's pending queue, one stream per GPU count (the key) up to ``max_gpus``, in queue order
    (:meth:`~simcluster.queue.JobQueue.runs_by_size`)."""
    return vc.pending.runs_by_size(vc.total_gpus if max_gpus is None else max_gpus)


def queue_is_tiered(vc: VirtualCluster) -> bool:
    """Whether the VC's waiting jobs are keyed by tier first (``(tier, the policy's key)``: the engine does so for a
    policy with ``priority_first`` where the trace gives tiers, :mod:`simcluster.features.tiers`), so that the
    walk's running keys must be too.  Asked of a VC with a waiting job; a policy's own keys are never a pair whose
    first part is a tuple.

    >>> from simcluster.cluster import VirtualCluster
    >>> from simcluster.job import Job
    >>> from simcluster.queue import JobQueue
    >>> vc = VirtualCluster("v")
    >>> vc.pending = JobQueue(key=lambda job: ((-job.priority, job.preemptible), job.duration))
    >>> vc.pending.push(Job(index=0, job_id="0", vc="v", gpu_num=1, submit_time=0, duration=5, priority=2))
    >>> queue_is_tiered(vc)
    True
    """
    key = vc.pending.first_entry()[0]
    return type(key) is tuple and len(key) == 2 and type(key[0]) is tuple


def gpu_share(job: Job) -> float:
    """The quota a running job uses when GPUs may be shared: each GPU split among its jobs."""
    if not job.sharing:
        return job.gpu_num
    share: float = 0  # (summed left to right, as sum() did: the same float)
    for node, ids in job.allocation:
        gpus = node.gpus
        for i in ids:
            share += 1.0 / len(gpus[i])
    return share


def walk_changes_nothing(vc: VirtualCluster, reserved: float, rest: float = 0) -> bool:
    """Whether :func:`walk_quota` over running jobs using ``rest`` of the quota and the queue, with ``reserved``
    GPUs held first, would start and preempt no job: no waiting job fits what ``reserved`` leaves (the quota
    only shrinks, so none would start), and the walked running jobs fit beside it (they hold their GPUs now,
    so none would be preempted).  The callers know ``rest`` already, or sum it as they list those jobs."""
    total = vc.total_gpus
    return reserved + rest <= total and vc.pending.none_fits(total - reserved)


SMALL_ORDER = 64  # a RunningOrder of at most this many jobs is walked as pairs


def walk_quota(vc: VirtualCluster, ctx: SchedulingContext, running: RunningOrder | list[tuple[Any, Job]],
               pending: dict[int, SizedRun] | None = None, pending_first_on_ties: bool = True, reserved: float = 0,
               quota_of: Callable[[Job], float] = gpu_count, key: KeyMap = same_key) -> int:
    """Preempt and start jobs of ``vc`` by the quota walk; returns how many it preempted.

    ``running``: the running jobs the walk hands quota to, as a :class:`RunningOrder` (``key`` maps each stored
    key to one that compares with the waiting jobs' keys, e.g. srtf's end time to the remaining time ``end -
    now``; it must keep the order) or as (key, job) pairs.  Waiting jobs are the VC's queue, in its order.  On
    equal keys waiting jobs go first unless ``pending_first_on_ties`` is False, then trace order.
    ``reserved`` GPUs of the quota are held by running jobs the caller already knows come first and fit and
    left out of ``running``; ``quota_of`` is what a job in a pairs list uses of the quota (a RunningOrder
    weighs its jobs itself).  ``pending``: the queue's streams by GPU count (:func:`queue_streams`), for callers
    that already have them.
    """
    quota = vc.total_gpus - reserved
    if isinstance(running, RunningOrder):
        to_preempt, to_start = _walk_kept(vc, running, key, pending_first_on_ties, quota)
    else:
        streams = pending if pending is not None else queue_streams(vc, quota)
        to_preempt, to_start = _walk_pairs(running, streams, pending_first_on_ties, quota, quota_of)
    return _carry_out(ctx, to_preempt, to_start)


def _carry_out(ctx: SchedulingContext, to_preempt: list[Job], to_start: list[Job]) -> int:
    """What a walk decided: its preemptions first (they free the GPUs the starts may need); how many."""
    for job in to_preempt:
        ctx.preempt(job)
    for job in to_start:
        ctx.try_start(job)
    return len(to_preempt)


def _walk_kept(vc: VirtualCluster, order: RunningOrder, key: KeyMap, pending_first: bool,
               quota: float) -> tuple[list[Job], list[Job]]:
    """The walk over a kept order: the running jobs before the queue's head come first and fit (when all of them
    fit the quota), so they are handed their GPUs up front; the rest are walked by jumps, or as pairs when few."""
    pending = vc.pending
    if not pending:
        return [], []
    if len(order) <= SMALL_ORDER:  # a few: their keys at once, the rest stepped through (cheaper than jumping)
        keys, jobs, weights = order.listed(key)
        first = 0
        if order.gpus <= quota:
            first = (bisect_left if pending_first else bisect_right)(keys, pending.first_entry()[0])
            quota -= sum(weights[:first])
            if pending.none_fits(quota):
                return [], []  # the rest fit too, and no waiting job fits what they leave
        rest = list(zip(keys[first:], jobs[first:]))
        return _walk_pairs(rest, queue_streams(vc, quota), pending_first, quota, order.weight_of)
    cursor = order.start
    if order.gpus <= quota:
        cursor = order.locate(pending.first_entry()[0], key, after_ties=not pending_first)
        quota -= order.gpus_before(cursor)
        if pending.none_fits(quota):
            return [], []
    return _walk_order(vc, order, key, pending_first, quota, cursor)


def _walk_order(vc: VirtualCluster, order: RunningOrder, key: KeyMap, pending_first: bool, quota: float,
                cursor: Position) -> tuple[list[Job], list[Job]]:
    """The walk over a kept order from ``cursor``, from one change to the next.

    At each step the next change is either the first waiting job (in walk order) that fits what the running jobs
    before it leave, or the first running job that no longer fits; the running jobs before either are handed
    their GPUs in one sum.  Only each GPU count's first waiting job is looked at, in walk order (the quota only
    shrinks, so when one does not fit at its turn no later one of its count does), and whether it fits is one
    search: a job of g GPUs fits at its turn if it comes before the first running job that passes ``quota -
    g``.  A running job that does not fit is walked with the jobs of its key, in trace order, as the pairs walk
    sorts them.
    """
    tag = 0 if pending_first else 1  # a waiting job's place among running ones of its key
    # each GPU count's first waiting job, in walk order: (key, tag, trace index, GPUs, [entries, jobs, position])
    heads = sorted((entries[first][0], tag, entries[first][1], size, [entries, jobs, first])
                   for size, (entries, jobs, first) in vc.pending.runs_by_size(quota).items() if first < len(entries))
    to_preempt: list[Job] = []
    to_start: list[Job] = []
    first_over = order.first_over
    # the walk's key at a position: the stored one where the map is the identity (one call, not two)
    key_at = order.key_at if key is same_key else lambda at: key(order.key_at(at))
    while quota > 0:
        over, _ = first_over(cursor, quota)
        over_key = key_at(over) if over is not None else None
        chosen = -1  # the head that starts next, if one fits before the overflow
        for n, (first_key, _, _, size, _) in enumerate(heads):
            if over_key is not None and not (first_key <= over_key if pending_first else first_key < over_key):
                break  # this one and those after it come after the running job that does not fit
            if size <= quota:
                limit, _ = first_over(cursor, quota - size)
                if limit is None or (first_key <= key_at(limit) if pending_first else first_key < key_at(limit)):
                    chosen = n
                    break
            # (else: it does not fit at its turn, nor will any later job of its GPU count)
        else:
            n = len(heads)
        if chosen < 0:
            del heads[:n]  # every head before the overflow is dead
            if over is None:
                return to_preempt, to_start  # every running job left fits, and no waiting job does
            group = order.locate(over_key, key)  # the first running job of its key
            quota -= order.gpus_between(cursor, group)
            cursor = order.locate(over_key, key, after_ties=True)
            tied = sorted(order.jobs_between(group, cursor), key=_BY_INDEX) if order.following(group) != cursor \
                else [order.job_at(group)]
            for m, job in enumerate(tied):
                if quota <= 0:
                    to_preempt += tied[m:]
                    break
                need = order.weight_of(job)
                if need <= quota:
                    quota -= need
                else:
                    to_preempt.append(job)
            continue
        first_key, _, _, size, stream = heads[chosen]
        del heads[:chosen + 1]  # those before it are dead
        place = order.locate(first_key, key, after_ties=not pending_first)
        quota -= order.gpus_between(cursor, place) + size
        cursor = place
        entries, jobs, at = stream
        to_start.append(jobs[at])  # type: ignore[arg-type]
        at += 1
        if at < len(entries):
            stream[2] = at
            insort(heads, (entries[at][0], tag, entries[at][1], size, stream))
    to_preempt += order.jobs_between(cursor)  # the quota ran out
    return to_preempt, to_start


def walk_ranked(vc: VirtualCluster, ctx: SchedulingContext, jobs: list[Job], gpus: np.ndarray,
                place: Callable[[Any], int], start: int = 0) -> int:
    """:func:`walk_quota` over running ``jobs`` ranked by the caller, in walk order (ties in trace order), holding
    ``gpus`` (an integer array, each at least 1), from position ``start`` on: the jobs before it come first and
    fit, and hold their GPUs.  ``place(key)``: how many of ``jobs`` the walk takes before a waiting job with that
    key (where ties go decides it).  Returns how many it preempted.

    The same walk as the pairs walk, with the running jobs between two waiting ones handed their GPUs by one
    search of the GPUs' running sums: only a job that does not fit is a step of its own."""
    ends = np.cumsum(gpus).tolist()  # ends[i]: GPUs of jobs[:i + 1]
    quota = vc.total_gpus - (ends[start - 1] if start else 0)
    return _carry_out(ctx, *_walk_ranked(jobs, ends, place, start, queue_streams(vc, quota), quota))


StreamHead = tuple[Any, int, int, list, list]  # (key, trace index, position, entries, jobs) of a GPU count's next job


def stream_heads(pending: dict[int, SizedRun], quota: float) -> list[StreamHead]:
    """A heap of each GPU count's next waiting job, for the counts up to ``quota``, in queue order."""
    heap = []
    for size, (entries, queued, first) in pending.items():
        if size <= quota and first < len(entries):
            key, index = entries[first]
            heap.append((key, index, first, entries, queued))
    heapify(heap)
    return heap


def next_of_stream(heap: list[StreamHead]) -> None:
    """The heap's first job is taken: the next job of its GPU count takes its place (or the count leaves)."""
    _, _, at, entries, queued = heap[0]
    at += 1
    if at == len(entries):
        heappop(heap)
    else:
        key, index = entries[at]
        heapreplace(heap, (key, index, at, entries, queued))


def _walk_ranked(jobs: list[Job], ends: list[int], place: Callable[[Any], int], walked: int,
                 pending: dict[int, SizedRun], quota: float) -> tuple[list[Job], list[Job]]:
    heap = stream_heads(pending, quota)
    to_preempt: list[Job] = []
    to_start: list[Job] = []
    n = len(jobs)
    before = place(heap[0][0]) if heap else n  # running jobs the walk takes before the next waiting one
    while quota > 0 and (heap or walked < n):
        if walked < before:
            # the running jobs up to the next waiting one: all that fit at once, then the first that does not
            base = ends[walked - 1] if walked else 0
            over = bisect_right(ends, base + quota, walked, before)  # the first whose running sum passes the quota
            if over > walked:
                quota -= ends[over - 1] - base
            walked = over
            if over < before:
                to_preempt.append(jobs[over])
                walked += 1
            continue
        _, _, at, _, queued = heap[0]
        job = queued[at]
        if job.gpu_num > quota:
            heappop(heap)  # this GPU count no longer fits, and the quota only shrinks
        else:
            quota -= job.gpu_num
            to_start.append(job)
            next_of_stream(heap)
        before = place(heap[0][0]) if heap else n
    if walked < n:
        to_preempt.extend(jobs[walked:])  # not reached: the quota ran out first
    return to_preempt, to_start


def _walk_pairs(running: list[tuple[Any, Job]], pending: dict[int, SizedRun], pending_first_on_ties: bool,
                quota: float, quota_of: Callable[[Job], float]) -> tuple[list[Job], list[Job]]:
    """The walk over (key, job) pairs, sorted here, merged with the waiting jobs' streams."""
    pending_tag, running_tag = (0, 1) if pending_first_on_ties else (1, 0)
    ordered = [(key, running_tag, job.index, job) for key, job in running]
    ordered.sort()
    heap = []  # per GPU count, its next job: (key, tag, trace index, position, entries, jobs)
    for size, (entries, jobs, first) in pending.items():
        if size <= quota and first < len(entries):  # (a bigger count can never fit in this walk)
            key, index = entries[first]
            heap.append((key, pending_tag, index, first, entries, jobs))
    heapify(heap)

    to_preempt: list[Job] = []
    to_start: list[Job] = []
    walked, n = 0, len(ordered)  # running jobs walked so far, of n
    by_count = quota_of is gpu_count  # (the common quota, inlined below)
    while quota > 0 and (heap or walked < n):
        if walked < n and (not heap or ordered[walked] < heap[0]):
            # every running job before the next pending one, in one go (the heap does not change meanwhile)
            head = heap[0] if heap else None
            while True:
                job = ordered[walked][3]
                walked += 1
                need = job.gpu_num if by_count else quota_of(job)
                if need <= quota:
                    quota -= need
                else:
                    to_preempt.append(job)
                if quota <= 0 or walked == n or (head is not None and not ordered[walked] < head):
                    break
            continue
        _, _, _, at, entries, jobs = heap[0]
        # (from a run's first position on, its jobs are all there: None marks only the removed ones before it)
        job = jobs[at]  # type: ignore[assignment]
        if job.gpu_num > quota:
            heappop(heap)  # this GPU count no longer fits, and the quota only shrinks
            continue
        quota -= job.gpu_num
        to_start.append(job)
        at += 1
        if at == len(entries):
            heappop(heap)
        else:
            key, index = entries[at]
            heapreplace(heap, (key, pending_tag, index, at, entries, jobs))
    if walked < n:
        to_preempt.extend(r[3] for r in ordered[walked:])  # not reached: the quota ran out first
    return to_preempt, to_start
