"""Elastic jobs, resized while they run (Pollux, Optimus, ElasticFlow: docs/elastic.md): in play where the policy
is elastic (``Policy.elastic``).

Before the run each job gets its scaling model (:func:`~simcluster.elastic.work.attach_models`); while it runs
each job's GPU count is recorded (``allocations.csv``); ``jobs.csv`` gets the GPU-seconds each job held, its
resizes and its progress in its own unit, and ``summary.json`` the cluster efficiency.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.elastic import AllocationTimeline, cluster_efficiency, elastic_columns
from simcluster.settings.elastic import ElasticOptions

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class ElasticJobs(Feature):
    name = "elastic"
    settings = ElasticOptions

    def in_play(self, run: ResolvedRun) -> bool:
        return bool(run.policy.cls.elastic)

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        if run.trace is not None:  # (jobs made by hand come with their models)
            from simcluster.elastic.work import (
                attach_models,  # (scipy: only runs of elastic policies load it)
            )

            attach_models(run.trace, jobs, run.policy.name)
        return ElasticResults()


class ElasticResults(Contribution):
    def __init__(self) -> None:
        self.allocations = AllocationTimeline()
        self.observers = [self.allocations]

    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        return elastic_columns(jobs, ended.reported, ended.end)

    def run_figures(self, ended: Ended, jobs: pd.DataFrame, summary: dict[str, Any]) -> dict[str, Any]:
        return {"cluster_efficiency": cluster_efficiency(ended.reported, ended.gpus, float(summary["makespan"]))}

    def tables(self, ended: Ended) -> dict[str, pd.DataFrame]:
        return {"allocations": self.allocations.frame()}
