"""The scaling models an elastic run gives its jobs, built from the trace's own columns.

* A **Pollux workload** job (``application``, ``batch_size``) trains until it has made its application's
  statistical progress (:class:`PolluxWork`): its stages are the application's epochs, its rate the
  goodput of :meth:`~simcluster.elastic.pollux_apps.PolluxApp.goodput` on its layout and batch
  configuration (per-GPU batch, accumulation steps) with that epoch's gradient statistics.  Its default
  batch is its user's total batch split over its GPUs as the authors' simulator splits it.
* An **ElasticFlow trace** job (``model_name``, ``batch_size``, ``num_iteration``) runs its iterations
  at its global batch (:class:`ElasticFlowWork`): one stage, the rate the A100 table's for its GPU count
  (a count the table lacks is an error, never interpolated).

:func:`attach_models` gives every job of a run its :class:`~simcluster.elastic.state.ElasticState`.

>>> from simcluster.paths import shared_data_dir
>>> from simcluster.elastic.pollux_apps import load_pollux_apps
>>> apps = load_pollux_apps(shared_data_dir() / "pollux" / "apps")   # doctest: +SKIP
>>> work = PolluxWork(apps["cifar10"], 2048)                          # doctest: +SKIP
>>> work.default_batch((4, 2)), work.last_stage()                     # doctest: +SKIP
((342, 0), 99)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simcluster.elastic.elasticflow_model import ElasticFlowThroughputs, load_elasticflow_throughputs
from simcluster.elastic.pollux_apps import OutOfMeasuredRange, PolluxApp
from simcluster.elastic.state import ElasticState, Layout

if TYPE_CHECKING:  # pragma: no cover
    from simcluster.job import Job
    from simcluster.traces.base import Trace

POLLUX_COLUMNS = ("application", "batch_size")
ELASTICFLOW_COLUMNS = ("model_name", "batch_size", "num_iteration")


class NotElastic(ValueError):
    """An elastic policy was given a trace whose jobs have no scaling model."""


@dataclass(eq=False)
class PolluxWork:
    """A Pollux application's job (see the module's docstring); ``batch`` configurations are (per-GPU batch,
    accumulation steps)."""

    app: PolluxApp
    target_batch: int  # the total batch its user asked for
    unit: str = "statistical progress"
    _base: dict[int, float] = field(default_factory=dict, repr=False)

    @property
    def total(self) -> float:  # type: ignore[override]
        return self.app.total_progress

    def stage_end(self, stage: int) -> float:
        return self.app.epoch_progress(stage + 1)

    def last_stage(self) -> int:
        return self.app.max_epochs - 1

    def rate(self, layout: Layout, batch: Any, stage: int) -> float:
        atomic, accum = batch
        return self.app.goodput(layout, atomic, accum, stage)

    def default_batch(self, layout: Layout) -> tuple[int, int]:
        return self.app.fixed_batch(self.target_batch, sum(layout))

    def speedup(self, layout: Layout, batch: Any, stage: int) -> float:
        base = self._base.get(stage)
        if base is None:
            try:
                base = self._base[stage] = self.rate((1,), self.default_batch((1,)), stage)
            except OutOfMeasuredRange:
                base = self._base[stage] = math.nan
        return float(sum(layout)) if math.isnan(base) else self.rate(layout, batch, stage) / base


@dataclass(eq=False)
class ElasticFlowWork:
    """An ElasticFlow trace's job (see the module's docstring); its batch is its global batch, fixed."""

    table: ElasticFlowThroughputs
    model_name: str
    batch: int
    total: float  # iterations
    unit: str = "iterations"

    def stage_end(self, stage: int) -> float:
        return self.total

    def last_stage(self) -> int:
        return 0

    def rate(self, layout: Layout, batch: Any, stage: int) -> float:
        return self.table.rate(self.model_name, self.batch, sum(layout))

    def default_batch(self, layout: Layout) -> int:
        return self.batch

    def speedup(self, layout: Layout, batch: Any, stage: int) -> float:
        smallest = self.table.levels(self.model_name, self.batch)[0]
        return self.rate(layout, batch, stage) / self.table.rate(self.model_name, self.batch, smallest) * smallest


def attach_models(trace: Trace, jobs: list[Job], policy: str) -> None:
    """Give each of ``jobs`` (made from ``trace``, in its rows' order) its elastic state, or raise
    :class:`NotElastic` naming the trace and what it lacks."""
    frame = trace.frame
    if all(c in frame for c in POLLUX_COLUMNS) and trace.format == "pollux":
        from simcluster.traces.pollux import apps_beside, cached_apps

        apps = cached_apps(str(apps_beside(Path(trace.source)).resolve()))
        works: dict[tuple[str, int], PolluxWork] = {}
        for job, app, batch in zip(jobs, frame["application"].tolist(), frame["batch_size"].tolist(), strict=True):
            work = works.get((app, batch))
            if work is None:
                work = works[app, batch] = PolluxWork(apps[app], int(batch))
            _attach(job, work)
        return
    if all(c in frame for c in ELASTICFLOW_COLUMNS) and trace.format == "elasticflow":
        from simcluster.traces.elasticflow import throughputs_beside

        table = _elasticflow_table(str(throughputs_beside(Path(trace.source)).resolve()))
        for job, model, batch, iterations in zip(jobs, frame["model_name"].tolist(), frame["batch_size"].tolist(),
                                                 frame["num_iteration"].tolist(), strict=True):
            _attach(job, ElasticFlowWork(table, str(model), int(batch), float(iterations)))
        return
    raise NotElastic(f"policy {policy} resizes jobs while they run, so it needs jobs with scaling models: Pollux's "
                     "workloads (columns name,time,application,num_replicas,batch_size) or ElasticFlow's traces "
                     f"(…,num_iteration,model_name,deadline,batch_size,…); {trace.source} is a {trace.format} trace")


def pollux_work(job: Job, policy: str) -> PolluxWork:
    """The job's Pollux application model, or :class:`NotElastic` saying that ``policy`` needs one."""
    work = job.elastic.model if job.elastic is not None else None
    if isinstance(work, PolluxWork):
        return work
    raise NotElastic(f"{policy} needs jobs of Pollux's applications (a Pollux workload); job {job.job_id} is not one")


def _attach(job: Job, work: Any) -> None:
    if job.duration <= 0:
        raise NotElastic(f"job {job.job_id} has no duration: an elastic job's work needs one to be counted in")
    job.elastic = ElasticState(work, work.total / job.duration, work.default_batch((job.gpu_num,)), job.gpu_num)


@functools.lru_cache(maxsize=2)
def _elasticflow_table(folder: str) -> ElasticFlowThroughputs:
    return load_elasticflow_throughputs(folder)
