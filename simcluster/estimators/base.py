"""Duration estimators: what an estimate-driven policy believes a job will take.

An estimator sees a job when it is submitted and learns only from jobs that
have finished in the simulation so far — no look-ahead at unfinished jobs
(the ``oracle`` is the deliberate exception, as an upper bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcluster.config import SimConfig
from simcluster.job import Job
from simcluster.registry import Registry


class Estimator:
    name: str = "?"

    def __init__(self, config: SimConfig) -> None:
        self.config = config

    def estimate(self, job: Job, now: float) -> float:
        """Estimated duration of ``job`` in seconds, at its submission."""
        raise NotImplementedError

    def observe(self, job: Job, now: float) -> None:
        """Learn from a job that just finished."""


ESTIMATORS: Registry[type[Estimator]] = Registry("estimator")


def make_estimator(config: SimConfig, default: str = "oracle") -> Estimator:
    """The estimator ``config.estimator`` names; ``auto`` means the policy's ``default``."""
    name = default if config.estimator == "auto" else config.estimator
    return ESTIMATORS.get(name)(config)


class EstimateQuality:
    """MAE and median relative error of estimates against true durations."""

    def __init__(self) -> None:
        self.estimates: list[float] = []
        self.truths: list[float] = []

    def record(self, estimate: float, job: Job) -> None:
        self.estimates.append(estimate)
        self.truths.append(job.duration)

    def report(self) -> dict[str, Any]:
        if not self.estimates:
            return {"jobs": 0}
        est, true = np.asarray(self.estimates), np.asarray(self.truths, dtype=float)
        error = np.abs(est - true)
        return {
            "jobs": len(est),
            "mae": float(error.mean()),
            "median_relative_error": float(np.median(error / np.maximum(true, 1.0))),
        }
