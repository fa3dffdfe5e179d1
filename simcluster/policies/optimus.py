"""Optimus+Oracle as Pollux's simulator runs it (OSDI'21 artifact, ``optimus.py``), a baseline of the paper.

Optimus (EuroSys'18) gives GPUs where they cut a job's remaining time most; the *oracle* is that the
remaining time is read from the measurements (the iterations left at the job's batch, the measured step
times) instead of being fitted online.  Jobs keep their user's total batch; only their GPU counts change.
"""

from __future__ import annotations

from typing import Any

from simcluster.elastic.pollux_baselines import OptimusJob, optimus_allocate
from simcluster.elastic.work import pollux_work
from simcluster.sdk import IntervalPolicy, JobView, Plan, VCView, nodes_of, plan_of_nodes, register_policy


@register_policy("optimus")
class Optimus(IntervalPolicy):
    """Optimus+Oracle of Pollux's simulator: GPUs by the greatest cut in remaining time, every interval.

    Every ``--schedule-interval`` (60 s) each active job gets one GPU (in submission order, while GPUs last),
    then GPUs go one at a time to the job whose remaining time — its measured step time at its user's total
    batch (placed four GPUs a node) times the iterations it has left (the oracle) — falls most from one more,
    up to its batch ÷ its smallest per-GPU batch.  A job whose count is unchanged keeps its GPUs; the others
    are placed smallest first, each GPU on the node with the most free GPUs.  Every start or move pays
    ``--restart-delay`` (30 s).  Needs a Pollux workload; ``--preset pollux-artifact`` reproduces the
    artifact's runs job for job.
    """

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self._jobs: dict[JobView, OptimusJob] = {}

    def allocate(self, vc: VCView, jobs: list[JobView], now: float) -> tuple[dict[JobView, Plan], dict[JobView, Any]]:
        by_key = {job.job_id: job for job in jobs}
        infos = {job.job_id: self._info(job) for job in jobs}
        previous = {job.job_id: nodes_of(job) for job in jobs if job.allocation}
        allocations = optimus_allocate(infos, self.node_gpus(vc), previous)
        return {by_key[key]: plan_of_nodes(vc, nodes) for key, nodes in allocations.items() if nodes}, {}

    def _info(self, job: JobView) -> OptimusJob:
        work = pollux_work(job, "optimus")
        info = self._jobs.get(job)
        if info is None:
            app = work.app
            cap = 1 if app.name == "ncf" else work.target_batch // app.min_local_bsz
            info = self._jobs[job] = OptimusJob(app, work.target_batch, 0, cap)
        info.epoch = job.elastic.stage  # type: ignore[union-attr]
        return info

    def on_finish(self, job: JobView, now: float) -> None:
        self._jobs.pop(job, None)
