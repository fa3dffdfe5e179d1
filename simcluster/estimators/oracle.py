from __future__ import annotations

from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.job import Job


@ESTIMATORS.register("oracle")
class Oracle(Estimator):
    """The true duration (an upper bound on what any estimator can do)."""

    def estimate(self, job: Job, now: float) -> float:
        return float(job.duration)
