"""``easy-backfill``: EASY backfilling (Lifka 1995; the shape of Slurm's and most batch schedulers' backfill).

The queue is walked in order.  Jobs start while they can; the first that cannot (the *head*) gets a
reservation: the earliest instant at which, by the running jobs' expected ends, enough of the VC's GPUs
are free for it (the *shadow time*), and the GPUs that will be left over then (the *spare* GPUs).  A later
job may start now only if it does not delay that reservation: it is expected to end by the shadow time,
or it fits in the spare GPUs (which it then uses up).  Expected ends come from a duration estimator
(``--estimator``: oracle by default; history, file, ebm), each job estimated once, at its submission.

The reservation counts GPUs, not nodes, as EASY does: with a node-aware placement the head may still
find its GPUs scattered over nodes at the shadow time, and then waits for the next reservation.  A
running job that outlived its estimate is expected to end now.  The running jobs are kept in the order of
their expected ends as they start and stop (:class:`~simcluster.sdk.RunningOrder`), so a reservation costs a
search, not a sort of every running job.

>>> from simcluster.sdk import Policy
>>> issubclass(EasyBackfill, Policy)
True
"""

from __future__ import annotations

from typing import Any

from simcluster.estimators import EstimateQuality, make_estimator
from simcluster.policies.fifo_backfill import FifoBackfill
from simcluster.sdk import JobView, RunningOrder, SchedulingContext, VCView, register_policy


def reservation(need: int, free: int, ends: list[tuple[float, int]]) -> tuple[float, int]:
    """(shadow time, spare GPUs) of a job asking for ``need`` GPUs when ``free`` are idle now and running jobs
    release theirs at ``ends`` ((expected end, GPUs), in any order).  Never enough: (inf, 0).

    >>> reservation(8, 2, [(500.0, 4), (100.0, 4), (300.0, 2)])  # 2 + 4 at 100, + 2 at 300
    (300.0, 0)
    >>> reservation(4, 2, [(100.0, 8)])
    (100.0, 6)
    """
    for end, gpus in sorted(ends):
        free += gpus
        if free >= need:
            return end, free - need
    return float("inf"), 0


def reservation_in(order: RunningOrder, need: int, free: int, now: float) -> tuple[float, int]:
    """:func:`reservation` over running jobs kept by (expected end, GPUs), each expected to end at ``now`` at the
    earliest: the jobs overdue at ``now`` end first, smallest first (the ties of ``reservation``'s sort), then
    the first job whose end frees enough is found by its running sum.

    >>> from simcluster.job import Job
    >>> order = RunningOrder()
    >>> for i, (end, gpus) in enumerate([(500.0, 4), (100.0, 4), (300.0, 2)]):
    ...     order.add((end, gpus), Job(index=i, job_id=str(i), vc="v", gpu_num=gpus, submit_time=0, duration=1))
    >>> reservation_in(order, 8, 2, 0.0), reservation_in(order, 7, 2, 400.0), reservation_in(order, 99, 2, 0.0)
    ((300.0, 0), (400.0, 1), (inf, 0))
    >>> reservation(7, 2, [(400.0, 4), (400.0, 2), (500.0, 4)])  # what the jobs overdue at 400 mean
    (400.0, 1)
    """
    due = order.locate((now, float("inf")))  # the jobs that should have ended by now
    overdue = order.gpus_before(due)
    if free + overdue >= need and overdue:
        for gpus in sorted(job.gpu_num for job in order.jobs_between(order.start, due)):
            free += gpus
            if free >= need:
                return now, free - need
    over, held = order.first_over(due, need - free - overdue - 1)  # the first whose running sum reaches need
    if over is None:
        return float("inf"), 0
    end, gpus = order.key_at(over)
    return end, free + overdue + held + gpus - need


@register_policy("easy-backfill")
class EasyBackfill(FifoBackfill):
    """EASY backfilling: the first job that cannot start gets a reservation that later jobs may not delay.

    The reservation is the earliest time enough GPUs free up by the running jobs' expected ends; a later
    job starts now if it is expected to end by then or fits in the GPUs the head leaves over.  Expected
    durations from ``--estimator`` (oracle by default; history, file, ebm), estimated at submission.
    """

    default_estimator = "oracle"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.estimator = make_estimator(self.config, self.default_estimator)
        self.quality = EstimateQuality()
        self.expected: dict[JobView, float] = {}  # job → its estimated duration
        self._ends: dict[str, RunningOrder] = {}  # per VC, its running jobs by (expected end, GPUs)

    def on_submit(self, job: JobView, now: float) -> None:
        estimate = self.estimator.estimate(job, now)
        self.quality.record(estimate, job)
        self.expected[job] = estimate

    def on_run_start(self, job: JobView, vc: VCView) -> None:
        ends = self._ends.get(vc.name)
        if ends is None:
            ends = self._ends[vc.name] = RunningOrder()
        ends.add((job.start_time + self.expected[job], job.gpu_num), job)  # type: ignore[operator]

    def on_run_stop(self, job: JobView, vc: VCView) -> None:
        self._ends[vc.name].remove(job)

    def on_finish(self, job: JobView, now: float) -> None:
        super().on_finish(job, now)
        self.estimator.observe(job, now)
        del self.expected[job]

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        now, expected = ctx.now, self.expected
        reserved, shadow, spare = False, 0.0, 0  # the head's reservation, once a job could not start
        for job in list(vc.pending):  # (a copy: a start removes the job from the live queue)
            free = vc.free_gpus
            if not free:
                break
            if job.gpu_num > free:
                started = False
            elif not reserved or now + expected[job] <= shadow:  # (ending by the shadow time delays no one)
                started = ctx.try_start(job)
            elif job.gpu_num <= spare:
                started = ctx.try_start(job)
                spare -= job.gpu_num if started else 0
            else:
                started = False
            if not started and not reserved and job.vc == vc.name:  # the head (a borrower reserves nothing here)
                reserved, (shadow, spare) = True, self.reserve(job, vc, now)
        if self.settings.borrow_idle:
            self.borrow(vc, ctx)

    def reserve(self, head: JobView, vc: VCView, now: float) -> tuple[float, int]:
        """The head's reservation (shadow time, spare GPUs), from the running jobs' expected ends."""
        shadow, spare = reservation_in(self._ends.get(vc.name) or RunningOrder(), head.gpu_num, vc.free_gpus, now)
        return max(shadow, now), spare

    def report(self) -> dict[str, Any]:
        return {"estimator": self.estimator.name, "estimate_quality": self.quality.report()}
