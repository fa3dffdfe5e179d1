"""A VC's running jobs as numpy columns, kept up to date by a policy's run hooks.

Some policies' keys move as jobs run (tiresias-gittins: a running job's Gittins index changes with its attained
service), so no kept order holds between passes and each pass that must rank the running jobs reads all of them.
Read one job at a time that is most of a large run; read as columns it is a few array operations per pass.
While a job runs its GPUs, busy time and the start of its run stay fixed (a new speed or a pause is a stop and a
start to the policy's hooks), so its attained service at ``now`` is ``gpus * (busy + (now - started))``, the
same float as :meth:`~simcluster.policies.tiresias.Tiresias.attained` computes.

Rows are in no particular order (a removed row takes the last one's place); callers rank them themselves.  Each
row also carries a time of the policy's own, ``until`` (-inf as the row is added): how long something the policy
worked out for that run still holds, so a pass redoes only the rows that are :meth:`~RunningColumns.due`.

>>> from simcluster.job import Job
>>> jobs = [Job(index=i, job_id=str(i), vc="v", gpu_num=g, submit_time=i, duration=10) for i, g in enumerate([4, 2])]
>>> columns = RunningColumns()
>>> for job in jobs:
...     job.run_started_at = 5.0
...     columns.add(job)
>>> columns.attained(15.0).tolist()
[40.0, 20.0]
>>> columns.until[:] = [100.0, 10.0]; columns.due(50.0).tolist()  # (row 1's note ran out at 10)
[1]
>>> columns.remove(jobs[0]); [job.job_id for job in columns.jobs], columns.gpus.tolist(), columns.held
(['1'], [2], 2)
>>> columns.until.tolist(), columns.run_at(0)  # (row 1 moved to row 0, its note too)
([10.0], (2, 0.0, 5.0))
"""

from __future__ import annotations

import numpy as np

from simcluster.job import Job


class RunningColumns:
    """Running jobs' GPUs, busy time before this run, start of this run, submit time and trace index, by row."""

    __slots__ = ("_busy", "_gpus", "_index", "_row_of", "_started", "_submit", "_until", "below_one", "held", "jobs")

    def __init__(self, capacity: int = 64) -> None:
        self.jobs: list[Job] = []
        self._row_of: dict[Job, int] = {}
        self._gpus = np.zeros(capacity, np.int64)
        self._busy = np.zeros(capacity)
        self._started = np.zeros(capacity)
        self._submit = np.zeros(capacity)
        self._index = np.zeros(capacity, np.int64)
        self._until = np.zeros(capacity)
        self.held = 0  # the GPUs the jobs hold, all together
        self.below_one = 0  # how many jobs hold fewer than one GPU (no attained service to divide by)

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
        self._submit[row], self._index[row], self._until[row] = job.submit_time, job.index, -np.inf
        self.held += job.gpu_num
        self.below_one += job.gpu_num < 1

    def remove(self, job: Job) -> None:
        """A job's run ended: the last row takes its place."""
        row, last = self._row_of.pop(job), len(self.jobs) - 1
        self.held -= int(self._gpus[row])  # (what it held as it started)
        self.below_one -= bool(self._gpus[row] < 1)
        moved = self.jobs.pop()
        if row != last:
            self.jobs[row] = moved
            self._row_of[moved] = row
            for column in (self._gpus, self._busy, self._started, self._submit, self._index, self._until):
                column[row] = column[last]

    def _grow(self) -> None:
        for name in ("_gpus", "_busy", "_started", "_submit", "_index", "_until"):
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

    @property
    def until(self) -> np.ndarray:
        """Per row, until when the policy's note on it holds (a view: the policy writes it)."""
        return self._until[:len(self.jobs)]

    def due(self, now: float) -> np.ndarray:
        """The rows whose note no longer holds at ``now`` (added since, or ran out), in row order."""
        return np.flatnonzero(self._until[:len(self.jobs)] <= now)

    def attained(self, now: float) -> np.ndarray:
        """Each job's attained service (GPUs × seconds held) at ``now``."""
        n = len(self.jobs)
        return self._gpus[:n] * (self._busy[:n] + (now - self._started[:n]))

    def run_at(self, row: int) -> tuple[int, float, float]:
        """(GPUs, busy time before this run, start of this run) of the job in ``row``."""
        return int(self._gpus[row]), float(self._busy[row]), float(self._started[row])
