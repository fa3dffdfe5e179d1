"""Pollux (OSDI'21): goodput-adaptive co-scheduling — every job's GPUs and batch size chosen together.

Each job's agent models its *goodput* (throughput × statistical efficiency,
:mod:`simcluster.elastic.goodput`) from the configurations it has run on and picks the batch size and
gradient accumulation that maximise it on whatever GPUs it holds, again at every epoch; the scheduler,
every interval, gives every job its GPUs at once so as to maximise the generalised mean of the jobs'
speedups with a penalty on re-allocation (:mod:`simcluster.elastic.pollux_alloc`).  The cores are plain
functions, tested against the artifact's own; this module drives them from the engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simcluster.elastic.pollux_alloc import AllocJob, optimize_allocation, restart_factor
from simcluster.elastic.pollux_job import PolluxJobModel
from simcluster.elastic.work import pollux_work
from simcluster.sdk import (
    IntervalPolicy,
    JobView,
    Plan,
    VCView,
    holds_exactly,
    layout_of,
    register_policy,
    setting,
)

NCF_BATCH = 32768  # the artifact runs ncf at this fixed total batch, on one GPU at most (simulator.py)


@dataclass(frozen=True)
class PolluxSettings:
    true_model: bool = setting(False, "Give the scheduler and the agents each job's measured goodput (the "
                               "application's step times and gradient statistics) instead of the model each agent "
                               "learns online from the configurations its job ran on.")
    fairness: float = setting(-1.0, "p of the generalised mean of speedups that the allocation maximises (-1: "
                              "harmonic, Pollux's; lower: fairer; 0 is not supported).")


@register_policy("pollux")
class Pollux(IntervalPolicy):
    """Pollux: each job's GPUs and batch size chosen together to maximise goodput, every interval.

    Every ``--schedule-interval`` (60 s), the allocation maximising the generalised mean (p = ``fairness``,
    -1) of the jobs' speedups over a fair share, each speedup scaled by the job's restart factor where its
    GPUs change (the share of its life not lost to restarts), under Pollux's constraints: GPUs per node, one
    multi-node job per node, at most 16 nodes a job, and each job at most twice the GPUs it has been measured
    on (at most 64).  Found exactly by a dynamic programme over GPU counts, then packed (deterministic; Pollux
    itself runs an unseeded genetic search).  Each job's agent refits its throughput model on every new
    configuration it runs on (``true_model``: the measurements instead) and picks the batch size and
    accumulation steps with the most goodput on its GPUs, at every interval and every epoch's end.  ncf runs
    at a fixed batch of 32,768 on one GPU, as in the artifact.  Every start or move pays ``--restart-delay``
    (30 s).  Needs a Pollux workload; ``--preset pollux-artifact`` adds the artifact's timing (decisions only
    at interval ends, epochs ending on whole seconds).
    """

    Settings = PolluxSettings

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        if self.settings.fairness == 0:
            raise ValueError("pollux: fairness 0 (the geometric mean) is not supported; give p < 0 or p > 0")
        self._models: dict[JobView, PolluxJobModel] = {}
        self._seen: dict[JobView, int] = {}  # segments of each job its agent has observed
        self._allocations: dict[JobView, int] = {}  # allocations each job has had (its restarts: one less)

    def allocate(self, vc: VCView, jobs: list[JobView], now: float) -> tuple[dict[JobView, Plan], dict[JobView, Any]]:
        models = {job: self._model(job, now) for job in jobs}
        node_gpus = list(self.node_gpus(vc).values())
        fair = (1, math.ceil(sum(node_gpus) / len(jobs)))  # a fair share: base of every speedup
        per_node = max(node_gpus, default=1)
        order = sorted(jobs, key=lambda j: (j.elastic.gpu_seconds_at(now), j.submit_time))  # type: ignore[union-attr]
        position = {id(node): i for i, node in enumerate(vc.nodes)}
        alloc_jobs = []
        for job in order:
            model = models[job]
            current = [0] * len(node_gpus)
            for node, ids in job.allocation:
                current[position[id(node)]] += len(ids)
            restarts = max(0, self._allocations.get(job, 0) - 1)
            alloc_jobs.append(AllocJob(job.job_id, model.speedup_fn(fair, per_node), model.max_replicas(),
                                       restart_factor=restart_factor(now - job.submit_time, restarts),
                                       current=tuple(current) if job.allocation else ()))
        rows = optimize_allocation(alloc_jobs, node_gpus, p=self.settings.fairness)
        plans: dict[JobView, Plan] = {}
        batches: dict[JobView, Any] = {}
        for job, row in zip(order, rows, strict=True):
            plan: Plan = [(vc.nodes[i], count) for i, count in enumerate(row) if count]
            if not plan:
                continue
            kept = bool(job.allocation) and holds_exactly(job, plan)
            if not kept:
                self._allocations[job] = self._allocations.get(job, 0) + 1
            plans[job] = plan
            layout = job.elastic.layout if kept else layout_of(plan)  # type: ignore[union-attr]
            batches[job] = models[job].choose_batch(layout)
        return plans, batches

    def on_epoch(self, job: JobView, now: float) -> Any:
        """The agent picks its batch again for the next epoch, with what it has seen so far."""
        return self._model(job, now).choose_batch(job.elastic.layout)  # type: ignore[union-attr]

    def on_finish(self, job: JobView, now: float) -> None:
        for kept in (self._models, self._seen, self._allocations):
            kept.pop(job, None)  # type: ignore[attr-defined]

    def _model(self, job: JobView, now: float) -> PolluxJobModel:
        """The job's agent's model, with every configuration the job has run on since it last looked."""
        app = pollux_work(job, "pollux").app
        elastic = job.elastic
        assert elastic is not None
        model = self._models.get(job)
        if model is None:
            ncf = app.name == "ncf"
            model = self._models[job] = PolluxJobModel(app, true_model=self.settings.true_model,
                                                       fixed_batch=NCF_BATCH if ncf else None,
                                                       replica_cap=1 if ncf else None)
        segments = elastic.segments
        for i in range(self._seen.get(job, 0), len(segments)):
            segment = segments[i]
            if not segment.measured(now):  # the job never ran on it past its restart: nothing measured
                if segment.end is None:
                    break  # (not yet)
                self._seen[job] = i + 1
                continue
            atomic, accum = segment.batch
            step, sync = app.step_times(segment.layout, atomic)
            sqr, var = app.grad_stats(sum(segment.layout) * atomic * (accum + 1), segment.stage)
            model.observe(segment.layout, atomic, step, sync, sqr, var)
            self._seen[job] = i + 1
        model.epoch = elastic.stage
        return model
