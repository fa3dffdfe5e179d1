"""A VC's running jobs as numpy columns, kept up to date by a policy's run hooks.

Some policies' keys move as jobs run (tiresias-gittins: a running job's Gittins index changes with its attained
service), so no kept order holds between passes and each pass that must rank the running jobs reads all of them.
Read one job at a time that is most of a large run; read as columns it is a few array operations per pass.
While a job runs its GPUs, busy time and the start of its run stay fixed (a new speed or a pause is a stop and a
start to the policy's hooks), so its attained service at ``now`` is ``gpus * (busy + (now - started))``, the
same float as :meth:`~simcluster.policies.tiresias.Tiresias.attained` computes.

Rows are in no particular order (a removed row takes the last one's place); callers rank them themselves.

>>> from simcluster.job import Job
>>> jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=g, submit_time=i, duration=10) for i, g in enumerate([4, 2])]
>>> columns = RunningColumns()
>>> for job in jobs:
...     job.run_started_at = 5.0
...     columns.add(job)
>>> columns.attained(15.0).tolist()
[40.0, 20.0]
>>> columns.remove(jobs[0]); [job.job_id for job in columns.jobs], columns.gpus.tolist(), columns.held
(['1'], [2], 2)
"""

from __future__ import annotations

import numpy as np

from simcluster.job import Job


class RunningColumns:
    """Running jobs' GPUs, busy time before this run, start of this run, submit time and trace index, by row."""

    __slots__ = ("_busy", "_gpus", "_index", "_row_of", "_started", "_submit", "held", "jobs")

    def __init__(self, capacity: int = 64) -> None:
        self.jobs: list[Job] = []
        self._row_of: dict[Job, int] = {}
        self._gpus = np.zeros(capacity, np.int64)
        self._busy = np.zeros(capacity)
        self._started = np.zeros(capacity)
        self._submit = np.zeros(capacity)
        self._index = np.zeros(capacity, np.int64)
        self.held = 0  # the GPUs the jobs hold, all together

    def __len__(self) -> int:
        return len(self.jobs)

    def add(self, job: Job) -> None:
        """A job started a run (its busy time and run start as they are now)."""
        row = len(self.jobs)
        if row == len(self._gpus):
            self._grow()
        self.jobs.append(job)
        self._row_of[job] = row
        self._gpus[row], self._busy[row], self._started[row] = job.gpu_num, job.busy_time, job.run_started_at
        self._submit[row], self._index[row] = job.submit_time, job.index
        self.held += job.gpu_num

    def remove(self, job: Job) -> None:
        """A job's run ended: the last row takes its place."""
        row, last = self._row_of.pop(job), len(self.jobs) - 1
        self.held -= int(self._gpus[row])  # (what it held as it started)
        moved = self.jobs.pop()
        if row != last:
            self.jobs[row] = moved
            self._row_of[moved] = row
            for column in (self._gpus, self._busy, self._started, self._submit, self._index):
                column[row] = column[last]

    def _grow(self) -> None:
        for name in ("_gpus", "_busy", "_started", "_submit", "_index"):
            column = getattr(self, name)
            wider = np.zeros(2 * len(column), column.dtype)
            wider[:len(column)] = column
            setattr(self, name, wider)

    @property
    def gpus(self) -> np.ndarray:
        return self._gpus[:len(self.jobs)]

    @property
    def submit(self) -> np.ndarray:
        return self._submit[:len(self.jobs)]

    @property
    def index(self) -> np.ndarray:
        return self._index[:len(self.jobs)]

    def attained(self, now: float) -> np.ndarray:
        """Each job's attained service (GPUs × seconds held) at ``now``."""
        n = len(self.jobs)
        return self._gpus[:n] * (self._busy[:n] + (now - self._started[:n]))
