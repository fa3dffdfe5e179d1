from __future__ import annotations

from pathlib import Path

import pandas as pd

from simcluster.errors import TraceError
from simcluster.estimators.base import ESTIMATORS, Estimator
from simcluster.job import Job
from simcluster.side_files import read_side_csv, reject_first


def read_estimates(path: str | Path) -> dict[str, float]:
    """``job_id,priority`` → {job_id: estimated duration}, validated."""
    frame = read_side_csv(path, "estimates file", ("job_id", "priority"))
    values = pd.to_numeric(frame["priority"], errors="coerce")
    reject_first(path, frame, "priority", values.isna(), "not a number")
    return dict(zip(frame["job_id"], values.astype(float)))


def read_job_order(path: str | Path) -> dict[str, int]:
    """{job_id: position of its first row} of a CSV with a ``job_id`` column (e.g. a simulator's per-job log)."""
    frame = read_side_csv(path, "job order file", ("job_id",))
    order: dict[str, int] = {}
    for position, job_id in enumerate(frame["job_id"]):
        order.setdefault(job_id, position)
    return order


class TieOrder:
    """The rank that breaks ties between equal priorities: trace order, or the order of a ``--tie-order`` file.

    The Helios and Lucid artifacts load a trace with pandas' default (unstable) sort, which reorders the
    jobs submitted in the same second in a way that depends on numpy's version and the CPU; their per-job
    logs keep the order they ended up with, so such a log reproduces it.  Jobs the file lacks come after
    those it lists, in trace order.

    >>> TieOrder(None).rank(Job(index=7, job_id="a", vc="v", gpu_num=1, submit_time=0, duration=1))
    7
    """

    def __init__(self, path: str | Path | None) -> None:
        self._order = read_job_order(path) if path else None

    def rank(self, job: Job) -> int:
        if self._order is None:
            return job.index
        position = self._order.get(job.job_id)
        return position if position is not None else len(self._order) + job.index


@ESTIMATORS.register("file")
class FromFile(Estimator):
    """Estimates read from a ``job_id,priority`` CSV (``--estimates``), e.g. a model trained offline.

    ``--negative-estimates`` replaces estimates below zero (a regressor's extrapolation) by a
    fixed value, as the Lucid artifact does with its EBM estimates (1000 s).
    """

    def __init__(self, config) -> None:
        super().__init__(config)
        if not config.estimates:
            raise TraceError("--estimates", "the file estimator needs --estimates PATH (job_id,priority CSV)")
        self.path = config.estimates
        self._values = read_estimates(config.estimates)
        if config.negative_estimates is not None:
            floor = float(config.negative_estimates)
            self._values = {k: (floor if v < 0 else v) for k, v in self._values.items()}

    def estimate(self, job: Job, now: float) -> float:
        try:
            return self._values[job.job_id]
        except KeyError:
            raise TraceError(self.path, f"no estimate for job {job.job_id!r}") from None
