"""Policies that each break one rule of the policy contract, on purpose: the conformance kit must name it."""

from __future__ import annotations

import random

from simcluster.sdk import Placement, Policy, start_in_order_until_blocked


class StartsTwice(Policy):
    """Starts the head of the queue, then starts it again."""

    def schedule(self, vc, ctx):
        job = vc.pending.first()
        if job is not None and ctx.try_start(job):
            ctx.try_start(job)


class TakesBusyGpus(Policy):
    """Puts each waiting job on the first node's GPUs whether or not they are free."""

    def schedule(self, vc, ctx):
        for job in vc.pending:
            if job.gpu_num <= vc.nodes[0].gpu_count:
                ctx.start_on(job, [(vc.nodes[0], list(range(job.gpu_num)))])


class PreemptsWaitingJobs(Policy):
    """FIFO that also 'preempts' the jobs still waiting."""

    def schedule(self, vc, ctx):
        start_in_order_until_blocked(vc, ctx)
        for job in vc.pending:
            ctx.preempt(job)


class StallsWaitingJobs(Policy):
    """FIFO that also charges the jobs still waiting a pause (only running jobs can be stalled)."""

    def schedule(self, vc, ctx):
        start_in_order_until_blocked(vc, ctx)
        for job in vc.pending:
            ctx.stall(job, 10.0)


class ShortensJobs(Policy):
    """Halves each waiting job's duration before starting it (changes a job itself)."""

    def schedule(self, vc, ctx):
        for job in vc.pending:
            job.duration = job.duration / 2
        start_in_order_until_blocked(vc, ctx)


class ShiftingOrder(Policy):
    """Orders the queue by a counter that moves on every call: a key that changes while jobs wait."""

    def __init__(self, config=None):
        super().__init__(config)
        self.calls = 0

    def pending_key(self, job):
        self.calls += 1
        return (self.calls % 3, job.index)

    schedule = staticmethod(start_in_order_until_blocked)


class NeverStarts(Policy):
    """Waits for a better moment that never comes: wakes every minute and starts nothing."""

    def schedule(self, vc, ctx):
        ctx.wake_at(ctx.now + 60)


class SpinsInPlace(Policy):
    """Asks to be run again at this very instant, for ever."""

    def schedule(self, vc, ctx):
        ctx.wake_at(ctx.now)


class UnseededShuffle(Policy):
    """Starts waiting jobs in an order drawn from an unseeded random generator."""

    def schedule(self, vc, ctx):
        jobs = list(vc.pending)
        random.Random().shuffle(jobs)
        for job in jobs:
            ctx.try_start(job)


class SmallJobsOnly(Policy):
    """FIFO for jobs of at most 4 GPUs; bigger ones are never started."""

    def schedule(self, vc, ctx):
        for job in vc.pending:
            if job.gpu_num <= 4:
                ctx.try_start(job)


class FailsOnBigJobs(Policy):
    """Raises when a job of more than 8 GPUs arrives."""

    def on_submit(self, job, now):
        if job.gpu_num > 8:
            raise ValueError(f"cannot handle {job.gpu_num} GPUs")

    schedule = staticmethod(start_in_order_until_blocked)


class WakesAtNaN(Policy):
    """FIFO that asks for a timer at a time that is not a number."""

    def schedule(self, vc, ctx):
        start_in_order_until_blocked(vc, ctx)
        if vc.pending:
            ctx.wake_at(float("nan"))
            ctx.wake_at(ctx.now + 30)


class FirstNodePlacement(Placement):
    """Always the first node's first GPUs, free or not."""

    def place(self, job, pool):
        node = pool.nodes[0]
        return [(node, list(range(min(job.gpu_num, node.gpu_count))))]


BROKEN = {  # class → the rule it breaks
    StartsTwice: "start-not-pending",
    TakesBusyGpus: "more-gpus-than-free",
    PreemptsWaitingJobs: "preempt-not-running",
    StallsWaitingJobs: "stall-not-running",
    ShortensJobs: "mutates-view",
    ShiftingOrder: "unstable-order",
    NeverStarts: "no-progress",
    SpinsInPlace: "no-progress",
    UnseededShuffle: "nondeterministic",
    SmallJobsOnly: "never-finishes",
    FailsOnBigJobs: "exception",
    WakesAtNaN: "bad-value",
}
