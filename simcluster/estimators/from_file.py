from __future__ import annotations

from pathlib import Path

import pandas as pd

from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.job import Job
from simcluster.traces.errors import TraceError
from simcluster.traces.side_files import read_side_csv, reject_first


def read_estimates(path: str | Path) -> dict[str, float]:
    """``job_id,priority`` → {job_id: estimated duration}, validated."""
    frame = read_side_csv(path, "estimates file", ("job_id", "priority"))
    values = pd.to_numeric(frame["priority"], errors="coerce")
    reject_first(path, frame, "priority", values.isna(), "not a number")
    return dict(zip(frame["job_id"], values.astype(float)))


@ESTIMATORS.register("file")
class FromFile(Estimator):
    """Estimates read from a ``job_id,priority`` CSV (``--estimates``), e.g. a model trained offline."""

    def __init__(self, config) -> None:
        super().__init__(config)
        if not config.estimates:
            raise TraceError("--estimates", "the file estimator needs --estimates PATH (job_id,priority CSV)")
        self.path = config.estimates
        self._values = read_estimates(config.estimates)

    def estimate(self, job: Job, now: float) -> float:
        try:
            return self._values[job.job_id]
        except KeyError:
            raise TraceError(self.path, f"no estimate for job {job.job_id!r}") from None
