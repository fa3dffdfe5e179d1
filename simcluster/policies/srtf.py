from __future__ import annotations

from operator import itemgetter

from simcluster.cluster import VirtualCluster
from simcluster.job import Job
from simcluster.policies.base import POLICIES, Policy, SchedulingContext
from simcluster.policies.quota import gpu_count, queue_streams, walk_quota


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
    """

    preemptive = True
    quota_of = staticmethod(gpu_count)

    def pending_key(self, job: Job) -> float:
        return job.remaining_at(0.0)  # constant while pending

    def schedule(self, vc: VirtualCluster, ctx: SchedulingContext) -> None:
        if not vc.pending:
            return  # running jobs fit the quota by construction: nothing can change
        now = ctx.now
        if self.shares_gpus:  # remaining_at, inlined (the job's speed varies with its partners)
            running = []
            for j in vc.running:
                ran = now - j.run_started_at
                paid = min(ran, j.overhead_left)
                running.append((j.overhead_left + j.work_left - (paid + (ran - paid) * j.speed), j))
        else:  # at full speed: remaining_at, inlined (this line runs for every running job at every event)
            running = [(j.run_started_at + j.overhead_left + j.work_left - now, j) for j in vc.running]
        head = self.pending_key(vc.pending.first())  # type: ignore[arg-type]
        if running and head > max(map(itemgetter(0), running)):
            running = []  # every running job comes first and fits: only what is left is handed out
            quota_used = sum(self.quota_of(j) for j in vc.running)
            if all(size > vc.total_gpus - quota_used for size in vc.pending.sizes()):
                return  # and no waiting job fits what is left (none at all when nothing is)
        elif running and self.quota_of is gpu_count:
            # the running jobs shorter than every waiting one come first and fit (they hold the VC's GPUs, which
            # its quota counts): hand them their GPUs up front, walk only the rest.  Whole GPU counts, so the
            # sum is exact in any order (a sharing variant's fractions would not be: it walks them all)
            quota_used, rest = 0, []
            for entry in running:
                if entry[0] < head:
                    quota_used += entry[1].gpu_num
                else:
                    rest.append(entry)
            running = rest
        else:
            quota_used = 0
        streams = queue_streams(vc, vc.total_gpus - quota_used)
        preempted = walk_quota(vc, ctx, running, streams, reserved=quota_used, quota_of=self.quota_of)
        if preempted and not self.shares_gpus:
            # the preempted jobs' remaining time grew by the overhead, which may let others in: look again
            # at once, as the artifacts' per-second loop does (sharing variants would chase their own tail)
            ctx.wake_at(ctx.now)
