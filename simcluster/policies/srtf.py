from __future__ import annotations

from heapq import heapify, heappop, heapreplace

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext


@POLICIES.register("srtf")
class ShortestRemainingTimeFirst(Policy):
    """Preemptive shortest remaining time first, within the VC's GPU quota.

    At every scheduling event, running and pending jobs are ordered by
    remaining time (ties: pending before running, then trace order) and
    walked while handing each job its GPU count out of the VC's quota; a job
    that does not fit is skipped and the walk goes on.  Running jobs left
    outside the quota are preempted (their remaining time grows by the
    checkpoint overhead); pending jobs inside it start if placement succeeds.
    These are the Helios/Lucid simulators' semantics.

    The walk merges the running jobs with one stream per GPU count of
    pending jobs; since the quota only shrinks, a pending stream whose jobs
    no longer fit is dropped whole instead of being stepped through.
    """

    preemptive = True

    def pending_key(self, job: Job) -> float:
        return job.remaining_at(0.0)  # constant while pending

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        pending = vc.pending
        if not pending:
            return  # running jobs fit the quota by construction: nothing can change
        now = ctx.now
        quota = vc.total_gpus
        # (remaining, 0 = pending / 1 = running, trace index, job): the walk's order
        running = [(j.run_started_at + j.overhead_left + j.work_left - now, 1, j.index, j) for j in vc.running]
        heap: list = []  # the next job of each pending stream: (remaining, 0, index, job, stream)
        if running and self.pending_key(pending.first()) > max(running)[0]:  # type: ignore[arg-type]
            # every running job comes first in the order and fits: only what is left is handed out
            quota -= sum(j.gpu_num for j in vc.running)
            running = []
        running.sort()
        for size in pending.sizes():
            stream = pending.entries_of_size(size)
            (rem, index), job = next(stream)
            heap.append((rem, 0, index, job, stream))
        heapify(heap)

        to_preempt: list[Job] = []
        to_start: list[Job] = []
        walked = 0  # running jobs walked so far (they are already in order: no heap needed)
        while quota > 0 and (heap or walked < len(running)):
            if walked < len(running) and (not heap or running[walked] < heap[0]):
                job = running[walked][3]
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
                heapreplace(heap, (item[0][0], 0, item[0][1], item[1], stream))
        to_preempt.extend(r[3] for r in running[walked:])  # not reached: the quota ran out first
        for job in to_preempt:
            ctx.preempt(job)
        for job in to_start:
            ctx.try_start(job)
