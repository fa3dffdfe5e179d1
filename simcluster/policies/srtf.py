from __future__ import annotations

from heapq import heapify, heappop, heappush

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
        heap: list = []
        if running and self.pending_key(pending.first()) > max(running)[0]:  # type: ignore[arg-type]
            # every running job comes first in the order and fits: only what is left is handed out
            quota -= sum(j.gpu_num for j in vc.running)
            running = []
        elif running:
            running.sort()
            heap.append((*running[0], None))  # running jobs enter the heap one at a time, in order
        for size in pending.sizes():
            stream = pending.entries_of_size(size)
            (rem, index), job = next(stream)
            heap.append((rem, 0, index, job, stream))
        heapify(heap)

        to_preempt: list[Job] = []
        to_start: list[Job] = []
        visited = 0  # running jobs walked so far
        while heap and quota > 0:
            rem, is_running, index, job, stream = heappop(heap)
            if is_running:
                visited += 1
                if job.gpu_num <= quota:
                    quota -= job.gpu_num
                else:
                    to_preempt.append(job)
                if visited < len(running):
                    heappush(heap, (*running[visited], None))
            elif job.gpu_num <= quota:
                quota -= job.gpu_num
                to_start.append(job)
                item = next(stream, None)
                if item is not None:
                    heappush(heap, (item[0][0], 0, item[0][1], item[1], stream))
            # else: a pending stream that no longer fits is dropped, since the quota only shrinks
        to_preempt.extend(r[3] for r in running[visited:])  # not reached: the quota ran out first
        for job in to_preempt:
            ctx.preempt(job)
        for job in to_start:
            ctx.try_start(job)
