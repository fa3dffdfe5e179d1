"""The interval mechanism of Pollux's simulator, as a policy base: every job's GPUs decided at once, each
``--schedule-interval`` seconds (and, by default, at once when a job arrives or finishes).

The intervals are the multiples of ``--schedule-interval`` on the trace's clock.  With ``--arrivals-wait``
the policy decides only there, as Pollux's simulator does (a job submitted at t waits for the first
multiple at or after t, and never before the first interval's end; GPUs a finished job frees stay idle
until the next one); by default it also decides at the instant a job arrives or finishes.  A subclass
says what each job gets (:meth:`IntervalPolicy.allocate`); :func:`~simcluster.policies.allocations.apply_allocations`
carries it out.  No timer is left once the VC has no jobs, so a run ends when its last job does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from simcluster.placement.base import Plan
from simcluster.policies.allocations import apply_allocations
from simcluster.policies.base import Policy, SchedulingContext
from simcluster.views import JobView, VCView

INTERVAL_SETTINGS = frozenset({"schedule_interval", "arrivals_wait", "restart_delay", "progress_rounding"})


class IntervalPolicy(Policy):
    """Decides every job's GPUs each interval (see the module's docstring)."""

    elastic = True
    priority_first = False  # (it allocates by its own model: the trace's priorities do not order it)
    preemptive = True
    own_placement = "its own allocation"  # (the --placement setting is not read)
    reads: ClassVar[frozenset[str]] = INTERVAL_SETTINGS

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._decided: dict[str, float] = {}  # per VC, the interval's end it last decided at

    def schedule(self, vc: VCView, ctx: SchedulingContext) -> None:
        now, interval = ctx.now, self.config.schedule_interval
        if not len(vc.pending) and not vc.running:
            return
        if self.config.arrivals_wait:
            tick = max(interval, math.ceil(now / interval) * interval)
            if now != tick or self._decided.get(vc.name) == now:  # (once per interval's end)
                if now != tick:
                    ctx.wake_at(tick)
                return
            self._decided[vc.name] = now
        jobs = sorted([*vc.pending, *vc.running], key=lambda j: (j.submit_time, j.index))
        found = self.allocate(vc, jobs, now)
        plans, batches = (found, {}) if isinstance(found, Mapping) else found  # {job: plan}, or (plans, batches)
        apply_allocations(ctx, vc, plans, batches)
        if len(vc.pending) or vc.running:
            ctx.wake_at((math.floor(now / interval) + 1) * interval)

    def allocate(self, vc: VCView, jobs: list[JobView], now: float
                 ) -> Mapping[JobView, Plan] | tuple[Mapping[JobView, Plan], Mapping[JobView, Any]]:
        """Every job's plan, ``{job: plan}`` (absent or empty: no GPUs), for the active ``jobs`` of ``vc`` in
        submission order; or ``(plans, batches)`` to also give jobs a batch (absent: its user's)."""
        raise NotImplementedError

    @staticmethod
    def node_gpus(vc: VCView) -> dict[int, int]:
        """GPUs per node (its position in the VC) as the policies count them: a node that is down has none."""
        return {node.index: node.gpu_count if node.up else 0 for node in vc.nodes}
