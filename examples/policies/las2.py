"""Two-queue least attained service (LAS), discretized as Tiresias does it.

    lucid-sim run --policy ./las2.py --set threshold=7200 --trace ../shared/data/venus_sept

A job's attained service is GPUs × seconds it has run.  Jobs below ``threshold`` GPU-seconds are in the
first queue, the others in the second; the first queue always goes first and each queue is FIFO.  Every
``quantum`` seconds (and only then) the VC's GPUs are handed out along that order, preempting running
jobs that fall outside.  A running job that crosses the threshold changes the order with no event, so the
policy sets a timer for the first boundary after that moment.
"""

import math
from dataclasses import dataclass

from simcluster.sdk import JobState, Policy, setting


@dataclass(frozen=True)
class Las2Settings:
    threshold: float = setting(3600.0, "Attained service (GPU-seconds) that moves a job to the second queue.",
                               above=0)
    quantum: float = setting(60.0, "Seconds between decisions (on the absolute clock).", above=0)


class Las2(Policy):
    """Two-queue least attained service: jobs under --set threshold GPU-seconds first, FIFO within a queue."""

    name = "las2"
    preemptive = True
    Settings = Las2Settings

    def attained(self, job, now):
        running = now - job.run_started_at if job.state is JobState.RUNNING else 0.0
        return job.gpu_num * (job.busy_time + running)

    def key(self, job, now):
        return (self.attained(job, now) >= self.settings.threshold, job.submit_time, job.index)

    def pending_key(self, job):
        return self.key(job, 0.0)  # a waiting job's attained service does not change

    def schedule(self, vc, ctx):
        now, quantum = ctx.now, self.settings.quantum
        boundary = math.ceil(now / quantum) * quantum
        if boundary != now or not vc.pending:
            if vc.pending:
                ctx.wake_at(boundary)  # decide at the next boundary
            return
        # running jobs by key; the waiting ones come in key order from the queue; on ties a running job first
        running = sorted(vc.running, key=lambda job: self.key(job, now))
        quota, to_start, to_preempt, r = vc.total_gpus, [], [], 0
        for job in vc.pending:
            while r < len(running) and self.key(running[r], now) <= self.key(job, now):
                quota = self._keep(running[r], quota, to_preempt)
                r += 1
            if job.gpu_num <= quota:
                quota -= job.gpu_num
                to_start.append(job)
        for job in running[r:]:
            quota = self._keep(job, quota, to_preempt)
        for job in to_preempt:
            ctx.preempt(job)
        for job in to_start:
            ctx.try_start(job)
        for job in vc.running:  # wake at the boundary after a running job crosses the threshold
            left = self.settings.threshold - self.attained(job, now)
            if left > 0:
                ctx.wake_at((math.floor((now + left / job.gpu_num) / quantum) + 1) * quantum)

    @staticmethod
    def _keep(job, quota, to_preempt):
        if job.gpu_num <= quota:
            return quota - job.gpu_num
        to_preempt.append(job)
        return quota
