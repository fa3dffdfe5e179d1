"""The quota walk shared by preemptive policies (srtf, tiresias, ...).

Running and pending jobs are walked in the policy's order, each handed its
GPU count out of the VC's quota while it lasts; a job that does not fit is
skipped and the walk goes on (the Helios/Lucid semantics).  Running jobs
left outside the quota are preempted; pending jobs inside it start if
placement succeeds.

Pending jobs come as one ordered stream per GPU count: the quota only
shrinks, so a stream whose jobs no longer fit is dropped whole instead of
being stepped through.  Running jobs are few and sorted up front.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heapreplace
from typing import Any

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.policies.base import SchedulingContext
from simcluster.queue import SizedRun


def queue_streams(vc: VirtualCluster, max_gpus: float | None = None) -> dict[int, SizedRun]:
    """The VC's pending queue, one stream per GPU count (the key) up to ``max_gpus``, in queue order
    (:meth:`~simcluster.queue.JobQueue.runs_by_size`)."""
    return vc.pending.runs_by_size(vc.total_gpus if max_gpus is None else max_gpus)


def gpu_count(job: Job) -> float:
    return job.gpu_num


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


def walk_quota(vc: VirtualCluster, ctx: SchedulingContext, running: list[tuple[Any, Job]],
               pending: dict[int, SizedRun], pending_first_on_ties: bool = True, reserved: float = 0,
               quota_of: Callable[[Job], float] = gpu_count) -> int:
    """Preempt and start jobs of ``vc`` by the quota walk.

    ``running`` holds (key, job) for every running job; keys compare with the
    pending streams' keys; ``pending`` maps a GPU count to its stream.  On equal keys pending jobs go first unless
    ``pending_first_on_ties`` is False.  ``reserved`` GPUs of the quota are
    held by running jobs the caller already knows come first and fit.
    """
    pending_tag, running_tag = (0, 1) if pending_first_on_ties else (1, 0)
    quota = vc.total_gpus - reserved
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
    for job in to_preempt:
        ctx.preempt(job)
    for job in to_start:
        ctx.try_start(job)
    return len(to_preempt)
