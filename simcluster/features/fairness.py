"""Finish-time fairness: each finished job's ρ, its JCT over the time it would have taken on its share of its VC
(:func:`~simcluster.metrics.fairness.finish_time_fairness`), in ``jobs.csv``; every run takes part (the summary's
``rho_*`` and ``jain_users`` figures are read from this column)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from simcluster.features.base import Contribution, Ended, Feature
from simcluster.metrics.fairness import finish_time_fairness

if TYPE_CHECKING:
    from simcluster.job import Job
    from simcluster.run.resolved import ResolvedRun


class Fairness(Feature):
    name = "fairness"

    def start(self, plan: Any, jobs: list[Job], run: ResolvedRun) -> Contribution:
        return FairnessColumn()


class FairnessColumn(Contribution):
    def columns(self, ended: Ended, jobs: pd.DataFrame) -> pd.DataFrame:
        jobs["rho"] = finish_time_fairness(jobs, ended.outcome.vc_gpus)
        return jobs
