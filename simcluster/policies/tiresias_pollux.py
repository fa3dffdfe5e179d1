"""Tiresias as Pollux's simulator runs it (OSDI'21 artifact, ``tiresias.py``): two queues, fixed-size jobs.

A baseline of the Pollux paper: each job runs on the GPUs its user asked for, at its user's batch, and
is preempted or resumed whole; only the queue order is Tiresias'.  It runs on the same elastic engine
as ``pollux`` — progress in statistical units at the measured goodput, a restart delay at every start —
so that the three policies of the paper are compared on one footing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simcluster.elastic.pollux_baselines import TiresiasTwoQueue
from simcluster.sdk import (
    IntervalPolicy,
    JobView,
    Plan,
    VCView,
    nodes_of,
    plan_of_nodes,
    register_policy,
    setting,
)


@dataclass(frozen=True)
class TiresiasPolluxSettings:
    queue_threshold: float = setting(57600.0, "GPU-seconds of service after which a job leaves the first queue "
                                     "(Pollux's simulator: 16 GPU-hours).", above=0)


@register_policy("tiresias-pollux")
class TiresiasPollux(IntervalPolicy):
    """Two-queue Tiresias of Pollux's simulator: fixed-size jobs, demotion after 16 GPU-hours, every interval.

    Every ``--schedule-interval`` (60 s) it takes the jobs in its two queues in order (first come, first served
    within each; no starvation guard), runs each one that still fits in the cluster's free GPU count at the
    GPUs and batch its user asked for, and preempts the others; a job moves to the second queue once its GPUs
    × its running time reach ``queue_threshold`` (counted in whole seconds, as the artifact does).  New jobs go
    on the nodes with the most free GPUs.  Every start pays ``--restart-delay`` (30 s).  Jobs need scaling
    models (a Pollux workload or an ElasticFlow trace); ``--preset pollux-artifact`` reproduces the artifact's
    runs job for job.
    """

    Settings = TiresiasPolluxSettings

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._queues: dict[str, TiresiasTwoQueue] = {}

    def allocate(self, vc: VCView, jobs: list[JobView], now: float) -> tuple[dict[JobView, Plan], dict[JobView, Any]]:
        queues = self._queues.get(vc.name)
        if queues is None:
            queues = self._queues[vc.name] = TiresiasTwoQueue(queue_threshold=self.settings.queue_threshold)
        by_key = {job.job_id: job for job in jobs}
        requests = {job.job_id: job.elastic.requested for job in jobs}  # type: ignore[union-attr]
        previous = {job.job_id: nodes_of(job) for job in jobs if job.allocation}
        allocations = queues.allocate(now, requests, self.node_gpus(vc), previous)
        return {by_key[key]: plan_of_nodes(vc, nodes) for key, nodes in allocations.items() if nodes}, {}
