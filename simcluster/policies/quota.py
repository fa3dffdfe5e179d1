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

from collections.abc import Iterable, Iterator
from heapq import heapify, heappop, heapreplace
from typing import Any

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.policies.base import SchedulingContext

Stream = Iterator[tuple[Any, int, Job]]  # (order key, trace index, job), in order


def queue_streams(vc: VirtualCluster) -> list[Stream]:
    """The VC's pending queue, one stream per GPU count, in queue order."""
    pending = vc.pending
    return [((key, index, job) for (key, index), job in pending.entries_of_size(size)) for size in pending.sizes()]


def list_streams(jobs_in_order: Iterable[tuple[Any, Job]]) -> list[Stream]:
    """Streams per GPU count from (key, job) pairs already in order."""
    by_size: dict[int, list[tuple[Any, int, Job]]] = {}
    for key, job in jobs_in_order:
        by_size.setdefault(job.gpu_num, []).append((key, job.index, job))
    return [iter(items) for items in by_size.values()]


def walk_quota(vc: VirtualCluster, ctx: SchedulingContext, running: list[tuple[Any, Job]],
               pending: list[Stream], pending_first_on_ties: bool = True, reserved: int = 0) -> None:
    """Preempt and start jobs of ``vc`` by the quota walk.

    ``running`` holds (key, job) for every running job; keys compare with the
    pending streams' keys.  On equal keys pending jobs go first unless
    ``pending_first_on_ties`` is False.  ``reserved`` GPUs of the quota are
    held by running jobs the caller already knows come first and fit.
    """
    pending_tag, running_tag = (0, 1) if pending_first_on_ties else (1, 0)
    quota = vc.total_gpus - reserved
    ordered = sorted((key, running_tag, job.index, job) for key, job in running)
    heap = []
    for stream in pending:
        first = next(stream, None)
        if first is not None:
            heap.append((first[0], pending_tag, first[1], first[2], stream))
    heapify(heap)

    to_preempt: list[Job] = []
    to_start: list[Job] = []
    walked = 0  # running jobs walked so far
    while quota > 0 and (heap or walked < len(ordered)):
        if walked < len(ordered) and (not heap or ordered[walked] < heap[0]):
            job = ordered[walked][3]
            walked += 1
            if job.gpu_num <= quota:
                quota -= job.gpu_num
            else:
                to_preempt.append(job)
            continue
        job, stream = heap[0][3], heap[0][4]
        if job.gpu_num > quota:
            heappop(heap)  # this GPU count no longer fits, and the quota only shrinks
            continue
        quota -= job.gpu_num
        to_start.append(job)
        item = next(stream, None)
        if item is None:
            heappop(heap)
        else:
            heapreplace(heap, (item[0], pending_tag, item[1], item[2], stream))
    to_preempt.extend(r[3] for r in ordered[walked:])  # not reached: the quota ran out first
    for job in to_preempt:
        ctx.preempt(job)
    for job in to_start:
        ctx.try_start(job)
