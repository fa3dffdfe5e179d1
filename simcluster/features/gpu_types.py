"""Clusters of GPU types and traces of job types (docs/heterogeneous.md): in play where the cluster's GPUs have
types, the trace's jobs have types, or a throughput table times them.

While the run goes, each job's GPU-seconds on each type are counted (on a typed cluster); ``jobs.csv`` gets
each job's type, steps, weight, GPU fraction and migrations (and its seconds on each type), ``summary.json`` the
migrations, the GPU-seconds per type, the cluster and the throughput table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.gpu_types import TypeSeconds
from simcluster.settings.gpu_types import GpuTypeOptions

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class GpuTypes(Feature):
    name = "gpu_types"
    settings = GpuTypeOptions

    def in_play(self, run: ResolvedRun) -> bool:
        return run.cluster.typed or run.tables.throughputs is not None or (
            run.trace is not None and run.trace.heterogeneous)

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        return TypedResults(TypeSeconds(run.cluster.gpu_types) if run.cluster.typed else None)


class TypedResults(Contribution):
    def __init__(self, per_type: TypeSeconds | None) -> None:
        self.per_type = per_type
        self.observers = [per_type] if per_type is not None else []
        self.typed: dict[str, Any] = {}

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        run = ended.run
        if not (run.cluster.typed or (run.trace is not None and run.trace.heterogeneous)):
            return jobs
        jobs, self.typed = typed_columns(jobs, ended.done + ended.left, self.per_type, ended.end)
        self.typed["cluster"] = run.cluster.as_dict()
        return jobs

    def figures(self, ended: Ended, jobs: pd.DataFrame) -> dict[str, Any]:
        throughputs = ended.run.tables.throughputs
        return self.typed | ({"throughputs": throughputs.source} if throughputs is not None else {})


def typed_columns(frame: pd.DataFrame, jobs: list[Job], per_type: TypeSeconds | None,
                  now: float) -> tuple[pd.DataFrame, dict[str, Any]]:
    """jobs.csv's columns for traces of job types and clusters of GPU types, and the summary's figures."""
    rows = sorted(jobs, key=lambda j: j.index)
    frame = frame.copy()
    frame["job_type"] = [j.job_type for j in rows]
    frame["total_steps"] = [j.total_steps for j in rows]
    frame["steps_done"] = [j.progress * (j.speeds.rate if j.speeds is not None else 1.0) for j in rows]
    frame["priority_weight"] = [j.priority_weight for j in rows]
    frame["gpu_milli"] = [j.gpu_milli for j in rows]
    frame["migrations"] = [j.migrations for j in rows]
    figures: dict[str, Any] = {"migrations": int(sum(j.migrations for j in rows))}
    if per_type is not None:
        per_type.close_all(now)
        for gpu_type in per_type.types:
            frame[f"seconds_{gpu_type}"] = [per_type.of(j)[gpu_type] for j in rows]
        figures["gpu_seconds_per_type"] = dict(per_type.gpu_seconds)
    return frame, figures
