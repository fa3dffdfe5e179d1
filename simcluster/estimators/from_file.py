from __future__ import annotations

from pathlib import Path

import pandas as pd

from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.job import Job
from simcluster.traces.errors import TraceError


def read_estimates(path: str | Path) -> dict[str, float]:
    """``job_id,priority`` → {job_id: estimated duration}, validated."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, "estimates file not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col in ("job_id", "priority"):
        if col not in frame.columns:
            raise TraceError(path, f"missing column {col!r}; found: {', '.join(frame.columns)}", line=1, field=col)
    values = pd.to_numeric(frame["priority"], errors="coerce")
    bad = values.isna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise TraceError(path, f"not a number: {frame['priority'][row]!r}", line=row + 2, field="priority")
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
