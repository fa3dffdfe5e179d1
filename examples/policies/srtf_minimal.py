"""SRTF in plain public-API code: the built-in ``srtf``'s schedule, job for job.

    lucid-sim run --policy ./srtf_minimal.py --trace ../shared/data/venus_sept

Preemptive shortest remaining time first within each VC's GPU quota (the Helios and Lucid simulators'
semantics): every pass walks the VC's waiting and running jobs by remaining time, handing each its GPUs
while the quota lasts; a running job left outside is preempted, a waiting job inside is started.
"""

from simcluster.sdk import Policy


class SrtfMinimal(Policy):
    """Preemptive shortest remaining time first, within the VC's GPU quota (the built-in srtf, plainly)."""

    name = "srtf-minimal"
    preemptive = True

    def pending_key(self, job):
        return job.remaining_at(0.0)  # a waiting job's remaining time does not change

    def schedule(self, vc, ctx):
        if not vc.pending:
            return  # the running jobs fit the quota already: nothing would change
        now = ctx.now
        # remaining time; on ties a waiting job before a running one, then trace order
        walk = [(job.remaining_at(0.0), 0, job.index, job) for job in vc.pending]
        walk += [(job.remaining_at(now), 1, job.index, job) for job in vc.running]
        walk.sort(key=lambda entry: entry[:3])
        quota, to_start, to_preempt = vc.total_gpus, [], []
        for _, running, _, job in walk:
            if job.gpu_num <= quota:
                quota -= job.gpu_num
                if not running:
                    to_start.append(job)
            elif running:
                to_preempt.append(job)
        for job in to_preempt:
            ctx.preempt(job)
        for job in to_start:
            ctx.try_start(job)
        if to_preempt:
            ctx.wake_at(now)  # their remaining time grew by the restore overhead: look again at once
