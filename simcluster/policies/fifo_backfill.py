"""``fifo-backfill``: submit order, and every waiting job that fits starts (first-fit backfill).

What a batch scheduler does with no reservations at all: the queue is walked in submit order at every
scheduling instant and each job that can be placed now starts, so a large job at the head never blocks
the small ones behind it (it may starve instead).  Jobs run only in their own VC, unless
``borrow_idle`` lets a job that does not fit there take idle GPUs of another VC.

Written as a user would write a policy: it imports only :mod:`simcluster.sdk`.

>>> from simcluster.sdk import Policy
>>> issubclass(FifoBackfill, Policy), FifoBackfill.Settings().borrow_idle
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simcluster.sdk import ClusterView, JobView, Policy, SchedulingContext, VCView, register_policy, setting


@dataclass(frozen=True)
class BackfillSettings:
    borrow_idle: bool = setting(
        False, "A job that cannot be placed in its own VC may start on idle GPUs of another VC that has no "
        "waiting job they would fit (it keeps them until it ends: nothing gives them back early). Off: the "
        "artifacts' quota rule, jobs run only in their VC.")


def start_every_fitting(vc: VCView, ctx: SchedulingContext, jobs: Iterable[JobView]) -> None:
    """Try to start each of ``jobs`` (waiting in ``vc``, in the order given) that asks for no more GPUs than
    ``vc`` has idle; stop once none are idle."""
    for job in jobs:
        free = vc.free_gpus
        if not free:
            return
        if job.gpu_num <= free:
            ctx.try_start(job)


@register_policy("fifo-backfill")
class FifoBackfill(Policy):
    """Submit order; every waiting job that fits starts (first-fit backfill, no reservations).

    Each scheduling pass walks the VC's queue in submit order and starts every job that placement can
    place now; a job that cannot be placed blocks nobody.  Large jobs may starve behind a stream of
    small ones.  ``borrow_idle``: a job that cannot be placed in its VC may start on another VC's idle GPUs.
    """

    Settings = BackfillSettings

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._vcs: Mapping[str, VCView] = {}
        self._borrow_tried: dict[JobView, float] = {}  # job → the instant it last went to another VC

    def attach(self, cluster: ClusterView) -> None:
        self._vcs = cluster.vcs

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        start_every_fitting(vc, ctx, list(vc.pending))  # (a copy: a start removes the job from the live queue)
        if self.settings.borrow_idle:
            self.borrow(vc, ctx)

    def borrow(self, vc: VCView, ctx: SchedulingContext) -> None:
        """Send each job still waiting here to a VC whose idle GPUs, less what its own waiting jobs ask for,
        hold it (the one with the most such GPUs); that VC's pass, at this same instant, starts it.  A job sent
        away that could not be placed there comes home, and is not sent again at that instant."""
        now = ctx.now
        spare: dict[str, int] | None = None  # VC → idle GPUs its own waiting jobs do not ask for
        for job in list(vc.pending):
            if job.vc != vc.name:  # a borrower that did not start here: home again
                self.send(ctx, job, job.vc)
                continue
            if self._borrow_tried.get(job) == now:
                continue
            if spare is None:
                spare = {name: other.free_gpus - sum(j.gpu_num for j in other.pending)
                         for name, other in self._vcs.items() if name != vc.name}
            lender = max(spare, key=spare.__getitem__, default=None)
            if lender is not None and spare[lender] >= job.gpu_num:
                self._borrow_tried[job] = now
                spare[lender] -= job.gpu_num
                self.send(ctx, job, lender)

    def send(self, ctx: SchedulingContext, job: JobView, partition: str) -> None:
        """Move waiting ``job`` to ``partition``'s queue (a subclass that indexes its queues hears of it here)."""
        ctx.move(job, partition)

    def on_finish(self, job: JobView, now: float) -> None:
        self._borrow_tried.pop(job, None)
